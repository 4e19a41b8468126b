"""The machinery of the paired runs' store machines (:mod:`kstate_conformance.paired`): each family's machine draws a
sequence of operations on one store and sends every one to the implementation and to the model; the answers, the
changelog records and the rows left on disk after each close must agree. Known differences of Kafka are excluded by
rule.

Each family's machine is in its model module (``models/<family>.py``), which registers it with :func:`register`;
:func:`paired_machine` and :func:`paired_families` find them by the family's name, so that this module and the
suite's paired test name no family.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from kstate_conformance import store_types as types
from kstate_conformance.paired import PairedMachine, excluded
from kstate_conformance.strategies import header_lists, nullable_binary

RAW = st.binary(max_size=4)
HEADERS = header_lists(st.sampled_from(["a", "b", "ü"]), nullable_binary(2), max_size=2).map(tuple)
TOPICS = st.sampled_from(["in", "in", "other"])
CACHE_SIZES = st.sampled_from([0, 120, 300, 700, 10 * 1024 * 1024])
#: The changelog topic of the store named ``store`` of application ``app`` (the neutral defaults).
CHANGELOG = "app-store-changelog"
# The model machines' keys and timestamps (state_machines), drawn alike: written here, since state_machines imports
# the key-value model, which imports this module to register its machine (no import cycle: test_conformance_imports).
KEY_BYTES = (0x00, 0x01, 0x7F, 0x80, 0xFF)
KEYS = st.lists(st.sampled_from(KEY_BYTES), max_size=3).map(bytes)
MAYBE_KEY = st.none() | KEYS
TIMESTAMPS = st.sampled_from([0, 1, 7, 1_700_000_000_000]) | st.integers(min_value=0, max_value=(1 << 63) - 1)


def hex_or_none(data: bytes | None) -> str | None:
    """Bytes as the JSON operations carry them: hex, or null."""
    return None if data is None else data.hex()


def headers_to_json(headers: tuple[tuple[str, bytes | None], ...]) -> list[list[Any]]:
    """Header pairs as the record context carries them: ``[[key, hex or null], ...]``."""
    return [[key, hex_or_none(value)] for key, value in headers]


def stored_values(store_type: str) -> st.SearchStrategy[bytes]:
    """Values in the store type's stored layout only (CL-1, WS-24: see the exclusions), as its family's paired
    machine registers them; :class:`~kstate_conformance.store_types.UnknownStoreTypeError` for a type without."""
    excluded("CL-1")
    family = types.FAMILY_OF.get(store_type)
    values = None if family is None else paired_family(family).values.get(store_type)
    if values is None:
        raise types.UnknownStoreTypeError(store_type, "paired stored values")
    return values


class StorePair(PairedMachine):
    """What the key-value and window pairs share: the record context, the changelog, commits, restarts, restores."""

    family_ops: tuple[str, ...] = ()

    def __init__(self, subject: Any, model: Any, base_dir: Path, store_type: str, backend: str) -> None:
        super().__init__(subject, model, base_dir)
        self.store_type = store_type
        self.backend = backend
        self.handle: str | None = None
        self.open_options: dict[str, Any] = {}
        self.logged: list[dict[str, Any]] = []
        self.offset = 0
        self.context: dict[str, Any] = {"timestamp": 0, "topic": "in", "partition": 0, "offset": 0, "headers": []}

    def payload(self, **extra: Any) -> dict[str, Any]:
        return {"store_type": self.store_type, "backend": self.backend, "name": "store", **self.open_options,
                "context": self.context, **extra}

    def on_store(self, op: str, **payload: Any) -> dict[str, Any]:
        return self.agree(op, {"handle": self.handle, **payload})

    def open_store(self) -> None:
        handle = self.open_both(self.payload())
        assert handle is not None, f"both refused to open {self.payload()}"
        self.handle = handle
        if self.backend == "memory" and self.logged:
            # Kafka rebuilds an in-memory store from its changelog whenever it is opened again.
            self.on_store("store.restore", records=self.logged, batch_size=3)

    # --- after every step ---------------------------------------------------------------------------------

    @invariant()
    def changelogs_agree(self) -> None:
        """The records each side's change-logging layer sent since the last step are the same (CL-1, CL-2)."""
        if self.handle is not None:
            self.logged += self.on_store("store.changelog").get("records", [])

    # --- shared rules -------------------------------------------------------------------------------------

    @rule(timestamp=TIMESTAMPS, headers=HEADERS, topic=TOPICS, partition=st.integers(min_value=0, max_value=2))
    def set_context(self, timestamp: int, headers: tuple[tuple[str, bytes | None], ...], topic: str, partition: int) -> None:
        # Two topics and three partitions: the position rows differ in order only (OFF-8, normalised).
        excluded("OFF-8")
        self.offset += 1
        self.context = {"timestamp": timestamp, "headers": headers_to_json(headers), "topic": topic,
                        "partition": partition, "offset": self.offset}
        self.on_store("store.set_context", **self.context)

    @rule()
    def flush(self) -> None:
        self.on_store("store.flush")

    @rule()
    def commit(self) -> None:
        """As a task commits: flush the cache, then commit the changelog offset reached (never ahead: KV-57)."""
        excluded("KV-57")
        self.on_store("store.flush_cache")
        self.changelogs_agree()
        offset = len(self.logged) - 1 if self.logged else None
        self.on_store("store.commit", changelog_offsets=[[CHANGELOG, 0, offset]])
        self.on_store("store.committed_offset", topic=CHANGELOG, partition=0)

    def commit_and_close(self, handle: str, offset: int | None, commit: bool = True) -> None:
        """A shutdown: the task commits ``offset`` (unless ``commit`` is False), then closes the store; the rows
        on disk are compared, the position row's presence included (KV-56, KV-63: only a commit writes it)."""
        self.agree("store.flush_cache", {"handle": handle})
        self.agree("store.changelog", {"handle": handle})
        if commit:
            self.agree("store.commit", {"handle": handle, "changelog_offsets": [[CHANGELOG, 0, offset]]})
        self.close_both(handle)

    @rule(commit=st.booleans())
    def restart(self, commit: bool) -> None:
        """Commit (or not), close (the rows on disk compared), reopen the same store."""
        excluded("KV-12")
        assert self.handle is not None
        self.on_store("store.flush_cache")
        self.changelogs_agree()
        handle, self.handle = self.handle, None
        self.commit_and_close(handle, len(self.logged) - 1 if self.logged else None, commit)
        self.open_store()

    @rule(batch_size=st.integers(min_value=1, max_value=4))
    def restore_into_a_fresh_store(self, batch_size: int) -> None:
        """The changelog so far restored into a fresh store of the same type: its contents, its rows (RST-1)."""
        self.changelogs_agree()
        fresh = self.open_both(self.payload(name=self.fresh_name("fresh"), caching=False))
        assert fresh is not None
        self.agree("store.restore", {"handle": fresh, "records": self.logged, "batch_size": batch_size})
        self.read_everything(fresh)
        self.commit_and_close(fresh, len(self.logged) - 1 if self.logged else None)

    def read_everything(self, handle: str) -> None:
        raise NotImplementedError

    def teardown(self) -> None:
        try:
            if self.handle is not None:
                self.on_store("store.flush_cache")
                self.changelogs_agree()
                handle, self.handle = self.handle, None
                self.commit_and_close(handle, len(self.logged) - 1 if self.logged else None)
        finally:
            super().teardown()


# --- the registry of the families' machines ------------------------------------------------------------------------


class UnknownFamilyError(LookupError):
    """A family the paired runs have no machine for (its model module registers none); ``family`` names it, ``where``
    the lookup."""

    def __init__(self, family: object, where: str) -> None:
        super().__init__(f"{where}: no paired machine for the store family {family!r}")
        self.family = family
        self.where = where


@dataclass(frozen=True)
class PairedFamily:
    """A family's paired machine and how the suite's paired test runs it (``tests/test_paired_machines.py``)."""

    #: The family's name (``store_types.FAMILIES``).
    family: str
    machine: type[StorePair]
    #: The paired test's name (its test id): ``test_<name>_agrees_with_the_model``.
    name: str
    #: The stores the test runs the machine on: every store type on every backend (a single one is no parameter).
    store_types: tuple[str, ...]
    backends: tuple[str, ...]
    #: The rules the test checks (its ``rules`` mark).
    rules: tuple[str, ...]
    #: The test's docstring.
    doc: str
    #: Store type -> the values the machine writes, in the type's stored layout (:func:`stored_values`).
    values: Mapping[str, st.SearchStrategy[bytes]] = field(default_factory=dict)

    @property
    def test_name(self) -> str:
        return f"test_{self.name}_agrees_with_the_model"


_REGISTERED: dict[str, PairedFamily] = {}


def register(paired: PairedFamily) -> PairedFamily:
    """Register a family's paired machine (its model module does, at import)."""
    if paired.family in _REGISTERED:
        raise ValueError(f"a paired machine of the family {paired.family!r} registered twice")
    _REGISTERED[paired.family] = paired
    return paired


def paired_family(family: str) -> PairedFamily:
    """The paired machine of ``family``, found in its model module (``models/<family>.py``) by the family's name;
    :class:`UnknownFamilyError` for a family that is not in the table or whose model registers none."""
    if family not in _REGISTERED:
        if family not in types.FAMILY_NAMES:
            raise UnknownFamilyError(family, "paired_stores.paired_family")
        importlib.import_module(f"kstate_conformance.models.{family}")
    if family not in _REGISTERED:
        raise UnknownFamilyError(family, "paired_stores.paired_family")
    return _REGISTERED[family]


def paired_families() -> list[PairedFamily]:
    """Every family's paired machine, in the table's order (``store_types.FAMILIES``)."""
    return [paired_family(name) for name in types.FAMILY_NAMES]


def paired_machine(store_type: str) -> type[StorePair]:
    """The paired machine of ``store_type``'s family; :class:`~kstate_conformance.store_types.UnknownStoreTypeError`
    for a type of no family or one its family's machine is not run on, :class:`UnknownFamilyError` for a family
    without a machine."""
    family = types.FAMILY_OF.get(store_type)
    if family is None:
        raise types.UnknownStoreTypeError(store_type, "paired_stores.paired_machine")
    paired = paired_family(family)
    if store_type not in paired.store_types:
        raise types.UnknownStoreTypeError(store_type, f"the paired machine of the family {family!r}")
    return paired.machine
