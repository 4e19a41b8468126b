"""An application to try the operator's tools on: ``kstate instance run`` and ``kstate demo`` (issue 34).

:func:`run_application` creates an application's topics (input and changelog with Kafka Streams' configuration for
the store type, CL-15), feeds it input, runs one instance that owns every partition until it has committed all of
it, and stops it cleanly, leaving its state directory for ``kstate inspect`` and ``kstate audit``. The instance is
Kafka Streams (``instances/kafka-streams/run``, INST-1) or the reference; the system tests start the same Kafka
Streams instance through :func:`kstate.app.kafka_streams.kafka_streams_instance`.
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kstate.app.cluster import AppCluster
from kstate.app.kafka_streams import KAFKA_STREAMS_VERSION, kafka_streams_instance
from kstate.app.process import InstanceCommand
from kstate.app.processors import processor_class
from kstate.codecs.store_types import StoreType
from kstate.errors import KStateError
from kstate.kafka.broker import Broker


def demo_store_options(store_type: StoreType) -> dict[str, Any]:
    """The store configuration the demo runs ``store_type`` with: its family's processor's (``DEMO_STORE_OPTIONS``,
    :mod:`kstate.app.processors`). The audit must be told the same (the directory does not record it), so
    :func:`audit_options` derives its options from it."""
    return dict(processor_class(store_type).DEMO_STORE_OPTIONS)


def demo_processor_options(store_type: StoreType) -> dict[str, int]:
    """The processor options the demo runs ``store_type``'s family's processor with (``DEMO_PROCESSOR_OPTIONS``)."""
    return dict(processor_class(store_type).DEMO_PROCESSOR_OPTIONS)


def instance_command(name: str, kafka_version: str = KAFKA_STREAMS_VERSION) -> InstanceCommand:
    """``kafka-streams``, ``reference`` or an instance command line (INST-1)."""
    if name == "kafka-streams":
        return kafka_streams_instance(kafka_version)
    if name == "reference":
        return InstanceCommand.reference()
    return InstanceCommand.from_command_line(name)


def demo_application_id(store_type: StoreType) -> str:
    return "demo-" + store_type.value.replace("_", "-")


def audit_options(store_type: StoreType) -> list[str]:
    """The store configuration ``kstate audit`` must be given for a demo store of ``store_type``."""
    options = demo_store_options(store_type)
    if "history_retention_ms" in options:
        return ["--history-retention-ms", str(options["history_retention_ms"])]
    if "retention_ms" in options:
        return ["--retention-ms", str(options["retention_ms"])]
    return []


@dataclass(frozen=True)
class RanApplication:
    """An application :func:`run_application` ran: where its state is and what it processed."""

    application_id: str
    store_name: str
    store_type: StoreType
    state_dir: Path
    input_records: int
    changelog_topic: str
    implementation: str


def run_application(broker: Broker, root: Path, *, application_id: str, store_name: str, store_type: StoreType,
                    state_dir: Path, command: InstanceCommand, partitions: int = 2, records: int = 1000,
                    keys: int = 100, seed: int = 34, timeout: float = 180.0) -> RanApplication:
    """Create the topics, produce ``records`` input records (every 13th a tombstone) over ``keys`` keys, run one
    instance of ``command`` owning every partition until it committed the whole input, and stop it cleanly."""
    command.require(store_types=[store_type])
    cluster = AppCluster(broker, root, application_id=application_id, store_name=store_name, store_type=store_type,
                         partitions=partitions, store_options=demo_store_options(store_type),
                         processor_options=demo_processor_options(store_type), instance_command=command)
    try:
        cluster.produce_batch(per_partition=max(1, records // partitions), keys=keys, rng=random.Random(seed))
        instance = cluster.instance("instance-1", range(partitions), state_dir=state_dir).start()
        instance.wait_caught_up(cluster.input_end(), timeout=timeout)
        code = instance.stop(timeout=60)
        if code != 0:
            raise KStateError(f"{command.name} exited with {code} on a clean stop: {instance.log_tail()}")
        return RanApplication(application_id, store_name, store_type, Path(state_dir), len(cluster.acked),
                              cluster.changelog_topic, command.name)
    finally:
        cluster.close()


def follow_up_commands(bootstrap: str, applications: Iterable[RanApplication],
                       service_dir: Path | None) -> list[str]:
    """The commands to run on what :func:`run_application` left: inspect, one audit per application, and the
    broker's stop when the demo started it."""
    ran = list(applications)
    lines = [shlex.join(["kstate", "inspect", str(d)]) for d in sorted({a.state_dir for a in ran})]
    for app in ran:
        lines.append(shlex.join(["kstate", "audit", "--bootstrap", bootstrap, "--application-id", app.application_id,
                                 "--store", app.store_name, *audit_options(app.store_type),
                                 "--state-dir", str(app.state_dir)]))
    if service_dir is not None:
        lines.append(shlex.join(["kstate", "broker", "stop", "--dir", str(service_dir)]))
    return lines
