"""The state directory layout and column family names (spec/layout.md, LAY-*).

Pure path and name functions: paths are ``/``-separated strings relative to ``state.dir``, the
task directory or the store's segment directory; nothing here touches a filesystem.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kstate.codecs.changelog import StoreType
from kstate.codecs.offsets import parse_java_int
from kstate.codecs.primitives import INT32_MAX, INT32_MIN
from kstate.errors import EncodeError, KStateError

FORMAT = "state-layout"

DEFAULT_CF = "default"
TIMESTAMPED_CF = "keyValueWithTimestamp"
TIMESTAMPED_HEADERS_CF = "keyValueWithTimestampAndHeaders"
SESSION_HEADERS_CF = "sessionKeyValueWithHeaders"
WINDOW_HEADERS_CF = "windowKeyValueWithHeaders"
OFFSETS_CF = "offsets"
KNOWN_COLUMN_FAMILIES = (DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF, SESSION_HEADERS_CF, WINDOW_HEADERS_CF, OFFSETS_CF)

ROCKSDB_DIR = "rocksdb"
CHECKPOINT_FILE = ".checkpoint"
LOCK_FILE = ".lock"
POSITION_SUFFIX = ".position"
GLOBAL_DIR = "global"
PROCESS_METADATA_FILE = "kafka-streams-process-metadata"
#: RocksDB block-based table format readable by RocksDB before 8.6, i.e. by Kafka 3.x (LAY-9).
TABLE_FORMAT_VERSION = 5
#: Written by the rocksdict binding beside a store; not part of the layout (LAY-10).
ROCKSDICT_SIDECAR = "rocksdict-config.json"

_TASK_DIR = re.compile(r"[0-9]+_[0-9]+")
_KV_LIKE = frozenset({StoreType.KV, StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_KV_WITH_HEADERS, StoreType.VERSIONED_KV})


class LayoutError(KStateError):
    """A directory or column family set that Kafka refuses to open (LAY-7, LAY-8)."""


# --- directories ----------------------------------------------------------------------------------


def task_dir_name(subtopology: int, partition: int) -> str:
    """``StateManagerUtil.toTaskDirString``: ``<subtopology>_<partition>`` (LAY-1)."""
    for value, what in ((subtopology, "subtopology"), (partition, "partition")):
        if not isinstance(value, int) or isinstance(value, bool) or not INT32_MIN <= value <= INT32_MAX:
            raise EncodeError(FORMAT, f"{what} {value!r} is not a Java int")
    return f"{subtopology}_{partition}"


def task_dir(application_id: str, subtopology: int, partition: int, named_topology: str | None = None) -> str:
    """The task directory under ``state.dir``: ``<appId>/[__<topology>__/]<subtopology>_<partition>`` (LAY-1)."""
    parent = f"{application_id}/__{named_topology}__" if named_topology is not None else application_id
    return f"{parent}/{task_dir_name(subtopology, partition)}"


def parse_task_dir_name(name: str) -> tuple[int, int] | None:
    """The task a directory name stands for; None for a name Kafka does not list as a task (LAY-1).

    Kafka lists names matching ``[0-9]+_[0-9]+`` and parses both parts with ``Integer.parseInt``; a
    part that overflows an int is refused (``TaskIdFormatException``).
    """
    if not _TASK_DIR.fullmatch(name):
        return None
    subtopology, partition = name.split("_")
    return parse_java_int(subtopology, "subtopology", FORMAT), parse_java_int(partition, "partition", FORMAT)


def store_dir(store_type: StoreType, store_name: str) -> str:
    """A store's directory relative to its task directory (LAY-2, LAY-3).

    Key-value and versioned stores: one RocksDB at ``rocksdb/<store>``. Window and session stores:
    the parent ``<store>`` of one RocksDB per segment.
    """
    check_store_name(store_name)
    if store_type in _KV_LIKE:
        return f"{ROCKSDB_DIR}/{store_name}"
    return store_name


def check_store_name(store_name: str) -> None:
    """A store name is a non-empty string (LAY-2, LAY-3)."""
    if not isinstance(store_name, str) or not store_name:
        raise EncodeError(FORMAT, "a store needs a non-empty name")


def position_file_name(store_name: str) -> str:
    """The pre-4.3 IQ position file of a store, in the task directory: ``<store>.position`` (LAY-4)."""
    check_store_name(store_name)
    return store_name + POSITION_SUFFIX


def legacy_store_checkpoint_name(store_name: str) -> str:
    """The per-store checkpoint of a store that does not manage offsets: ``.checkpoint_<store>`` (LAY-4)."""
    check_store_name(store_name)
    return f"{CHECKPOINT_FILE}_{store_name}"




# --- column families ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnFamilyPlan:
    """How a store opens its RocksDB: the families opened, the data family, and the upgrade mode (LAY-5 to LAY-8)."""

    open: tuple[str, ...]
    data_cf: str
    legacy_cf: str | None = None
    conversion: str | None = None
    dropped: tuple[str, ...] = field(default=())

    @property
    def mode(self) -> str:
        return "upgrade" if self.legacy_cf is not None else "regular"


def column_family_plan(store_type: StoreType, existing: Mapping[str, bool] | None = None) -> ColumnFamilyPlan:
    """The open decision for one RocksDB, given its existing families and whether each holds data (LAY-5 to LAY-8).

    ``existing`` maps a column family name to True when it has at least one key. A family on disk
    that the store does not open is refused, as RocksDB refuses to open a database without all of
    its column families.
    """
    existing = dict(existing or {})
    plan = _plan(store_type, existing)
    unknown = sorted(set(existing) - set(plan.open))
    if unknown:
        raise LayoutError(f"Column families not opened: {', '.join(unknown)}")
    return plan


def _plan(store_type: StoreType, existing: Mapping[str, bool]) -> ColumnFamilyPlan:
    has_default_data = existing.get(DEFAULT_CF, False)
    if store_type in (StoreType.KV, StoreType.VERSIONED_KV, StoreType.WINDOW, StoreType.SESSION):
        return ColumnFamilyPlan((DEFAULT_CF, OFFSETS_CF), DEFAULT_CF)
    if store_type in (StoreType.TIMESTAMPED_KV, StoreType.TIMESTAMPED_WINDOW):
        families: tuple[str, ...] = (DEFAULT_CF, TIMESTAMPED_CF, OFFSETS_CF)
        if has_default_data:
            return ColumnFamilyPlan(families, TIMESTAMPED_CF, DEFAULT_CF, "convert_to_timestamped_format")
        return ColumnFamilyPlan(families, TIMESTAMPED_CF)
    if store_type in (StoreType.TIMESTAMPED_KV_WITH_HEADERS, StoreType.TIMESTAMPED_WINDOW_WITH_HEADERS):
        if TIMESTAMPED_CF in existing:
            families = (DEFAULT_CF, TIMESTAMPED_CF, TIMESTAMPED_HEADERS_CF, OFFSETS_CF)
            if has_default_data:
                raise LayoutError("Cannot have both plain (DEFAULT) and timestamped data")
            if existing[TIMESTAMPED_CF]:
                return ColumnFamilyPlan(families, TIMESTAMPED_HEADERS_CF, TIMESTAMPED_CF, "convert_to_header_format")
            return ColumnFamilyPlan(families, TIMESTAMPED_HEADERS_CF, dropped=(TIMESTAMPED_CF,))
        families = (DEFAULT_CF, TIMESTAMPED_HEADERS_CF, OFFSETS_CF)
        if has_default_data:
            return ColumnFamilyPlan(families, TIMESTAMPED_HEADERS_CF, DEFAULT_CF, "convert_from_plain_to_header_format")
        return ColumnFamilyPlan(families, TIMESTAMPED_HEADERS_CF)
    if store_type in (StoreType.SESSION_WITH_HEADERS, StoreType.TIME_ORDERED_WINDOW_WITH_HEADERS):
        data_cf = SESSION_HEADERS_CF if store_type is StoreType.SESSION_WITH_HEADERS else WINDOW_HEADERS_CF
        families = (DEFAULT_CF, data_cf, OFFSETS_CF)
        if has_default_data:
            return ColumnFamilyPlan(families, data_cf, DEFAULT_CF, "convert_to_header_format")
        return ColumnFamilyPlan(families, data_cf)
    raise EncodeError(FORMAT, f"no column family rule for store type {store_type.value}")
