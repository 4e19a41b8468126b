"""The state directory layout and column family names (spec/layout.md, LAY-*).

Pure path and name functions: paths are ``/``-separated strings relative to ``state.dir``, the
task directory or the store's segment directory; nothing here touches a filesystem.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kstate.codecs.offsets import parse_java_int
from kstate.codecs.primitives import INT32_MAX, INT32_MIN
from kstate.codecs.store_types import DEFAULT_CF, OFFSETS_CF, STORE_TYPES, StoreType
from kstate.errors import EncodeError, KStateError

FORMAT = "state-layout"


ROCKSDB_DIR = "rocksdb"
CHECKPOINT_FILE = ".checkpoint"
#: The suffix of a store directory being wiped (renamed, then deleted): '~' is in no name Kafka accepts (KV-26), so
#: such a directory names no store.
WIPING_SUFFIX = "~wiping"
LOCK_FILE = ".lock"
POSITION_SUFFIX = ".position"
GLOBAL_DIR = "global"
PROCESS_METADATA_FILE = "kafka-streams-process-metadata"
#: RocksDB block-based table format readable by RocksDB before 8.6, i.e. by Kafka 3.x (LAY-9).
TABLE_FORMAT_VERSION = 5
#: Written by the rocksdict binding beside a store; not part of the layout (LAY-10).
ROCKSDICT_SIDECAR = "rocksdict-config.json"
#: Written by the reference in each segment of a window or session store: the names of the store's segments, so a
#: deleted segment is noticed at open (LAY-13); not part of the layout (LAY-10).
SEGMENT_LIST_SIDECAR = "kstate-segments"

_TASK_DIR = re.compile(r"[0-9]+_[0-9]+")
#: ``Named.MAX_NAME_LENGTH`` (and ``Topic.MAX_NAME_LENGTH``): the longest name Kafka accepts (KV-26, LAY-11).
MAX_NAME_LENGTH = 249
#: The longest file name the file systems the kit runs on hold, in bytes (Linux's and macOS's NAME_MAX, LAY-11).
FILE_NAME_MAX = 255
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


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


def name_problem(name: str) -> str | None:
    """Why Kafka's naming rule (``Named.validate``; ``Topic.validate`` has the same) refuses ``name``, in Kafka's
    words; None for a legal name: one path component, never ``.`` or ``..`` (KV-26, LAY-11)."""
    if not name:
        return "Name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return f"Name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, name: {name}"
    if not _NAME_CHARS.issuperset(name):
        return f'Name "{name}" is illegal, it contains a character other than ASCII alphanumerics, \'.\', \'_\' and \'-\''
    return None


def task_id_problem(task_id: str) -> str | None:
    """Why ``task_id`` is not a task directory name Kafka lists (``<subtopology>_<partition>``, both decimal Java
    ints, LAY-1), or one longer than the file system's ``NAME_MAX`` (255 bytes, which leading zeros can
    reach); None for one that is (LAY-11)."""
    if len(task_id.encode("utf-8", "surrogatepass")) > FILE_NAME_MAX:
        return (f"task id {task_id!r:.80} is {len(task_id)} characters long, over the file system's NAME_MAX of "
                f"{FILE_NAME_MAX} bytes: no directory can be named so")
    try:
        if parse_task_dir_name(task_id) is not None:
            return None
    except KStateError as exc:
        return f"task id {task_id!r:.80} is not <subtopology>_<partition> with both parts Java ints: {exc}"
    return f"task id {task_id!r:.80} is not a task directory name <subtopology>_<partition> (ASCII digits)"


def store_dir(store_type: StoreType, store_name: str) -> str:
    """A store's directory relative to its task directory (LAY-2, LAY-3).

    Key-value and versioned stores: one RocksDB at ``rocksdb/<store>``. Window and session stores:
    the parent ``<store>`` of one RocksDB per segment.
    """
    check_store_name(store_name)
    if STORE_TYPES[store_type].single_database:
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
    families = STORE_TYPES[store_type].column_families
    if families is None:
        raise EncodeError(FORMAT, f"no column family rule for store type {store_type.value}")
    data_cf = families.data_cf
    if data_cf == DEFAULT_CF:
        return ColumnFamilyPlan((DEFAULT_CF, OFFSETS_CF), DEFAULT_CF)
    has_default_data = existing.get(DEFAULT_CF, False)
    from_default = None
    for upgrade in families.upgrades:
        if upgrade.source_cf == DEFAULT_CF:
            from_default = upgrade
        elif upgrade.source_cf in existing:
            # An older non-plain family on disk: it is opened, and upgraded from when it holds data (LAY-8).
            opened: tuple[str, ...] = (DEFAULT_CF, upgrade.source_cf, data_cf, OFFSETS_CF)
            if has_default_data:
                raise LayoutError("Cannot have both plain (DEFAULT) and timestamped data")
            if existing[upgrade.source_cf]:
                return ColumnFamilyPlan(opened, data_cf, upgrade.source_cf, upgrade.conversion)
            return ColumnFamilyPlan(opened, data_cf, dropped=(upgrade.source_cf,))
    opened = (DEFAULT_CF, data_cf, OFFSETS_CF)
    if has_default_data and from_default is not None:
        return ColumnFamilyPlan(opened, data_cf, DEFAULT_CF, from_default.conversion)
    return ColumnFamilyPlan(opened, data_cf)
