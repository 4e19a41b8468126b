"""The client configuration a real cluster needs (security protocol, SASL, TLS, any librdkafka property).

``kstate audit`` builds one from a properties file, shortcut options and ``-X key=value`` settings, checks it
against the broker before any work (:func:`check_reachable`), and hands it to every client it creates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kstate.errors import KStateError


class ClientConfigError(KStateError):
    """A client configuration that cannot be read or that librdkafka refuses; names the file or property."""


class BrokerUnreachableError(KStateError):
    """No broker answered at the bootstrap address, or the topic is not there; names the address."""


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java-style properties file: ``key=value`` or ``key: value`` lines, ``#`` and ``!`` comments."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ClientConfigError(f"client config file {path}: {exc.strerror or exc}") from exc
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        separators = [i for i in (line.find("="), line.find(":")) if i > 0]
        if not separators:
            raise ClientConfigError(f"client config file {path}, line {number}: expected key=value, got {line!r}")
        cut = min(separators)
        out[line[:cut].strip()] = line[cut + 1 :].strip()
    return out


def parse_settings(items: Iterable[str]) -> dict[str, str]:
    """``-X key=value`` settings, in order (a later one wins)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ClientConfigError(f"-X {item!r}: expected key=value (a librdkafka property)")
        out[key.strip()] = value
    return out


def build_client_config(*, file: str | Path | None = None, shortcuts: Mapping[str, str | None] | None = None,
                        settings: Iterable[str] = ()) -> dict[str, str]:
    """The file's properties, then the shortcut options given, then ``-X`` settings: the most specific wins."""
    config = read_properties(file) if file else {}
    config.update({k: v for k, v in (shortcuts or {}).items() if v is not None})
    config.update(parse_settings(settings))
    if "bootstrap.servers" in config:
        raise ClientConfigError("bootstrap.servers comes from --bootstrap, not from the client configuration")
    return config


def check_reachable(bootstrap: str, config: Mapping[str, Any], topic: str, timeout: float) -> list[int]:
    """The partitions of ``topic``, asked of the broker with ``config``; a clear error if no broker answers
    within ``timeout`` seconds, librdkafka refuses the configuration, or the topic does not exist."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    # librdkafka's own log lines (one per failed connect, many a second) would bury the one-line error.
    logger = logging.getLogger("kstate.kafka.client_check")
    logger.propagate = False
    logger.handlers[:] = [logging.NullHandler()]
    client: dict[str, Any] = {**config, "bootstrap.servers": bootstrap, "logger": logger}
    try:
        admin = AdminClient(client)
    except (KafkaException, ValueError, TypeError) as exc:
        given = ", ".join(sorted(config)) or "none"
        raise ClientConfigError(f"the client configuration is refused: {_kafka_message(exc)} "
                                f"(properties given: {given})") from None
    started = time.monotonic()
    try:
        metadata = admin.list_topics(topic, timeout=timeout)
    except KafkaException as exc:
        raise BrokerUnreachableError(
            f"no broker answered at {bootstrap} within {time.monotonic() - started:.0f} s ({_kafka_message(exc)}); "
            "check the address and the security settings (--security-protocol, SASL, TLS, -X)") from None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        reason = f" ({found.error.str()})" if found is not None and found.error is not None else ""
        raise BrokerUnreachableError(f"the broker at {bootstrap} has no topic {topic}{reason}")
    return sorted(found.partitions)


def partition_offsets(bootstrap: str, config: Mapping[str, Any], topic: str, partitions: list[int],
                      timeout: float = 15.0) -> dict[int, tuple[int, int]]:
    """Each partition's log-start and end offsets (ListOffsets earliest and latest): a log-start above 0 means
    records were deleted below it (retention, compaction of a delete policy, DeleteRecords); equal offsets an empty
    partition. Offsets need not count records (compaction, transaction markers)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({**config, "bootstrap.servers": bootstrap, "group.id": "kstate-audit-offsets",
                         "enable.auto.commit": False})
    try:
        return {p: tuple(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout))  # type: ignore[misc]
                for p in partitions}
    except KafkaException as exc:
        raise BrokerUnreachableError(f"the broker at {bootstrap} did not give the offsets of {topic}: "
                                     f"{_kafka_message(exc)}") from None
    finally:
        consumer.close()


def _kafka_message(exc: BaseException) -> str:
    error = exc.args[0] if exc.args else exc
    text = getattr(error, "str", None)
    return str(text()) if callable(text) else str(error)
