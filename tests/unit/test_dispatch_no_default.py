"""No dispatch over store types or families ends in a default (issue 33, item 5): a family the table gains, or a
type a site has no branch for, is refused with a typed error naming it at each of the seven Python sites that used
to answer a plausible wrong default (session for "not window", window for "anything else", no writes, CL-16)."""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path

import pytest
from hypothesis import strategies as st

from kstate.codecs import store_types, type_detection
from kstate.codecs.store_types import STORE_TYPES, StoreType, UnknownFamilyError, UnknownStoreTypeError
from kstate.fixtures_tool.cases import changelog as changelog_cases
from kstate.ops import changelog_ops
from kstate.stores import type_check
from kstate_conformance import paired_stores, state_machines
from kstate_conformance import store_types as suite_types
from kstate_conformance.strategies import header_lists, nullable_binary


class _NewFamily(str, enum.Enum):
    """A family the table might gain: no dispatch site has a branch for it."""

    COLUMNAR = "columnar"


@pytest.fixture
def kv_of_a_new_family(monkeypatch: pytest.MonkeyPatch) -> StoreType:
    """The table with ``kv`` moved to a family no site knows, in every module that reads the table."""
    table = dict(STORE_TYPES)
    table[StoreType.KEY_VALUE] = dataclasses.replace(table[StoreType.KEY_VALUE], family=_NewFamily.COLUMNAR)  # type: ignore[arg-type]
    for module in (store_types, type_check, changelog_ops):
        monkeypatch.setattr(module, "STORE_TYPES", table)
    return StoreType.KEY_VALUE


def test_type_check_refuses_a_family_it_has_no_check_for(kv_of_a_new_family: StoreType, tmp_path: Path) -> None:
    """LAY-14: the check on disk names the family instead of passing it as a key-value store."""
    with pytest.raises(UnknownFamilyError, match="columnar"):
        type_check.check_store_type_on_disk(kv_of_a_new_family, tmp_path, "s", {})


def test_default_segment_interval_refuses_a_family_that_is_neither_window_nor_session() -> None:
    """"Not window" used to become session's default interval."""
    with pytest.raises(UnknownFamilyError, match="columnar"):
        type_check._segment_interval(_NewFamily.COLUMNAR, {"retention_ms": 60_000})  # type: ignore[arg-type]


@pytest.mark.parametrize(("found", "error"), [
    (StoreType.TIMESTAMPED_KV_WITH_HEADERS.value, UnknownFamilyError),
    ("nonesuch_window", UnknownStoreTypeError),
])
def test_segmented_family_detection_takes_the_family_from_the_table(
        monkeypatch: pytest.MonkeyPatch, found: str, error: type[Exception]) -> None:
    """LAY-5: a detected type that is no segmented type, or no type at all, is refused; it used to read as window."""
    monkeypatch.setattr(type_detection, "detect_segmented_type", lambda *_: (found, "column family x"))
    with pytest.raises(error, match=found if error is UnknownStoreTypeError else "key_value"):
        type_detection.detect_segmented_family([(0, {"x": []})])


def test_segmented_family_detection_still_reads_the_headers_families() -> None:
    """LAY-5: the headers column families name their family as before."""
    for cf, family in ((store_types.SESSION_HEADERS_CF, store_types.Family.SESSION),
                       (store_types.WINDOW_HEADERS_CF, store_types.Family.WINDOW),
                       (store_types.TIMESTAMPED_HEADERS_CF, store_types.Family.WINDOW),
                       (store_types.TIMESTAMPED_CF, store_types.Family.WINDOW)):
        assert type_detection.detect_segmented_family([(0, {cf: []})])[0] is family


def test_changelog_operations_refuse_a_family_without_changelog_writes(kv_of_a_new_family: StoreType) -> None:
    """CL-3 to CL-7: a family missing from the writes table is named; it used to log nothing."""
    with pytest.raises(UnknownFamilyError, match="columnar"):
        changelog_ops._operations(kv_of_a_new_family)


def test_topic_config_cases_cite_their_family_rule() -> None:
    """CL-15 to CL-17: the headers key-value case cites the key-value rule (it used to fall to CL-16)."""
    rules = {case.name: case.rules for case in changelog_cases.topic_cases()}
    assert rules["topic_config_timestamped_kv_headers"] == ("CL-15",)
    assert rules["topic_config_session_headers"] == ("CL-16",)
    assert rules["topic_config_versioned"] == ("CL-17",)


def test_topic_config_rules_refuse_unknown_types_and_families(kv_of_a_new_family: StoreType) -> None:
    with pytest.raises(UnknownStoreTypeError, match="nonesuch"):
        changelog_cases.topic_config_rules("nonesuch")
    with pytest.raises(UnknownFamilyError, match="columnar"):
        changelog_cases.topic_config_rules(kv_of_a_new_family.value)


@pytest.mark.parametrize("store_type", [suite_types.VERSIONED_KV, suite_types.TIME_ORDERED_WINDOW_WITH_HEADERS, "nonesuch"])
def test_paired_stored_values_refuse_a_type_without_a_layout_branch(store_type: str) -> None:
    """CL-1: a type the paired machines give no values for is named; it used to get headers values."""
    with pytest.raises(suite_types.UnknownStoreTypeError, match=store_type):
        paired_stores.stored_values(store_type)


def test_state_machine_layout_values_refuse_a_type_of_none_of_the_three_layouts() -> None:
    """TSKV-1, HV-6: a type that is neither plain, timestamped nor headers is named; it used to get headers values."""
    headers = header_lists(st.sampled_from(["a"]), nullable_binary(1), max_size=1).map(tuple)
    with pytest.raises(suite_types.UnknownStoreTypeError, match="session"):
        state_machines.layout_values(suite_types.SESSION, suite_types.KV, suite_types.TIMESTAMPED_KV, st.binary(),
                                     headers, with_headers=suite_types.TIMESTAMPED_KV_WITH_HEADERS)
