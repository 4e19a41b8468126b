"""The column families of one RocksDB store: staged writes, the accessors, and each store type's layout.

Writes are staged over the engine and applied in one batch at commit (KV-50); reads see them first (KV-51).
The accessors are Kafka's ``SingleColumnFamilyAccessor`` and ``DualColumnFamilyAccessor`` (the lazy
upgrade from a legacy family, KV-30..KV-37). A :class:`ColumnFamilyLayout` is what a store type declares
about its families (LAY-5..LAY-8): the layout rules to plan them with, the families it knows, and the
INFO line and refusal text of each mode. Key-value stores and the segments of segmented stores share them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from kstate.codecs.layout import ColumnFamilyPlan, LayoutError
from kstate.codecs.primitives import INT64_MAX
from kstate.codecs.store_types import LEGACY_CONVERSIONS, OFFSETS_CF, STORE_TYPES, TIMESTAMPED_CF, StoreType
from kstate.stores.api import InvalidStateStoreError, ProcessorStateError
from kstate.stores.engine import DEFAULT_CF, Engine, EngineCursor, WriteBatch, storage_error

Entry = tuple[bytes, bytes]
Converter = Callable[[bytes], bytes]


def in_bounds(key: bytes, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool) -> bool:
    """Whether ``key`` lies between the bounds (None = unbounded), unsigned lexicographic (PRIM-2)."""
    if lower is not None and (key < lower or (not lower_inclusive and key == lower)):
        return False
    return not (upper is not None and (key > upper or (not upper_inclusive and key == upper)))


def merge_sorted(
    primary: Iterable[tuple[bytes, bytes | None]], secondary: Iterable[Entry], reverse: bool
) -> Iterator[Entry]:
    """Merge two key-ordered streams; on equal keys ``primary`` wins and a None value there hides the key.

    Used for staged writes over the engine (KV-51) and for the new over the legacy column family (KV-35).
    """
    p_iter = iter(primary)
    s_iter = iter(secondary)
    p = next(p_iter, None)
    s = next(s_iter, None)
    while p is not None and s is not None:
        pk = p[0]
        sk = s[0]
        if pk == sk:
            if p[1] is not None:
                yield pk, p[1]
            p = next(p_iter, None)
            s = next(s_iter, None)
        elif (pk < sk) != reverse:
            if p[1] is not None:
                yield pk, p[1]
            p = next(p_iter, None)
        else:
            yield s
            s = next(s_iter, None)
    while p is not None:
        if p[1] is not None:
            yield p[0], p[1]
        p = next(p_iter, None)
    while s is not None:
        yield s
        s = next(s_iter, None)



# --- staged writes over an engine -------------------------------------------------------------------------


class StagedEngine:
    """An engine plus the writes staged since the last commit; reads see staged writes first (KV-51)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.pending = WriteBatch()

    def read(self, cf: str, key: bytes) -> bytes | None:
        ops = self.pending.ops.get(cf)
        if ops is not None and key in ops:
            return ops[key]
        return self.engine.get(cf, key)

    def stage(self, cf: str, key: bytes, value: bytes | None) -> None:
        self.pending.put(cf, key, value)

    def staged(self, cf: str) -> dict[bytes, bytes | None]:
        return self.pending.column_family(cf)

    def scan(
        self,
        cf: str,
        lower: bytes | None,
        upper: bytes | None,
        lower_inclusive: bool,
        upper_inclusive: bool,
        reverse: bool,
    ) -> tuple[Iterator[Entry], EngineCursor]:
        """Entries of ``cf`` in range as of now: staged writes are copied, the engine cursor is a snapshot."""
        # Engine.iterate's own call, its arguments all given (the hot path of every read, issue 35).
        cursor = self.engine._cursor(cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        ops = self.pending.ops.get(cf)
        if not ops:
            return iter(cursor), cursor  # the cursor's own row generator where it has one (no frame per row)
        staged = sorted(
            ((k, v) for k, v in ops.items() if in_bounds(k, lower, upper, lower_inclusive, upper_inclusive)),
            reverse=reverse,
        )
        return merge_sorted(staged, cursor, reverse), cursor

    def is_empty(self, cf: str) -> bool:
        source, cursor = self.scan(cf, None, None, True, True, False)
        try:
            return next(source, None) is None
        finally:
            cursor.close()

    def count(self, cf: str) -> int:
        """The engine's estimate for ``cf`` corrected by the staged writes (exact over exact engines)."""
        estimate = self.engine.approximate_count(cf)
        ops = self.pending.ops.get(cf)
        if ops:
            get = self.engine.get
            for key, value in ops.items():
                present = get(cf, key) is not None
                if value is None and present:
                    estimate -= 1
                elif value is not None and not present:
                    estimate += 1
        return min(max(estimate, 0), INT64_MAX)

    def has_writes(self) -> bool:
        """Whether any write is staged."""
        return any(self.pending.ops.values())

    def apply(self, extra: WriteBatch | None = None) -> None:
        """Write the staged writes plus ``extra`` in one atomic engine batch, then forget them (KV-50).

        A write that fails keeps them staged, ``extra`` left out: nothing acknowledged is dropped, and a later
        commit or close writes them again (OFF-23)."""
        ops = self.pending.ops
        if extra is not None:
            ops = dict(ops)
            for cf, extra_ops in extra.ops.items():
                ops[cf] = {**ops[cf], **extra_ops} if cf in ops else extra_ops
        batch = WriteBatch()
        batch.ops = {cf: cf_ops for cf, cf_ops in ops.items() if cf_ops}
        self.engine.write(batch)
        self.pending = WriteBatch()

    def discard(self) -> None:
        self.pending = WriteBatch()


# --- column-family accessors ---------------------------------------------------------------------------


class SingleColumnFamilyAccessor:
    """All data in one column family (Kafka's ``SingleColumnFamilyAccessor``)."""

    def __init__(self, staged: StagedEngine, cf: str) -> None:
        self.staged = staged
        self.cf = cf
        # The engine's bound reader of this family: the hot path of get (released with the store).
        self._engine_get: Callable[[bytes], bytes | None] | None = staged.engine.getter(cf)

    @property
    def column_families(self) -> tuple[str, ...]:
        return (self.cf,)

    def get(self, key: bytes) -> bytes | None:
        ops = self.staged.pending.ops.get(self.cf)
        if ops and key in ops:
            return ops[key]
        engine_get = self._engine_get
        if engine_get is None:
            raise InvalidStateStoreError("the store is closed")
        try:
            return engine_get(key)
        except Exception as exc:  # the engine's raw reader raises the binding's own errors (KV-25)
            raise storage_error(getattr(self.staged.engine, "store", self.cf), "getting a value", exc) from exc

    def release(self) -> None:
        """Drop the engine reader, which would otherwise keep a closed RocksDB's ``LOCK``."""
        self._engine_get = None

    def get_only(self, key: bytes) -> bytes | None:
        return self.staged.read(self.cf, key)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.staged.stage(self.cf, key, value)

    def put_all(self, entries: Mapping[bytes, bytes | None]) -> None:
        self.staged.staged(self.cf).update(entries)

    def scan(
        self, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool, reverse: bool
    ) -> tuple[Iterator[Entry], list[EngineCursor]]:
        source, cursor = self.staged.scan(self.cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        return source, [cursor]

    def approximate_count(self) -> int:
        return self.staged.count(self.cf)


class DualColumnFamilyAccessor:
    """Kafka's ``DualColumnFamilyAccessor``: the lazy upgrade from a legacy column family (KV-31..KV-37).

    ``get`` migrates a legacy entry (converted, written to the new family, deleted from the old);
    ``get_only`` does not; every write deletes from the old family; scans merge both families in
    byte order without migrating, the new family winning on equal keys.
    """

    def __init__(self, staged: StagedEngine, old_cf: str, new_cf: str, convert: Converter) -> None:
        self.staged = staged
        self.old_cf = old_cf
        self.new_cf = new_cf
        self.convert = convert

    @property
    def column_families(self) -> tuple[str, ...]:
        return (self.old_cf, self.new_cf)

    def get(self, key: bytes) -> bytes | None:
        value = self.staged.read(self.new_cf, key)
        if value is not None:
            return value
        legacy = self.staged.read(self.old_cf, key)
        if legacy is None:
            return None
        converted = self.convert(legacy)
        # Safe only because the changelog already holds the data (Kafka's own comment): a crash before
        # the next commit loses the migration, not the value.
        self.put(key, converted)
        return converted

    def get_only(self, key: bytes) -> bytes | None:
        value = self.staged.read(self.new_cf, key)
        if value is not None:
            return value
        legacy = self.staged.read(self.old_cf, key)
        return None if legacy is None else self.convert(legacy)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.staged.stage(self.old_cf, key, None)
        self.staged.stage(self.new_cf, key, value)

    def put_all(self, entries: Mapping[bytes, bytes | None]) -> None:
        self.staged.staged(self.old_cf).update(dict.fromkeys(entries))
        self.staged.staged(self.new_cf).update(entries)

    def scan(
        self, lower: bytes | None, upper: bytes | None, lower_inclusive: bool, upper_inclusive: bool, reverse: bool
    ) -> tuple[Iterator[Entry], list[EngineCursor]]:
        new_source, new_cursor = self.staged.scan(self.new_cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        old_source, old_cursor = self.staged.scan(self.old_cf, lower, upper, lower_inclusive, upper_inclusive, reverse)
        convert = self.convert
        converted = ((k, convert(v)) for k, v in old_source)
        return merge_sorted(new_source, converted, reverse), [new_cursor, old_cursor]

    def approximate_count(self) -> int:
        return min(self.staged.count(self.old_cf) + self.staged.count(self.new_cf), INT64_MAX)

    def release(self) -> None:
        """Nothing cached: reads go through the staged engine."""


Accessor = SingleColumnFamilyAccessor | DualColumnFamilyAccessor


def _non_null(convert: Callable[[bytes | None], bytes | None]) -> Converter:
    def converted(value: bytes) -> bytes:
        out = convert(value)
        assert out is not None  # the conversions map only null to null
        return out

    return converted


#: The legacy-value conversions of the dual accessor, by the layout plan's name (TSKV-5, HV-8).
CONVERTERS: dict[str, Converter] = {name: _non_null(convert) for name, convert in LEGACY_CONVERSIONS.items()}



def converter(name: str | None) -> Converter:
    """The legacy conversion a layout plan names (TSKV-5, HV-8); an unknown name is refused."""
    if name is None or name not in CONVERTERS:
        raise ProcessorStateError(f"no legacy conversion named {name!r}")
    return CONVERTERS[name]


def open_accessor(staged: StagedEngine, plan: ColumnFamilyPlan) -> Accessor:
    """The accessor a plan calls for: one family in regular mode, the old and the new in upgrade mode (KV-30)."""
    if plan.legacy_cf is None:
        return SingleColumnFamilyAccessor(staged, plan.data_cf)
    return DualColumnFamilyAccessor(staged, plan.legacy_cf, plan.data_cf, converter(plan.conversion))


# --- what a store type declares -------------------------------------------------------------------------------


def _no_mode_message(plan: ColumnFamilyPlan) -> str | None:
    return None


def _no_layout_message(name: str, error: LayoutError) -> str | None:
    return None


@dataclass(frozen=True)
class ColumnFamilyLayout:
    """A RocksDB store type's column families: ``layout_type`` picks the layout rules (spec/layout.md),
    its data family and the legacy families it upgrades from (``STORE_TYPES``) are the families it knows besides
    ``offsets`` (UPG-1), ``mode_message`` the INFO
    line it logs at open (``%s`` = the store name; None logs nothing) and ``layout_message`` its own text for
    a refused layout (None: the generic one)."""

    layout_type: StoreType
    mode_message: Callable[[ColumnFamilyPlan], str | None] = _no_mode_message
    layout_message: Callable[[str, LayoutError], str | None] = _no_layout_message

    def known_column_families(self, manage_offsets: bool = True) -> frozenset[str]:
        """Every column family this store type can open; any other is a downgrade (UPG-1)."""
        families = STORE_TYPES[self.layout_type].column_families
        assert families is not None  # a RocksDB layout type always declares its column families
        known = {DEFAULT_CF, families.data_cf, *(upgrade.source_cf for upgrade in families.upgrades)}
        if manage_offsets:
            known.add(OFFSETS_CF)
        return frozenset(known)


def existing_column_families(engine: Engine) -> dict[str, bool]:
    """Each column family of ``engine`` and whether it holds a key (the input of the layout plan)."""
    return {cf: not engine.is_empty(cf) for cf in engine.column_families()}


# --- the layouts of the RocksDB store types ---------------------------------------------------------------------


def upgrade_mode_message(plan: ColumnFamilyPlan) -> str | None:
    """The INFO line at open of a store with one legacy family (KV-30, SS-32)."""
    return "Opening store %s in upgrade mode" if plan.legacy_cf is not None else "Opening store %s in regular mode"


#: Kafka's message when both ``default`` and ``keyValueWithTimestamp`` hold data (UPG-7).
MIXED_LEGACY_DATA_MESSAGE = (
    "Inconsistent store state for {name}. Cannot have both plain (DEFAULT) and timestamped data simultaneously. "
    "Headers store can upgrade from either plain or timestamped format, but not both."
)


def _headers_layout_message(name: str, exc: LayoutError) -> str | None:
    return MIXED_LEGACY_DATA_MESSAGE.format(name=name) if "plain (DEFAULT) and timestamped" in str(exc) else None


def _headers_mode_message(plan: ColumnFamilyPlan) -> str | None:
    if plan.legacy_cf == DEFAULT_CF:
        return "Opening store %s in upgrade mode from plain key value store"
    if plan.legacy_cf == TIMESTAMPED_CF:
        return "Opening store %s in upgrade mode from timestamped store"
    return "Opening store %s in regular headers-aware mode"


#: The column families of plain key-value stores, the plain segmented stores' segments and the versioned stores'
#: database: ``default`` alone (LAY-5). A family's own layouts are in its module (issue 33).
KEY_VALUE_LAYOUT = ColumnFamilyLayout(StoreType.KEY_VALUE)
#: The column families of timestamped key-value stores and timestamped window segments (LAY-5, LAY-7).
TIMESTAMPED_LAYOUT = ColumnFamilyLayout(StoreType.TIMESTAMPED_KV, upgrade_mode_message)
#: The column families of header-aware timestamped key-value stores and window segments (LAY-5, LAY-8, UPG-6..UPG-8).
TIMESTAMPED_WITH_HEADERS_LAYOUT = ColumnFamilyLayout(
    StoreType.TIMESTAMPED_KV_WITH_HEADERS,
    _headers_mode_message,
    _headers_layout_message,
)
