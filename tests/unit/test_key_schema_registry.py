"""The segmented families' key schemas are found by their modules' names (issue 33): each ``*_keys`` module's
SCHEMAS, plain layout first, and a typed refusal for a family without one."""

from __future__ import annotations

import pytest

from kstate.codecs import key_schemas, session_keys, window_keys
from kstate.codecs.store_types import Family, UnknownFamilyError


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
