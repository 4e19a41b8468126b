"""Operations over changelog records, restore conversions, changelog topics and the state layout.

A changelog record is ``{"key": hex, "value": hex|null, "timestamp": int, "headers": [[key, hex|null], ...]}``
(spec/changelog.md); store types are the :class:`StoreType` values (``kv``, ``timestamped_kv``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kstate.codecs import changelog as cl
from kstate.codecs import layout as lay
from kstate.codecs import segments as seg
from kstate.codecs.position import Position
from kstate.codecs.store_types import STORE_TYPES, Family, Source, StoreType, UnknownFamilyError
from kstate.errors import EncodeError
from kstate.ops import JsonDict, headers_from_json, headers_to_json, load_all, op, tohex
from kstate.ops.fields import Field, Output, Request, bool_field, deferred, int_field, str_field
from kstate.ops.inputs import (
    as_bool,
    as_hex,
    as_int,
    as_object,
    as_str,
    field,
    require_hex,
    require_object,
    require_str,
)
from kstate.ops.offsets_ops import position_from_json, position_to_json


@dataclass(frozen=True)
class ChangelogWrite:
    """One store write whose changelog record ``changelog.record_for_write`` answers: the fields every family's
    write has, read in this order, and the payload the family reads the rest from."""

    store_type: StoreType
    operation: str
    key: bytes
    value: bytes | None
    position: Position | None
    payload: JsonDict


@dataclass(frozen=True)
class ChangelogWrites:
    """What one family's change-logging layer logs (CL-3 to CL-8): its writes, and the answer for one of them."""

    operations: tuple[str, ...]
    #: ``{"record": ... | null}`` and whatever else the family's layer reports (a window write: its seqnum).
    record: Callable[[ChangelogWrite], JsonDict]


#: Each family's changelog writes, filled by the family's op module (``changelog_writes``) when :func:`load_all`
#: imports every ``*_ops`` module; a family missing here is refused, never taken to log nothing.
CHANGELOG_WRITES: dict[Family, ChangelogWrites] = {}


def changelog_writes(family: Family, operations: tuple[str, ...],
                     record: Callable[[ChangelogWrite], JsonDict]) -> None:
    """Register ``family``'s logged writes and how one becomes its changelog record (CL-3 to CL-8)."""
    if family in CHANGELOG_WRITES:
        raise ValueError(f"changelog writes of {family.value!r} registered twice")
    CHANGELOG_WRITES[family] = ChangelogWrites(tuple(operations), record)


def _family_writes(family: Family) -> ChangelogWrites:
    load_all()
    try:
        return CHANGELOG_WRITES[family]
    except KeyError as exc:
        raise UnknownFamilyError(family, "the writes a change-logging layer logs (CL-3 to CL-7)") from exc


def _operations(store_type: StoreType) -> tuple[str, ...]:
    """The writes ``store_type`` logs, from the table: none for a type whose changelog the spec leaves open."""
    info = STORE_TYPES[store_type]
    if info.changelog is None:
        return ()
    return _family_writes(info.family).operations


def record_to_json(record: cl.ChangelogRecord) -> JsonDict:
    """``{key, value, timestamp, headers}``: a changelog record as every operation answers it."""
    return {
        "key": record.key.hex(),
        "value": tohex(record.value),
        "timestamp": record.timestamp,
        "headers": headers_to_json(list(record.headers)),
    }


def maybe_record(record: cl.ChangelogRecord | None) -> JsonDict | None:
    """A record's JSON, or None where the write logs nothing."""
    return None if record is None else record_to_json(record)


def _record_from_json(value: Any, where: str = "record") -> cl.ChangelogRecord:
    record = as_object(value, where)
    headers = headers_from_json(record.get("headers"), f"{where}.headers") or []
    return cl.ChangelogRecord(
        as_hex(field(record, "key"), f"{where}.key", nullable=False), as_hex(record.get("value"), f"{where}.value"),
        as_int(field(record, "timestamp"), f"{where}.timestamp"), tuple(headers),
    )


def record_context(payload: JsonDict) -> cl.RecordContext:
    """The write's record context (``context``: its timestamp and headers); one without a timestamp is refused."""
    context = require_object(payload, "context", None) or {}
    if "timestamp" not in context:
        raise EncodeError(cl.FORMAT, "a record context with a timestamp is required")
    return cl.RecordContext(as_int(context["timestamp"], "context.timestamp"),
                            tuple(headers_from_json(context.get("headers"), "context.headers") or []))


def _store_type(payload: JsonDict) -> StoreType:
    return StoreType.parse(require_str(payload, "store_type"))


#: A store type by its :class:`StoreType` value; an unknown one is refused as :meth:`StoreType.parse` refuses it.
_STORE_TYPE = Field("store_type", "string", ", ".join(t.value for t in StoreType),
                    read=lambda payload, n, _default: StoreType.parse(require_str(payload, n)))
_APPLICATION_ID = str_field("application_id")
_NAMED_TOPOLOGY = str_field("named_topology", "null: none", None, type="string | null")
_STORE_NAME = str_field("store_name")
_SEGMENT_ID = int_field("segment_id")
_SEGMENT_INTERVAL = int_field("segment_interval")


# Not declared on @op (issue 33), and deliberately: past the fields every write has (store_type, operation, key,
# value, consistency_position) each family's registered writer (CHANGELOG_WRITES) reads its own from the payload,
# context, previous, start/end, timestamp, window_start/seqnum/retain_duplicates, and answers its own (a window
# write: seqnum). Declaring only the common fields would drop the others from the index, which derives all of them
# from the fixtures today. Declaring them needs each family's ChangelogWrites to carry its fields (in the family's
# op module) and this op's declaration to be assembled once every family has registered (after load_all), which
# ``@op``'s fixed ``inputs`` cannot express.
@op(
    "changelog.record_for_write",
    rules=["CL-1", "CL-2", "CL-3", "CL-4", "CL-5", "CL-6", "CL-7", "CL-8", "CL-12", "VS-26"],
)
def record_for_write(payload: JsonDict) -> JsonDict:
    """The changelog record one store write sends (``record`` null: nothing logged); window writes report the layer's seqnum."""
    store_type = _store_type(payload)
    operation = require_str(payload, "operation")
    if operation not in _operations(store_type):
        raise EncodeError(cl.FORMAT, f"operation {operation!r} is not defined for {store_type.value}")
    key = require_hex(payload, "key", nullable=False)
    value = require_hex(payload, "value", None)
    position_json = payload.get("consistency_position")
    position = None if position_json is None else position_from_json(position_json, "consistency_position")
    write = ChangelogWrite(store_type, operation, key, value, position, payload)
    return _family_writes(STORE_TYPES[store_type].family).record(write)


#: A changelog record ``{key, value, timestamp, headers}`` (:func:`_record_from_json`).
_RECORD = Field("record", "{key: hex, value: hex | null, timestamp: int, headers: list[[string, hex | null]] | null}",
                read=lambda payload, n, _default: _record_from_json(field(payload, n), n))
_POSITION = Field("position", "list[[string, list[[int, int]]]]",
                  read=lambda payload, n, _default: position_from_json(field(payload, n), n))
_POSITION_OUT = Output("position", "list[[string, list[[int, int]]]]", "canonical order")


def _string_map_field(name: str, doc: str) -> Field:
    return Field(name, "{string: string} | null", doc, None, read=lambda payload, n, _default: _string_map(payload, n))


@op("changelog.restore_value", rules=["CL-9", "CL-10", "CL-11", "CL-18", "VS-27"], inputs=[_STORE_TYPE, _RECORD],
    outputs=[Output("key", "hex"), Output("value", "hex | null"),
             Output("timestamp", "int", "versioned stores: the put timestamp", optional=True)])
def restore_value(request: Request) -> JsonDict:
    """The key and value a store writes when restoring ``record``; versioned stores also report the put timestamp."""
    store_type, record = request.store_type, request.record
    out: JsonDict = {"key": record.key.hex(), "value": tohex(cl.restore_value(store_type, record))}
    logged = STORE_TYPES[store_type].changelog
    if logged is not None and logged.timestamp is Source.VERSION:  # restore puts at the version's timestamp (CL-9, VS-27)
        out["timestamp"] = record.timestamp
    return out


@op("changelog.consistency_headers", rules=["CL-12"], inputs=[_POSITION],
    outputs=[Output("headers", "list[[string, hex | null]]")])
def consistency_headers(request: Request) -> JsonDict:
    """The ``v`` and ``c`` headers a changelog record carries when IQ consistency is enabled."""
    return {"headers": headers_to_json(list(cl.consistency_headers(request.position)))}


@op("changelog.apply_consistency", rules=["CL-13"],
    inputs=[Field("headers", "list[[string, hex | null]] | null", "the restored record's (null or absent: none)",
                  read=lambda payload, n, _default: headers_from_json(payload.get(n)) or []),
            _POSITION, bool_field("enabled", default=True)],
    outputs=[_POSITION_OUT])
def apply_consistency(request: Request) -> JsonDict:
    """The store position after restoring a record with ``headers``."""
    return {"position": position_to_json(cl.apply_consistency(request.position, request.headers, request.enabled))}


@op("changelog.topic_name", rules=["CL-14"], inputs=[_APPLICATION_ID, _STORE_NAME, _NAMED_TOPOLOGY],
    outputs=[Output("topic", "string")])
def topic_name(request: Request) -> JsonDict:
    """``<applicationId>-[<namedTopology>-]<store>-changelog``; an illegal topic name is refused."""
    return {"topic": cl.changelog_topic_name(request.application_id, request.store_name, request.named_topology)}


@op("changelog.topic_config", rules=["CL-15", "CL-16", "CL-17"],
    inputs=[_STORE_TYPE, int_field("retention_ms", default=None, type="int | null"),
            int_field("history_retention_ms", default=None, type="int | null"),
            bool_field("retain_duplicates", default=False),
            int_field("additional_retention_ms", default=cl.DEFAULT_ADDITIONAL_RETENTION_MS),
            _string_map_field("topic_defaults", "the topic's defaults"), _string_map_field("log_config", "the store's")],
    outputs=[Output("config", "{string: string}", "sorted by name")])
def topic_config(request: Request) -> JsonDict:
    """The changelog topic's properties for a store."""
    config = cl.changelog_topic_config(
        request.store_type,
        retention_ms=request.retention_ms,
        history_retention_ms=request.history_retention_ms,
        retain_duplicates=request.retain_duplicates,
        additional_retention_ms=request.additional_retention_ms,
        topic_defaults=request.topic_defaults,
        log_config=request.log_config,
    )
    return {"config": dict(sorted(config.items()))}


def _string_map(payload: JsonDict, name: str) -> dict[str, str] | None:
    """A ``{config name: string value}`` object (null or absent: none)."""
    value = require_object(payload, name, None)
    return None if value is None else {str(k): as_str(v, f"{name}.{k}") for k, v in value.items()}


def _existing(payload: JsonDict) -> dict[str, bool]:
    """``{column family: has data}`` (null or absent: no families)."""
    value = require_object(payload, "existing", None) or {}
    return {str(k): as_bool(v, f"existing.{k}") for k, v in value.items()}


# --- layout -----------------------------------------------------------------------------------------
# Declared fields (OPS-2, OPS-3), read in the order the hand parsing read them, so a bad one is refused the same way.

@op("layout.task_dir", rules=["LAY-1"],
    inputs=[int_field("subtopology"), int_field("partition"), _APPLICATION_ID, _NAMED_TOPOLOGY],
    outputs=[Output("task_dir", "string", "relative to state.dir"), Output("name", "string")])
def task_dir(request: Request) -> JsonDict:
    """The task directory relative to ``state.dir``, and its own name."""
    sub, part = request.subtopology, request.partition
    return {
        "task_dir": lay.task_dir(request.application_id, sub, part, request.named_topology),
        "name": lay.task_dir_name(sub, part),
    }


@op("layout.parse_task_dir_name", rules=["LAY-1"], inputs=[str_field("name")],
    outputs=[Output("task", "[int, int] | null", "[subtopology, partition]")])
def parse_task_dir_name(request: Request) -> JsonDict:
    """``[subtopology, partition]`` of a task directory name, or null for a name that is not a task's."""
    parsed = lay.parse_task_dir_name(request.name)
    return {"task": None if parsed is None else list(parsed)}


@op("layout.store_paths", rules=["LAY-2", "LAY-3", "LAY-4"],
    # The segment fields are read only once the store is known to have segments (LAY-3), as before.
    inputs=[_STORE_TYPE, _STORE_NAME, deferred(replace(_SEGMENT_ID, doc="with segment_interval: the segment's directory",
                                                       optional=True)),
            deferred(replace(_SEGMENT_INTERVAL, optional=True))],
    outputs=[Output("store_dir", "string"), Output("position_file", "string"), Output("task_checkpoint_file", "string"),
             Output("legacy_store_checkpoint_file", "string"), Output("segment_dir", "string", optional=True)])
def store_paths(request: Request) -> JsonDict:
    """A store's paths relative to the task directory (``segment_dir`` when a segment id and interval are given)."""
    store_type, name = request.store_type, request.store_name
    out: JsonDict = {
        "store_dir": lay.store_dir(store_type, name),
        "position_file": lay.position_file_name(name),
        "task_checkpoint_file": lay.CHECKPOINT_FILE,
        "legacy_store_checkpoint_file": lay.legacy_store_checkpoint_name(name),
    }
    if "segment_id" in request.payload:
        if out["store_dir"] != name:
            raise EncodeError(lay.FORMAT, f"a {store_type.value} store has no segments")
        out["segment_dir"] = seg.segment_dir(name, _SEGMENT_ID.parse(request.payload), _SEGMENT_INTERVAL.parse(request.payload))
    return out


@op("layout.segment_dir_name", rules=["LAY-3"], inputs=[_STORE_NAME, _SEGMENT_ID, _SEGMENT_INTERVAL],
    outputs=[Output("name", "string")])
def segment_dir_name(request: Request) -> JsonDict:
    """``<store>.<segmentId * segmentInterval>``."""
    return {"name": seg.segment_dir_name(request.store_name, request.segment_id, request.segment_interval)}


@op("layout.parse_segment_name", rules=["LAY-3"], inputs=[_STORE_NAME, str_field("segment_name"), _SEGMENT_INTERVAL],
    outputs=[Output("segment_id", "int", "-1: skipped"), Output("rename_to", "string | null", "null: kept")])
def parse_segment_name(request: Request) -> JsonDict:
    """The segment id of a directory entry (-1: skipped) and the name Kafka renames it to (null: kept)."""
    parsed = seg.parse_segment_name(request.store_name, request.segment_name, request.segment_interval)
    return {"segment_id": parsed.segment_id, "rename_to": parsed.rename_to}


@op("layout.column_families", rules=["LAY-5", "LAY-6", "LAY-7", "LAY-8"],
    inputs=[_STORE_TYPE, Field("existing", "{string: bool} | null", "column family: has data (null or absent: none)",
                               read=lambda payload, _n, _default: _existing(payload))],
    outputs=[Output("open", "list[string]", "sorted"), Output("data_cf", "string"), Output("mode", "string"),
             Output("legacy_cf", "string | null"), Output("conversion", "string | null"),
             Output("dropped", "list[string]", "sorted")])
def column_families(request: Request) -> JsonDict:
    """How a store opens a RocksDB whose families are ``existing`` (``{name: has data}``)."""
    plan = lay.column_family_plan(request.store_type, request.existing)
    return {
        "open": sorted(plan.open),  # a set (LAY-5): RocksDB's order of families depends on the database's history
        "data_cf": plan.data_cf,
        "mode": plan.mode,
        "legacy_cf": plan.legacy_cf,
        "conversion": plan.conversion,
        "dropped": sorted(plan.dropped),
    }


_TABLE_SECTION = re.compile(r'^\[TableOptions/BlockBasedTable "(?P<cf>.*)"\]\s*$')
_FORMAT_VERSION = re.compile(r"^\s*format_version\s*=\s*(?P<v>-?[0-9]+)\s*$")


@op("layout.options_format_versions", rules=["LAY-9"], inputs=[str_field("options_text", "the OPTIONS file's text")],
    outputs=[Output("format_versions", "{string: int}"), Output("readable_before_rocksdb_8_6", "bool")])
def options_format_versions(request: Request) -> JsonDict:
    """The block-based table ``format_version`` per column family of a RocksDB ``OPTIONS`` file, and whether Kafka 3.x can read them."""
    versions: dict[str, int] = {}
    current: str | None = None
    for line in request.options_text.splitlines():
        if line.startswith("["):
            section = _TABLE_SECTION.match(line)
            current = section.group("cf") if section else None
            continue
        found = _FORMAT_VERSION.match(line)
        if current is not None and found:
            versions[current] = int(found.group("v"))
    return {
        "format_versions": dict(sorted(versions.items())),
        "readable_before_rocksdb_8_6": bool(versions) and all(v <= lay.TABLE_FORMAT_VERSION for v in versions.values()),
    }


_ROCKSDB_FILE = re.compile(r"CURRENT|IDENTITY|LOCK|LOG(\.old\.[0-9]+)?|(MANIFEST|OPTIONS)-[0-9]+|[0-9]+\.(sst|log|blob)")


@op("layout.classify_store_file", rules=["LAY-10"], inputs=[str_field("name")],
    outputs=[Output("kind", "string", "rocksdb, not_layout or unknown")])
def classify_store_file(request: Request) -> JsonDict:
    """Whether a file in a store directory belongs to the layout: ``rocksdb``, ``not_layout`` (binding sidecars) or ``unknown``."""
    name = request.name
    # LAY-10: the binding's sidecar, and the reference's segment list with its staging name (LAY-13).
    if name in (lay.ROCKSDICT_SIDECAR, lay.SEGMENT_LIST_SIDECAR, lay.SEGMENT_LIST_SIDECAR + ".tmp"):
        return {"kind": "not_layout"}
    return {"kind": "rocksdb" if _ROCKSDB_FILE.fullmatch(name) else "unknown"}
