"""The segmented families' key schemas are found by their modules' names (issue 33): each ``*_keys`` module's
SCHEMAS, plain layout first, and a typed refusal for a family without one."""

from __future__ import annotations

import pytest

from kstate.codecs import key_schemas, session_keys, window_keys
from kstate.codecs.store_types import SESSION_HEADERS_CF, Family, UnknownFamilyError, ValueFormat
from kstate.errors import DecodeError
from kstate.inspect import state_dir


def test_every_key_module_is_found_by_its_name() -> None:
    assert key_schemas.segmented_schemas() == {"session": session_keys.SCHEMAS, "window": window_keys.SCHEMAS}


def test_the_plain_schema_is_the_families_first() -> None:
    assert key_schemas.plain_schema(Family.SESSION) is session_keys.PLAIN
    assert key_schemas.plain_schema("window") is window_keys.PLAIN


def test_a_family_without_key_schemas_is_refused_by_name() -> None:
    with pytest.raises(UnknownFamilyError, match="'versioned'"):
        key_schemas.plain_schema(Family.VERSIONED)


def test_the_registry_is_read_once() -> None:
    assert key_schemas.segmented_families() is key_schemas.segmented_families()
    assert key_schemas.segmented_schemas() is not key_schemas.segmented_families()  # a copy the caller may change


def test_each_family_gives_what_the_shared_store_code_asks_of_it() -> None:
    """WIN-16, SESS-11: the default segment interval; LAY-5: the readings of a segment's keys, plain first."""
    for family, module in (("window", window_keys), ("session", session_keys)):
        plain = key_schemas.plain_schema(family)
        assert plain.default_segment_interval(86_400_000) == module.default_segment_interval(86_400_000)
        readings = plain.segment_readings()
        assert readings[0].name == family
        assert readings[0].plausible(plain.to_store_key(b"k", 5, 7), 0, None)
    assert [r.name for r in window_keys.PLAIN.segment_readings()] == ["window", window_keys.TIME_ORDERED]


def test_a_row_key_is_shown_by_its_schema() -> None:
    """SESS-1, SESS-4, WIN-1: the record key and the key's times, worked out by hand from the layouts; a session whose
    end is before its start is refused, as the dump reports a bad row."""
    session_key = b"k" + (61_000).to_bytes(8, "big") + (60_100).to_bytes(8, "big")  # [key][end][start]
    assert session_keys.PLAIN.shown(session_key) == (b"k", {"session": {"start": 60_100, "end": 61_000}})
    window_key = b"k" + (60_500).to_bytes(8, "big") + (3).to_bytes(4, "big")  # [key][start][seqnum]
    assert window_keys.PLAIN.shown(window_key) == (b"k", {"window": {"start": 60_500}, "seqnum": 3})
    with pytest.raises(DecodeError):
        session_keys.PLAIN.shown(b"k" + (5).to_bytes(8, "big") + (6).to_bytes(8, "big"))


def test_a_segmented_family_without_a_row_module_is_shown_by_its_key_schema() -> None:
    """The session family writes no ``kstate.inspect.session_rows``: its plain schema shows its rows, and its
    header-aware column family keeps the table's layout of the type whose data it is (LAY-5, issue 33)."""
    rows = state_dir.family_rows()[Family.SESSION]
    assert isinstance(rows, state_dir.SchemaRows) and rows.schema is session_keys.PLAIN
    assert rows.VALUE_FORMATS[SESSION_HEADERS_CF] is ValueFormat.AGGREGATION_WITH_HEADERS
    assert not isinstance(state_dir.family_rows()[Family.WINDOW], state_dir.SchemaRows)
