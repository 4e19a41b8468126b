"""Read a Kafka Streams state directory without writing to it: tasks, stores, types, offsets, violations (LAY-*, OFF-*).

Every RocksDB is read from a scratch copy (:mod:`kstate.store_dump`), so neither RocksDB nor the binding can touch
the inspected directory: the inspection lists each database's rows (:func:`kstate.store_dump.read_database`), a
dump streams them (:func:`kstate.store_dump.open_database`), holding one row at a time.
Store types are detected as spec/layout.md "Detecting a store's type" describes.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import pkgutil
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_string
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from kstate.codecs.key_schemas import plain_schema, segmented_families
from kstate.codecs.layout import (
    CHECKPOINT_FILE,
    GLOBAL_DIR,
    LOCK_FILE,
    POSITION_SUFFIX,
    PROCESS_METADATA_FILE,
    ROCKSDB_DIR,
    ROCKSDICT_SIDECAR,
    SEGMENT_LIST_SIDECAR,
    WIPING_SUFFIX,
    LayoutError,
    column_family_plan,
    parse_task_dir_name,
)
from kstate.codecs.offsets import TopicPartition, decode_entry, read_checkpoint_text
from kstate.codecs.segments import parse_segment_name
from kstate.codecs.store_types import (
    DEFAULT_CF,
    KNOWN_COLUMN_FAMILIES,
    OFFSETS_CF,
    STORE_TYPES,
    TIMESTAMPED_CF,
    TIMESTAMPED_HEADERS_CF,
    VALUE_DECODERS,
    Family,
    StoreType,
    ValueFormat,
)
from kstate.codecs.store_types import FORMAT as STORE_TYPE_FORMAT
from kstate.codecs.type_detection import (
    TIME_ORDERED,
    detect_kv_type,
    detect_kv_type_streamed,
    detect_segmented_family,
    detect_segmented_type,
    detect_segmented_type_streamed,
)
from kstate.errors import DecodeError, KStateError, StateFileError
from kstate.storage_files import is_temporary_name, read_state_file, state_file_kind
from kstate.store_dump import DatabaseReadError, open_database, read_database

_ROCKSDB_FILE_PREFIXES = ("CURRENT", "IDENTITY", "LOCK", "LOG", "MANIFEST-", "OPTIONS-")
#: Files beside RocksDB's own that are not part of the layout (LAY-10): the binding's, and the reference's segment
#: list with its staging name (LAY-13).
_SIDECARS = (ROCKSDICT_SIDECAR, SEGMENT_LIST_SIDECAR, SEGMENT_LIST_SIDECAR + ".tmp")
# A placeholder interval for parsing segment names: only the separator and the number are wanted.
_NAME_INTERVAL = 1


class InspectError(KStateError):
    """The inspector could not do what was asked."""


class NotAStateDirectoryError(InspectError):
    """The path holds no task directory of the LAY-1 layout."""


@dataclass
class Violation:
    """A rule the directory breaks: the rule ID, a kind, the path (relative to the root) and what was found."""

    rule: str
    kind: str
    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "kind": self.kind, "path": self.path, "message": self.message}


def _position_json(position: dict[str, dict[int, int]] | None) -> dict[str, dict[str, int]] | None:
    """A position as JSON: topic -> partition (a string key) -> offset; None stays None."""
    return None if position is None else {t: {str(p): o for p, o in ps.items()} for t, ps in position.items()}


@dataclass
class DatabaseReport:
    """One RocksDB database: a key-value store's, or one segment's (LAY-2, LAY-3, LAY-5, OFF-1)."""

    path: str
    segment_start: int | None = None
    column_families: dict[str, int] = field(default_factory=dict)
    committed_offsets: dict[str, int] = field(default_factory=dict)
    status: str | None = None
    position: dict[str, dict[int, int]] | None = None
    error: str | None = None

    @property
    def unclean(self) -> bool:
        """A ``status`` other than CLOSED: the last instance did not close the store (OFF-6)."""
        return self.status is not None and self.status != "closed"

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "segment_start": self.segment_start,
            "column_families": self.column_families,
            "committed_offsets": self.committed_offsets,
            "status": self.status,
            "unclean_shutdown": self.unclean,
            "position": _position_json(self.position),
            "error": self.error,
        }


@dataclass
class StoreReport:
    """A store of a task: its detected type, how it was detected, its databases and legacy files."""

    name: str
    path: str
    store_type: str
    evidence: str
    mode: str | None = None
    databases: list[DatabaseReport] = field(default_factory=list)
    position_file: dict[str, dict[int, int]] | None = None
    legacy_checkpoint: dict[str, int] | None = None

    @property
    def rows(self) -> int:
        return sum(n for db in self.databases for cf, n in db.column_families.items() if cf != OFFSETS_CF)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "type": self.store_type,
            "evidence": self.evidence,
            "mode": self.mode,
            "rows": self.rows,
            "unclean_shutdown": any(db.unclean for db in self.databases),
            "databases": [db.to_json() for db in self.databases],
            "position_file": _position_json(self.position_file),
            "legacy_checkpoint": self.legacy_checkpoint,
        }


@dataclass
class TaskReport:
    """A task directory (LAY-1): its stores and its ``.checkpoint`` (LAY-4, OFF-13)."""

    path: str
    task: str
    checkpoint: dict[str, int] | None = None
    stores: list[StoreReport] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "task": self.task, "checkpoint": self.checkpoint,
                "stores": [s.to_json() for s in self.stores]}


@dataclass
class Report:
    """The whole inspection: every task found and every violation."""

    root: str
    tasks: list[TaskReport] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Stores whose bytes fit another type as well: opened as that type, they would be accepted (LAY-14).
    warnings: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, Any]:
        return {"root": self.root, "clean": self.clean, "tasks": [t.to_json() for t in self.tasks],
                "violations": [v.to_json() for v in self.violations], "notes": self.notes,
                "warnings": self.warnings}


# --- detection --------------------------------------------------------------------------------------


# --- row decoding -----------------------------------------------------------------------------------


def display_text(data: bytes | None) -> str | None:
    """Bytes for display: the UTF-8 text when printable, else ``0x`` and hex."""
    if data is None:
        return None
    if len(data.translate(None, _CONTROL_BYTES)) != len(data):
        return "0x" + data.hex()  # a control character is never printable: hex, without decoding (issue 35)
    # Bytes that are not UTF-8 decode to lone surrogates, which are not printable: the hex form, as a strict decode
    # failing gives it, without raising an exception per binary key (issue 35).
    text = data.decode("utf-8", "surrogateescape")
    return text if text.isprintable() and not text.startswith("0x") else "0x" + data.hex()


#: The bytes that decode (in UTF-8, and in any byte's surrogate escape) to the C0 controls and DEL only, none of
#: them printable: a text holding one is shown as hex. Deleting them is cheaper than decoding (issue 35: binary
#: keys and values nearly always hold one).
_CONTROL_BYTES = bytes(range(0x20)) + b"\x7f"
_INT64_BE = struct.Struct(">q")  # PRIM-1: a big-endian int64, a timestamped value's first 8 bytes (TSKV-1)
#: Per row shape (its field names in insertion order, as one decoder gives them to every row of a family): the
#: names sorted, each with its JSON-encoded ``"name": `` prefix. A few shapes per dump; at most 256 kept.
_JSON_PLANS: dict[tuple[str, ...], list[tuple[str, str]]] = {}


def json_line(row: Mapping[str, Any]) -> str:
    """``json.dumps(row, sort_keys=True)``, byte for byte, for a dump row (``inspect --dump --json``, issue 35):
    text, integer and null fields written directly, any other value (headers, windows, versions) by ``json.dumps``."""
    names = tuple(row)
    plan = _JSON_PLANS.get(names)
    if plan is None:
        if not all(type(name) is str for name in names):
            return json.dumps(row, sort_keys=True)
        plan = [(name, _json_string(name) + ": ") for name in sorted(names)]
        if len(_JSON_PLANS) < 256:
            _JSON_PLANS[names] = plan
    parts = []
    for name, prefix in plan:
        value = row[name]
        kind = type(value)
        if kind is str:
            parts.append(prefix + _json_string(value))
        elif kind is int:
            parts.append(prefix + int.__repr__(value))
        elif value is None:
            parts.append(prefix + "null")
        else:
            parts.append(prefix + json.dumps(value, sort_keys=True))
    return "{" + ", ".join(parts) + "}"


def _headers(pairs: Iterable[tuple[str, bytes | None]]) -> list[list[str | None]]:
    return [[k, display_text(v)] for k, v in pairs]


#: What a family's row module is called: ``kstate.inspect.<family>_rows``.
ROWS_MODULE_SUFFIX = "_rows"


class FamilyRows(Protocol):
    """How one family's rows are shown: a ``kstate.inspect.<family>_rows`` module, or :class:`SchemaRows`."""

    FAMILY: Family
    VALUE_FORMATS: Mapping[str, ValueFormat]
    PLAIN_KEYS: bool

    def row_fields(self, kind: str, store_type: StoreType, value_format: ValueFormat, key: bytes,
                   value: bytes) -> dict[str, Any]: ...


class SchemaRows:
    """A segmented family's rows as its plain key schema shows them (``KeySchema.shown``: the record key and the
    key's times), for a family that needs no row module of its own (issue 33); the value layouts of its column
    families are the table's, each data family in its type's layout (LAY-5, LAY-8)."""

    PLAIN_KEYS = False

    def __init__(self, family: Family) -> None:
        self.FAMILY = family
        self.schema = plain_schema(family.value)
        self.VALUE_FORMATS: Mapping[str, ValueFormat] = MappingProxyType({
            info.column_families.data_cf: info.value_format for info in STORE_TYPES.values()
            if info.family is family and info.column_families is not None and info.value_format is not None})

    def row_fields(self, kind: str, store_type: StoreType, value_format: ValueFormat, key: bytes,
                   value: bytes) -> dict[str, Any]:
        record_key, fields = self.schema.shown(key)
        return {"key": display_text(record_key), **fields, **value_fields(value_format, value)}


@functools.cache
def family_rows() -> Mapping[Family, FamilyRows]:
    """How each family's rows are shown: every ``kstate.inspect.<family>_rows`` module, imported by its name (issue
    33), by its ``FAMILY``; each gives ``row_fields``, ``VALUE_FORMATS`` and ``PLAIN_KEYS``. A segmented family
    without one is shown by its key schema (:class:`SchemaRows`). Two modules of one family are refused."""
    import kstate.inspect as package

    found: dict[Family, FamilyRows] = {}
    for module_info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not module_info.name.endswith(ROWS_MODULE_SUFFIX):
            continue
        module: Any = importlib.import_module(f"{package.__name__}.{module_info.name}")
        if module.FAMILY in found:
            raise RuntimeError(f"kstate.inspect.{module_info.name}: a second row module of the {module.FAMILY.value} family")
        found[module.FAMILY] = module
    for name in segmented_families():
        family = Family(name)
        if family not in found:
            found[family] = SchemaRows(family)
    return found


def _rows_of(family: Family) -> FamilyRows:
    """The row module of ``family``; DecodeError for a family without one (no silent default)."""
    found = family_rows().get(family)
    if found is None:
        raise DecodeError(STORE_TYPE_FORMAT, f"no row decoding for the {family.value} family")
    return found


@functools.cache
def _cf_value_formats() -> Mapping[str, ValueFormat]:
    """The value layout a column family holds when it is not the store type's data family: a legacy family read
    during an upgrade (LAY-6, LAY-8), or a family of a type whose values the table leaves open (LAY-5); each
    family's row module names its own (``VALUE_FORMATS``)."""
    found: dict[str, ValueFormat] = {}
    for module in family_rows().values():
        found.update(module.VALUE_FORMATS)
    return found


def _value_format(store_type: StoreType, cf: str) -> ValueFormat:
    """The layout of ``cf``'s values in a ``store_type`` store: the table's, in its data family (VS-25: a versioned
    store with headers keeps them in ``default``); else what the family holds. Unknown families are refused."""
    info = STORE_TYPES[store_type]
    if info.value_format is not None and info.column_families is not None and cf == info.column_families.data_cf:
        return info.value_format
    found = _cf_value_formats().get(cf)
    if found is None:
        raise DecodeError(STORE_TYPE_FORMAT, f"no value layout for column family {cf!r} of a {store_type.value} store")
    return found


def value_fields(value_format: ValueFormat, value: bytes | None) -> dict[str, Any]:
    """``value`` and, where the layout keeps them, ``timestamp`` and ``headers`` of one stored value (a tombstone
    version of a segment row is null in every layout, VER-8)."""
    if value is None:
        return {"value": None}
    parts = VALUE_DECODERS[value_format](value)
    out: dict[str, Any] = {"value": display_text(parts.value)}
    if parts.timestamp is not None:
        out["timestamp"] = parts.timestamp
    if parts.headers is not None:
        out["headers"] = _headers(parts.headers)
    return out


RowDecoder = Callable[[bytes, bytes], dict[str, Any]]


def row_decoder(store_type: StoreType | str, cf: str) -> RowDecoder:
    """:func:`decode_row` of one store type and column family, what does not depend on the row looked up once
    (issue 35: a dump decodes every row of a family alike). A type or family without a codec gives a decoder that
    raises decode_row's error on every row, as decode_row does."""
    try:
        time_ordered = store_type == TIME_ORDERED
        parsed = StoreType.WINDOW if time_ordered else StoreType.parse(store_type)
        plain_keys = _rows_of(STORE_TYPES[parsed].family).PLAIN_KEYS
        value_format = _value_format(parsed, cf)
    except (KStateError, AssertionError):
        return lambda key, value: decode_row(store_type, cf, key, value)
    if plain_keys:
        decode_value = VALUE_DECODERS[value_format]
        text = display_text
        timestamped = value_format is ValueFormat.TIMESTAMPED
        read_timestamp = _INT64_BE.unpack_from
        control = _CONTROL_BYTES

        def decode_key_value(key: bytes, value: bytes) -> dict[str, Any]:
            # decode_row's key-value rows, its calls inline; value_fields for a value that is not None.
            # display_text inline, its hex form cut from the row's own hex rather than computed again (issue 35).
            key_hex = key.hex()
            if len(key.translate(None, control)) != len(key):
                key_text = "0x" + key_hex
            else:
                key_text = key.decode("utf-8", "surrogateescape")
                if not key_text.isprintable() or key_text.startswith("0x"):
                    key_text = "0x" + key_hex
            value_hex = value.hex()
            row: dict[str, Any] = {"cf": cf, "key_hex": key_hex, "value_hex": value_hex, "key": key_text}
            if timestamped and len(value) >= 8:
                # TSKV-1: [timestamp int64][value], the timestamp read with one struct call; a shorter value goes
                # to the codec, which raises its error.
                raw_value = value[8:]
                if len(raw_value.translate(None, control)) != len(raw_value):
                    value_text = "0x" + value_hex[16:]
                else:
                    value_text = raw_value.decode("utf-8", "surrogateescape")
                    if not value_text.isprintable() or value_text.startswith("0x"):
                        value_text = "0x" + value_hex[16:]
                row["value"] = value_text
                row["timestamp"] = read_timestamp(value)[0]
                return row
            parts = decode_value(value)
            row["value"] = text(parts.value)
            if parts.timestamp is not None:
                row["timestamp"] = parts.timestamp
            if parts.headers is not None:
                row["headers"] = _headers(parts.headers)
            return row

        return decode_key_value
    return lambda key, value: decode_row(store_type, cf, key, value)


def decode_row(store_type: StoreType | str, cf: str, key: bytes, value: bytes) -> dict[str, Any]:
    """One stored row decoded by the codec of its store type's family and value layout (from the table of store
    types) and its column family; raises DecodeError on bad bytes, and on a type or family it has no codec for."""
    time_ordered = store_type == TIME_ORDERED
    store_type = StoreType.WINDOW if time_ordered else StoreType.parse(store_type)
    row: dict[str, Any] = {"cf": cf, "key_hex": key.hex(), "value_hex": value.hex()}
    value_format = _value_format(store_type, cf)
    kind = TIME_ORDERED if time_ordered else store_type.value
    row.update(_rows_of(STORE_TYPES[store_type].family).row_fields(kind, store_type, value_format, key, value))
    return row


# --- the walk ---------------------------------------------------------------------------------------


class _Walker:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.report = Report(str(root))

    def rel(self, path: Path) -> str:
        """``path`` relative to the inspected root; a path outside it (the application directory above an inspected
        task directory) as given."""
        if path == self.root:
            return "."
        try:
            return str(path.relative_to(self.root))
        except ValueError:
            return str(path)

    def violate(self, rule: str, kind: str, path: Path, message: str) -> None:
        self.report.violations.append(Violation(rule, kind, self.rel(path), message))

    def database(self, db_dir: Path, kind: str | None, segment_start: int | None,
                 rows: dict[str, list[tuple[bytes, bytes]]]) -> tuple[DatabaseReport, str | None]:
        """Counts, offsets and the rule checks of one database; returns the open mode Kafka would choose."""
        db = DatabaseReport(self.rel(db_dir), segment_start, {cf: len(r) for cf, r in rows.items()})
        for cf in rows:
            if cf not in KNOWN_COLUMN_FAMILIES:
                self.violate("LAY-5", "unknown-column-family", db_dir, f"column family {cf!r} is not one Kafka opens")
        for key, value in rows.get(OFFSETS_CF, []):
            try:
                entry = decode_entry(key, value)
            except KStateError as exc:
                self.violate("OFF-3", "bad-offsets-entry", db_dir, f"offsets entry {key!r}: {exc}")
                continue
            if entry["kind"] == "status":
                db.status = str(entry["status"])
                if db.status == "unknown":
                    self.violate("OFF-3", "bad-offsets-entry", db_dir, f"status value {entry['value']} is neither 0 nor 1")
            elif entry["kind"] == "position":
                db.position = entry["position"]  # type: ignore[assignment]
            else:
                db.committed_offsets[str(entry["topic_partition"])] = int(entry["offset"])  # type: ignore[call-overload]
        mode = None
        if kind is not None:
            store_type = StoreType.WINDOW if kind == TIME_ORDERED else StoreType(kind)
            known = {cf: bool(r) for cf, r in rows.items() if cf in KNOWN_COLUMN_FAMILIES}
            try:
                plan = column_family_plan(store_type, known)
                mode = plan.mode
            except LayoutError as exc:
                what = "mixed-plain-and-timestamped" if "both plain" in str(exc) else "column-family-not-opened"
                self.violate("LAY-8", what, db_dir, f"Kafka would refuse to open this {kind} store: {exc}")
            for cf, cf_rows in rows.items():
                if cf == OFFSETS_CF or cf not in KNOWN_COLUMN_FAMILIES:
                    continue
                bad = 0
                first = ""
                decode = row_decoder(kind, cf)
                for key, value in cf_rows:
                    try:
                        decode(key, value)
                    except (KStateError, AssertionError) as exc:
                        bad += 1
                        first = first or f"{key!r}: {exc}"
                if bad:
                    self.violate("LAY-5", "undecodable-row", db_dir,
                                 f"{bad} rows of {cf} do not decode as {kind} (first: {first})")
        return db, mode

    def kv_store(self, task: Path, store_dir: Path) -> StoreReport:
        try:
            rows = read_database(store_dir)
        except DatabaseReadError as exc:
            self.violate("LAY-2", "unreadable-store", store_dir, str(exc))
            return StoreReport(store_dir.name, self.rel(store_dir), "unknown", "unreadable",
                               databases=[DatabaseReport(self.rel(store_dir), error=str(exc))])
        store_type, evidence = detect_kv_type(rows)
        if store_type is None:
            self.violate("LAY-2", "wrong-place", store_dir, evidence)
        elif set(rows) <= {DEFAULT_CF, OFFSETS_CF}:
            self._warn_kv_ambiguity(store_dir, store_type, bool(rows.get(DEFAULT_CF)))
        db, mode = self.database(store_dir, store_type.value if store_type else None, None, rows)
        self._warn_refused_headers_upgrade(store_dir, rows)
        self._stray_files(store_dir)
        return StoreReport(store_dir.name, self.rel(store_dir), store_type.value if store_type else "unknown",
                           evidence, mode, [db])

    def _warn_refused_headers_upgrade(self, store_dir: Path, rows: dict[str, list[tuple[bytes, bytes]]]) -> None:
        """The state Kafka 4.4.0 leaves when it refuses a header-aware open of a half-migrated store (UPG-7, LAY-8):
        rows in ``default`` and a ``keyValueWithTimestamp`` family, and the empty headers family it created."""
        if not (rows.get(DEFAULT_CF) and TIMESTAMPED_CF in rows and TIMESTAMPED_HEADERS_CF in rows
                and not rows[TIMESTAMPED_HEADERS_CF]):
            return
        self.report.warnings.append(
            f"{self.rel(store_dir)}: a half-migrated store (rows in {DEFAULT_CF} and {TIMESTAMPED_CF}) with an empty "
            f"{TIMESTAMPED_HEADERS_CF} family: what Kafka 4.4.0 leaves when it refuses to open such a store as the "
            "header-aware store (UPG-7). Kafka now refuses it both as the header-aware store (\"Cannot have both plain "
            "(DEFAULT) and timestamped data\") and as the timestamped store (\"... is a headers-aware store ...\"). "
            "Way out: stop the application, delete this store directory and let Kafka Streams restore it from its "
            "changelog topic (a header-aware store restores into its own format); or, to keep the rows, drop the "
            f"empty family (RocksDB's ldb: drop_column_family {TIMESTAMPED_HEADERS_CF}), which returns the directory "
            "to its state before the refused open, so that the timestamped store opens it again (UPG-7, LAY-8)")

    def _warn_kv_ambiguity(self, store_dir: Path, store_type: StoreType, has_rows: bool) -> None:
        """A ``default``-only store's rows fit another type too; opened as it, the store would be accepted (LAY-14)."""
        if store_type is StoreType.VERSIONED_KV:
            self.report.warnings.append(
                f"{self.rel(store_dir)}: read as versioned_kv, but its rows are valid key-value rows and may be "
                "versioned_kv_with_headers values: opened as kv or as the headers variant it would be accepted and "
                "answer these rows as its own (LAY-14)")
        elif not has_rows:
            self.report.warnings.append(
                f"{self.rel(store_dir)}: empty, so a key-value and a versioned store read the same: opened as either "
                "it would be accepted with its committed offsets (LAY-14)")

    def segmented_store(self, store_dir: Path) -> StoreReport:
        name = store_dir.name
        loaded: list[tuple[Path, int, dict[str, list[tuple[bytes, bytes]]]]] = []
        errors: list[DatabaseReport] = []
        for entry in sorted(store_dir.iterdir()):
            if entry.is_symlink():
                self.violate("LAY-15", "unsafe-file", entry, f"a symbolic link (to {os.readlink(entry)!r:.200}): not "
                             "followed")
                continue
            if not entry.is_dir():
                self.violate("LAY-3", "stray-file", entry, "a segmented store's directory holds only segment databases")
                continue
            try:
                parsed = parse_segment_name(name, entry.name, _NAME_INTERVAL)
            except KStateError as exc:
                self.violate("LAY-3", "bad-segment-name", entry, f"not a segment name of store {name!r}: {exc}")
                continue
            if parsed.segment_id < 0:
                self.violate("LAY-3", "bad-segment-name", entry, f"Kafka skips segment {entry.name!r}")
                continue
            if parsed.rename_to is not None:
                self.report.notes.append(f"{self.rel(entry)}: legacy segment name; Kafka renames it to "
                                         f"{parsed.rename_to!r} on open (LAY-3)")
            try:
                loaded.append((entry, parsed.segment_id, read_database(entry)))
            except DatabaseReadError as exc:
                self.violate("LAY-3", "unreadable-store", entry, str(exc))
                errors.append(DatabaseReport(self.rel(entry), parsed.segment_id, error=str(exc)))
        store_type, evidence = detect_segmented_type([(start, rows) for _, start, rows in loaded])
        if loaded and detect_segmented_family([(start, rows) for _, start, rows in loaded])[0] is None:
            self.report.warnings.append(
                f"{self.rel(store_dir)}: its segments' keys read as well as window and as session keys: opened as "
                "either family it would be accepted (LAY-14)")
        report = StoreReport(name, self.rel(store_dir), store_type or "unknown", evidence)
        modes = set()
        for entry, start, rows in loaded:
            db, mode = self.database(entry, store_type, start, rows)
            self._stray_files(entry)
            report.databases.append(db)
            modes.add(mode)
        report.databases.extend(errors)
        report.databases.sort(key=lambda d: d.segment_start if d.segment_start is not None else -1)
        report.mode = "/".join(sorted(m for m in modes if m)) or None
        return report

    def _stray_files(self, db_dir: Path) -> None:
        for entry in db_dir.iterdir():
            n = entry.name
            ok = (n.startswith(_ROCKSDB_FILE_PREFIXES) or n.endswith((".sst", ".log", ".blob")) or n in _SIDECARS
                  or is_temporary_name(n))
            if not ok:
                self.violate("LAY-10", "stray-file", entry, "not a RocksDB file")

    def task(self, task_dir: Path, task_name: str) -> TaskReport:
        task = TaskReport(self.rel(task_dir), task_name)
        checkpoint = task_dir / CHECKPOINT_FILE
        if os.path.lexists(checkpoint):
            task.checkpoint = self._checkpoint(checkpoint, "OFF-16")
        rocks = task_dir / ROCKSDB_DIR
        if rocks.is_dir():
            for store_dir in sorted(rocks.iterdir()):
                if store_dir.is_symlink():
                    self.violate("LAY-15", "unsafe-file", store_dir, f"a symbolic link (to {os.readlink(store_dir)!r:.200})"
                                 ": not followed")
                elif store_dir.name.endswith(WIPING_SUFFIX):
                    self.report.notes.append(f"{self.rel(store_dir)}: the leftover of an interrupted wipe (not a store)")
                elif store_dir.is_dir():
                    task.stores.append(self.kv_store(task_dir, store_dir))
                else:
                    self.violate("LAY-2", "stray-file", store_dir, "rocksdb/ holds only store directories")
        for entry in sorted(task_dir.iterdir()):
            if entry.is_symlink() and entry.is_dir():
                self.violate("LAY-15", "unsafe-file", entry, f"a symbolic link (to {os.readlink(entry)!r:.200}): not "
                             "followed")
            elif entry.is_dir() and entry.name.endswith(WIPING_SUFFIX):
                self.report.notes.append(f"{self.rel(entry)}: the leftover of an interrupted wipe (not a store)")
            elif entry.is_dir() and entry.name != ROCKSDB_DIR:
                task.stores.append(self.segmented_store(entry))
        by_name = {s.name: s for s in task.stores}
        for entry in sorted(task_dir.iterdir()):
            if (entry.is_dir() and not entry.is_symlink()) or entry.name == CHECKPOINT_FILE:
                continue
            n = entry.name
            if n == LOCK_FILE:
                self.violate("LAY-1", "stale-legacy-file", entry, "task-level .lock is a legacy file Kafka deletes")
            elif n.endswith(POSITION_SUFFIX):
                self._position_file(entry, by_name.get(n[: -len(POSITION_SUFFIX)]))
            elif n.startswith(CHECKPOINT_FILE + "_"):
                store = by_name.get(n[len(CHECKPOINT_FILE) + 1:])
                offsets = self._checkpoint(entry, "OFF-16")
                if store is not None:
                    store.legacy_checkpoint = offsets
                    if any(OFFSETS_CF in db.column_families for db in store.databases):
                        self.violate("LAY-4", "stale-legacy-file", entry,
                                     "a per-store checkpoint beside a store that keeps its offsets in 'offsets'")
        if task.checkpoint is not None and task.stores and all(
                OFFSETS_CF in db.column_families for s in task.stores for db in s.databases if db.error is None):
            self.report.notes.append(f"{task.path}: .checkpoint beside stores with 'offsets' families: a downgrade "
                                     "checkpoint (OFF-20) or one not yet migrated (OFF-19)")
        return task

    def _legacy_file(self, path: Path, rule: str) -> dict[TopicPartition, int | None] | None:
        """A legacy offset file's entries, read the kit's one safe way (LAY-15): a link is reported, never followed
        (its target is not quoted), a FIFO or device never opened, a file over the cap not read."""
        try:
            kind = state_file_kind(path)
            if kind is not None:
                self.violate("LAY-15", "unsafe-file", path, f"{kind}: not read")
                return None
            data = read_state_file(path)
        except StateFileError as exc:
            self.violate("LAY-15", "unsafe-file", path, f"{exc.reason}: not read")
            return None
        try:
            return read_checkpoint_text(data or b"")
        except KStateError as exc:
            self.violate(rule, "bad-checkpoint", path, str(exc))
            return None

    def _checkpoint(self, path: Path, rule: str) -> dict[str, int] | None:
        offsets = self._legacy_file(path, rule)
        if offsets is None:
            return None
        return {f"{t}-{p}": o for (t, p), o in offsets.items() if o is not None}

    def _position_file(self, path: Path, store: StoreReport | None) -> None:
        entries = self._legacy_file(path, "OFF-18")
        if entries is None:
            return
        position: dict[str, dict[int, int]] = {}
        for (topic, partition), offset in entries.items():
            if offset is not None:
                position.setdefault(topic, {})[partition] = offset
        if store is None:
            self.violate("LAY-4", "stale-legacy-file", path, "a position file of no store in this task")
            return
        store.position_file = position
        if any(OFFSETS_CF in db.column_families for db in store.databases):
            self.violate("OFF-22", "stale-legacy-file", path,
                         "a position file beside a store with an 'offsets' family, which migrates and deletes it")


def _task_dirs(root: Path) -> Iterator[tuple[Path, str]]:
    """Task directories under ``root``: a state.dir, an application directory, or one task directory (LAY-1)."""
    def tasks_in(directory: Path) -> list[tuple[Path, str]]:
        found: list[tuple[Path, str]] = []
        for entry in sorted(directory.iterdir()):
            if not entry.is_dir():
                continue
            if entry.name == GLOBAL_DIR:
                found.append((entry, GLOBAL_DIR))  # global stores keep the task layout (LAY-1, LAY-4)
                continue
            if entry.name.startswith("__") and entry.name.endswith("__") and len(entry.name) > 4:
                found.extend(tasks_in(entry))  # a named topology's tasks (LAY-1)
                continue
            try:
                parsed = parse_task_dir_name(entry.name)
            except KStateError:
                continue
            if parsed is not None:
                found.append((entry, entry.name))
        return found

    try:
        if parse_task_dir_name(root.name) is not None:
            yield root, root.name
            return
    except KStateError:
        pass
    direct = tasks_in(root)
    if direct:
        yield from direct
        return
    for app in sorted(root.iterdir()):
        if app.is_dir():
            yield from tasks_in(app)


def _root(path: str | Path) -> Path:
    root = Path(path)
    if not root.exists():
        raise NotAStateDirectoryError(f"{root} does not exist")
    if not root.is_dir():
        raise NotAStateDirectoryError(f"{root} is not a directory")
    return root


def inspect_state_dir(path: str | Path) -> Report:
    """Inspect a state directory (state.dir, an application directory or a task directory) without writing to it."""
    root = _root(path)
    walker = _Walker(root)
    tasks = list(_task_dirs(root))
    if not tasks:
        raise NotAStateDirectoryError(f"{root} holds no task directory <subtopology>_<partition> (LAY-1)")
    for task_dir, name in tasks:
        walker.report.tasks.append(walker.task(task_dir, name))
    by_app: dict[Path, list[str]] = {}
    for task_dir, name in tasks:
        by_app.setdefault(task_dir.parent, []).append(name)
    for app, names in sorted(by_app.items()):
        if (app / LOCK_FILE).exists() or (app / PROCESS_METADATA_FILE).exists():
            walker.report.notes.append(_application_note(walker.rel(app), app, names))
    return walker.report


def _application_note(shown: str, app: Path, tasks: list[str]) -> str:
    """What an application directory (LAY-1) tells a reader: its application.id, the process id Kafka Streams keeps
    in ``kafka-streams-process-metadata`` and the tasks found under it."""
    import json

    process = ""
    try:
        metadata = json.loads((app / PROCESS_METADATA_FILE).read_text(encoding="utf-8", errors="replace"))
        if isinstance(metadata, dict) and isinstance(metadata.get("processId"), str):
            process = f"Kafka Streams process {metadata['processId']}; "
    except (OSError, ValueError):
        pass
    listed = ", ".join(tasks[:8]) + (f", ... ({len(tasks) - 8} more)" if len(tasks) > 8 else "")
    return (f"{shown}: application.id {app.name!r} ({process}{len(tasks)} task{'' if len(tasks) == 1 else 's'}: "
            f"{listed}); audit it with --application-id {app.name}")


def _dump_families(path: str | Path, store: str, task: str | None
                   ) -> Iterator[tuple[str, str, str, int | None, Iterable[tuple[bytes, bytes]]]]:
    """``(task, store type, family, segment start, rows)`` of every data family of the store named ``store``, in
    the order a dump prints them, each family's rows read from its database as they are consumed (valid until the
    next family is asked for).

    The store's type is detected as the inspection detects it (:func:`detect_kv_type`, :func:`detect_segmented_type`)
    from its families and, where they do not tell, one pass over its ``default`` rows, holding one row at a time:
    a dump's memory is bounded by a row, not by a database (issue 35)."""
    root = _root(path)
    walker = _Walker(root)
    found = False
    for task_dir, name in _task_dirs(root):
        if task is not None and name != task:
            continue
        if (task_dir / ROCKSDB_DIR / store).is_dir():
            found = True
            yield from _dump_kv_families(walker, name, task_dir / ROCKSDB_DIR / store)
        elif (task_dir / store).is_dir() and store != ROCKSDB_DIR:
            found = True
            yield from _dump_segmented_families(walker, name, task_dir / store)
    if not found:
        raise InspectError(f"no store named {store!r}" + (f" in task {task}" if task else ""))


def _unknown_type(walker: _Walker, store_dir: Path, evidence: str) -> InspectError:
    return InspectError(f"{walker.rel(store_dir)}: store type unknown ({evidence}); cannot decode")


def _dump_kv_families(walker: _Walker, name: str, store_dir: Path
                      ) -> Iterator[tuple[str, str, str, int | None, Iterable[tuple[bytes, bytes]]]]:
    """A ``rocksdb/<store>`` database's data families for :func:`_dump_families` (LAY-2)."""
    try:
        with open_database(store_dir) as db:
            store_type, evidence = detect_kv_type_streamed(db.families, db.rows)
            if store_type is None:
                raise _unknown_type(walker, store_dir, evidence)
            # A read error met after some rows were handed on is refused as one met before (below).
            refused = lambda error: _unknown_type(walker, store_dir, "unreadable")  # noqa: E731
            for cf in db.families:
                if cf != OFFSETS_CF:
                    yield name, store_type.value, cf, None, db.rows(cf, refused)
    except DatabaseReadError as exc:
        # Unreadable: refused as the inspection reports it.
        raise _unknown_type(walker, store_dir, "unreadable") from exc


def _dump_segmented_families(walker: _Walker, name: str, store_dir: Path
                             ) -> Iterator[tuple[str, str, str, int | None, Iterable[tuple[bytes, bytes]]]]:
    """A segmented store's segments' data families for :func:`_dump_families` (LAY-3): the segments the inspection
    reads (:meth:`_Walker.segmented_store`), oldest first; a segment RocksDB cannot read is left out, as the
    inspection reports it apart."""
    candidates: list[tuple[Path, int]] = []
    for entry in sorted(store_dir.iterdir()):
        if entry.is_symlink() or not entry.is_dir():
            continue
        try:
            parsed = parse_segment_name(store_dir.name, entry.name, _NAME_INTERVAL)
        except KStateError:
            continue
        if parsed.segment_id >= 0:
            candidates.append((entry, parsed.segment_id))
    # The segments' families, each database opened once to list them; their default rows read only when the
    # families do not tell the type. A segment that cannot be read is no part of the detection.
    segments: list[tuple[Path, int, list[str]]] = []
    for entry, start in candidates:
        try:
            with open_database(entry) as db:
                segments.append((entry, start, db.families))
        except DatabaseReadError:
            continue
    unreadable: set[int] = set()

    def default_rows(i: int) -> Iterator[tuple[bytes, bytes]]:
        try:
            with open_database(segments[i][0]) as db:
                yield from db.rows(DEFAULT_CF)
        except DatabaseReadError:
            unreadable.add(i)

    store_type, evidence = detect_segmented_type_streamed([(start, cfs) for _, start, cfs in segments], default_rows)
    if unreadable:  # the inspection leaves an unreadable segment out of the detection: read again without it
        segments = [s for i, s in enumerate(segments) if i not in unreadable]
        store_type, evidence = detect_segmented_type_streamed([(start, cfs) for _, start, cfs in segments],
                                                              default_rows)
    if store_type is None:
        raise _unknown_type(walker, store_dir, evidence)
    for entry, start, _ in sorted(segments, key=lambda s: s[1]):
        try:
            with open_database(entry) as db:
                for cf in db.families:
                    if cf != OFFSETS_CF:
                        # A read error ends the segment's rows (the inspection reports it, LAY-3).
                        yield name, store_type, cf, start, db.rows(cf, _ends_rows)
        except DatabaseReadError:
            continue  # read apart by the inspection (LAY-3, unreadable-store)


def _ends_rows(error: DatabaseReadError) -> None:
    return None


def _dump_rows(name: str, store: str, store_type: str, cf: str, segment_start: int | None,
               rows: Iterable[tuple[bytes, bytes]]) -> Iterator[dict[str, Any]]:
    decode = row_decoder(store_type, cf)
    for key, value in rows:
        # The decoder's own dict completed in place: no second dict per row (issue 35).
        try:
            row = decode(key, value)
        except (KStateError, AssertionError) as exc:
            row = {"cf": cf, "key_hex": key.hex(), "value_hex": value.hex(), "error": str(exc)}
        row["task"] = name
        row["store"] = store
        row["segment_start"] = segment_start
        yield row


def dump_store(path: str | Path, store: str, task: str | None = None) -> Iterator[dict[str, Any]]:
    """Every row of the store named ``store`` (in every task, or only ``task``), decoded by its detected type."""
    for name, store_type, cf, segment_start, rows in _dump_families(path, store, task):
        yield from _dump_rows(name, store, store_type, cf, segment_start, rows)


def dump_store_lines(path: str | Path, store: str, task: str | None = None) -> Iterator[str]:
    """:func:`dump_store`'s rows as ``inspect --dump --json`` prints them, :func:`json_line` of each, without a
    newline (issue 35). A timestamped key-value family's rows (TSKV-1) are written straight from their bytes, no
    dict between; every other row through :func:`dump_store`'s dict."""
    for name, store_type, cf, segment_start, rows in _dump_families(path, store, task):
        try:
            parsed = StoreType.WINDOW if store_type == TIME_ORDERED else StoreType.parse(store_type)
            fast = (_rows_of(STORE_TYPES[parsed].family).PLAIN_KEYS
                    and _value_format(parsed, cf) is ValueFormat.TIMESTAMPED)
        except (KStateError, AssertionError):
            fast = False
        if not fast:
            for row in _dump_rows(name, store, store_type, cf, segment_start, rows):
                yield json_line(row)
            continue
        # json_line's bytes for the row decode_key_value gives: its fields sorted, the hex forms (never escaped)
        # and the timestamp written as they are, the two texts JSON-encoded.
        head = '{"cf": ' + _json_string(cf) + ', "key": '
        middle = ('", "segment_start": ' + ("null" if segment_start is None else int.__repr__(segment_start))
                  + ', "store": ' + _json_string(store) + ', "task": ' + _json_string(name) + ', "timestamp": ')
        read_timestamp = _INT64_BE.unpack_from
        control = _CONTROL_BYTES
        for key, value in rows:
            if len(value) < 8:  # the codec's error, as a row of its own
                yield json_line(next(_dump_rows(name, store, store_type, cf, segment_start, [(key, value)])))
                continue
            # display_text of the key and of the value, JSON-encoded: a hex form needs no escaping, written as it is.
            key_hex = key.hex()
            if len(key.translate(None, control)) != len(key):  # display_text's hex, without decoding
                key_json = f'"0x{key_hex}"'
            else:
                key_text = key.decode("utf-8", "surrogateescape")
                if not key_text.isprintable() or key_text.startswith("0x"):
                    key_text = "0x" + key_hex
                key_json = _json_string(key_text)
            value_hex = value.hex()
            raw_value = value[8:]
            if len(raw_value.translate(None, control)) != len(raw_value):
                value_json = f'"0x{value_hex[16:]}"'
            else:
                value_text = raw_value.decode("utf-8", "surrogateescape")
                if not value_text.isprintable() or value_text.startswith("0x"):
                    value_text = "0x" + value_hex[16:]
                value_json = _json_string(value_text)
            # One f-string builds the line at once (a chain of + copies the growing line at each step).
            yield (f'{head}{key_json}, "key_hex": "{key_hex}{middle}{read_timestamp(value)[0]!r}, '
                   f'"value": {value_json}, "value_hex": "{value_hex}"}}')
