"""The suite's handle on an implementation's stores, through the neutral ``store.*`` operations only (spec/ops.md).

:class:`Kit` opens stores in one state directory and skips a test whose store type, backend or feature the
implementation's ``store.capabilities`` lacks (:meth:`Kit.require`); :class:`Store` is one open store with
hex-level helpers. Values are hex strings, as the operations speak them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from kstate_conformance import bytes_model
from kstate_conformance.capabilities import OPTIONAL_FEATURES, Capabilities, capabilities_of, lacks_reason

ROCKSDB, MEMORY = "rocksdb", "memory"
FF8 = "ff" * 8
TOPIC = "app-store-changelog"

BACKENDS = pytest.mark.parametrize("backend", [ROCKSDB, MEMORY])


def h(text: str | bytes) -> str:
    """Hex of a UTF-8 string (or of bytes)."""
    return (text.encode() if isinstance(text, str) else text).hex()


def i64(value: int) -> str:
    """Hex of a big-endian int64 (PRIM-1)."""
    return bytes_model.int64(value).hex()


def varint(value: int) -> str:
    """Hex of a zig-zag varint (PRIM-6)."""
    return bytes_model.zigzag_varint(value).hex()


def header_bytes(headers: list[tuple[str, bytes | None]]) -> str:
    """Hex of KIP-1271 header bytes (HV-1)."""
    return bytes_model.header_bytes(headers).hex()


def is_refusal(out: Any) -> bool:
    """The whole answer is a refusal, ``{"error": ...}`` and nothing beside it (OPS-3)."""
    return isinstance(out, dict) and set(out) == {"error"}


def record(key: str, value: str | None, timestamp: int, headers: list[list[Any]] | None = None) -> dict[str, Any]:
    return {"key": key, "value": value, "timestamp": timestamp, "headers": headers or []}


class Store:
    """A handle on one store of the implementation, with hex-level helpers."""

    def __init__(self, implementation: Any, handle: str, info: dict[str, Any]) -> None:
        self.implementation = implementation
        self.handle = handle
        self.info = info

    def call(self, op: str, **payload: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.implementation.call(op, {"handle": self.handle, **payload})
        return out

    def ok(self, op: str, **payload: Any) -> dict[str, Any]:
        out = self.call(op, **payload)
        assert "error" not in out, f"{op} {payload} refused: {out['error']}"
        return out

    def refused(self, op: str, **payload: Any) -> bool:
        return "error" in self.call(op, **payload)

    def put(self, key: str, value: str | None) -> None:
        self.ok("store.put", key=key, value=value)

    def get(self, key: str) -> str | None:
        value: str | None = self.ok("store.get", key=key)["value"]
        return value

    def put_if_absent(self, key: str, value: str | None) -> str | None:
        previous: str | None = self.ok("store.put_if_absent", key=key, value=value)["previous"]
        return previous

    def put_all(self, entries: Sequence[tuple[str, str | None]]) -> None:
        self.ok("store.put_all", entries=[list(e) for e in entries])

    def delete(self, key: str) -> str | None:
        previous: str | None = self.ok("store.delete", key=key)["previous"]
        return previous

    def entries(self, op: str, **payload: Any) -> list[tuple[str, str]]:
        return [(k, v) for k, v in self.ok(op, **payload)["entries"]]

    def all(self) -> list[tuple[str, str]]:
        return self.entries("store.all")

    def reverse_all(self) -> list[tuple[str, str]]:
        return self.entries("store.reverse_all")

    def range(self, lower: str | None, upper: str | None) -> list[tuple[str, str]]:
        return self.entries("store.range", **{"from": lower, "to": upper})

    def reverse_range(self, lower: str | None, upper: str | None) -> list[tuple[str, str]]:
        return self.entries("store.reverse_range", **{"from": lower, "to": upper})

    def prefix_scan(self, prefix: str) -> list[tuple[str, str]]:
        return self.entries("store.prefix_scan", prefix=prefix)

    def count(self) -> int:
        count: int = self.ok("store.approximate_num_entries")["count"]
        return count

    def context(self, timestamp: int, headers: list[list[Any]] | None = None, topic: str = "") -> None:
        self.ok("store.set_context", timestamp=timestamp, headers=headers or [], topic=topic, offset=-1, partition=-1)

    def changelog(self) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = self.ok("store.changelog")["records"]
        return records

    def flush(self) -> None:
        self.ok("store.flush")

    def commit(self, offset: int | None) -> None:
        self.ok("store.commit", changelog_offsets=[[TOPIC, 0, offset]])

    def committed(self) -> int | None:
        offset: int | None = self.ok("store.committed_offset", topic=TOPIC, partition=0)["offset"]
        return offset

    def restore(self, records: list[dict[str, Any]], batch_size: int = 1000, commit_offsets: bool = False) -> dict[str, Any]:
        if commit_offsets:
            return self.ok("store.restore", records=records, batch_size=batch_size, commit_offsets=True)
        return self.ok("store.restore", records=records, batch_size=batch_size)

    def close(self) -> None:
        self.ok("store.close")

    def crash(self) -> None:
        self.ok("store.crash")

    def dump(self) -> dict[str, dict[str, str]]:
        cfs = self.ok("store.dump")["column_families"]
        return {cf: dict(entries) for cf, entries in cfs.items()}

    def iterator(self, kind: str = "all", **payload: Any) -> str:
        iterator_id: str = self.ok("store.iterator_open", kind=kind, **payload)["iterator"]
        return iterator_id

    def next(self, iterator_id: str, count: int = 100) -> dict[str, Any]:
        out: dict[str, Any] = self.implementation.call("store.iterator_next", {"iterator": iterator_id, "max": count})
        return out


class Kit:
    """Opens stores of the implementation under test in one state directory, skipping what it lacks."""

    def __init__(self, implementation: Any, state_dir: Path) -> None:
        self.implementation = implementation
        self.state_dir = state_dir
        if not implementation.supports("store.capabilities"):
            pytest.skip("the implementation offers no key-value store operations")
        self.caps: Capabilities = capabilities_of(implementation)
        self.opened: list[Store] = []

    def require(self, store_type: str | None = None, backend: str | None = None, *features: str) -> None:
        lacked = self.caps.lacks(store_type, backend)
        if lacked is not None:
            pytest.skip(lacks_reason("the implementation", lacked))
        for feature in features:
            if feature in OPTIONAL_FEATURES:
                # A feature Kafka 4.4 lacks (HV-10's lazy_headers): not declaring it is lacking it, so absent.
                lacked = self.caps.lacks(feature=feature)
                if lacked is not None:
                    pytest.skip(lacks_reason("the implementation", lacked))
            elif not self.caps.offers_feature(feature, backend):
                pytest.skip(f"the implementation does not offer {feature}" + (f" on {backend}" if backend else ""))

    def require_ops(self, *ops: str) -> None:
        """Skip the test (unsupported) unless the implementation offers every one of ``ops``."""
        for op in ops:
            if not self.implementation.supports(op):
                pytest.skip(f"the implementation does not offer {op}")

    def open_payload(self, store_type: str, backend: str, **options: Any) -> dict[str, Any]:
        return {"store_type": store_type, "backend": backend, "name": options.pop("name", "store"),
                "state_dir": str(self.state_dir), "application_id": "app", "task_id": "0_0", **options}

    def open(self, store_type: str, backend: str, **options: Any) -> Store:
        self.require(store_type, backend, *(["caching"] if options.get("caching") else []))
        out = self.implementation.call("store.open", self.open_payload(store_type, backend, **options))
        assert "error" not in out, f"opening a {store_type} store on {backend} failed: {out['error']}"
        store = Store(self.implementation, out["handle"], out)
        self.opened.append(store)
        return store

    def open_refused(self, store_type: str, backend: str, **options: Any) -> dict[str, Any]:
        out: dict[str, Any] = self.implementation.call("store.open", self.open_payload(store_type, backend, **options))
        if "error" not in out:
            self.opened.append(Store(self.implementation, out["handle"], out))
        return out

    def close_all(self) -> None:
        for store in self.opened:
            store.call("store.close")


@pytest.fixture
def kit(implementation: Any, tmp_path: Path) -> Any:
    k = Kit(implementation, tmp_path)
    yield k
    k.close_all()
