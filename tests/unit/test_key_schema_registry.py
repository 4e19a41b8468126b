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
