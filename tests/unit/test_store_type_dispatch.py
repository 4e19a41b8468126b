"""Every dispatch on a store type asks the table of store types (issue 26, item 1): the answers that were wrong
for ``versioned_kv_with_headers``, worked out by hand from the rule texts, then every built type through every
dispatch site."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest

from kstate import java_store_types
from kstate.codecs import layout, versioned
from kstate.codecs.store_types import (
    BUILT_TYPES,
    OFFSETS_CF,
    STORE_TYPES,
    Family,
    StoreType,
    UnknownStoreTypeError,
    encode_stored_value,
)
from kstate.inspect.state_dir import decode_row, row_decoder
from kstate.ops import call
from kstate.spark.oracle import STATE_BUILDERS, expected_value
from kstate.spark.semantics import (
    AuditSetupError,
    FamilyParameters,
    check_parameters,
    read_store_entries,
    semantics_for,
)

# Header bytes of [("a", 78)] (HV-1, HV-2): count 1 = 02, key length 1 = 02, "a" = 61, value length 1 = 02, 78;
# five bytes, so the zig-zag size varint is 0a (HV-11). The stored value of the raw value 76 is then:
_STORED_A78 = "0a020261027876"
# [("a", 78), ("n", null), ("a", 79)]: count 06; 02 61 02 78; 02 6e 01; 02 61 02 79: twelve bytes, size 18.
_STORED_THREE = "180602610278026e010261027976"


def test_restore_value_of_the_versioned_headers_type_reports_the_put_timestamp() -> None:
    """VS-27, CL-9: a restored record is put at its timestamp, every record header in front of the value."""
    record = {"key": "6b", "value": "76", "timestamp": 77, "headers": [["a", "78"], ["n", None], ["a", "79"]]}
    out = call("changelog.restore_value", {"store_type": "versioned_kv_with_headers", "record": record})
    assert out == {"key": "6b", "value": _STORED_THREE, "timestamp": 77}


def test_record_for_write_of_the_versioned_headers_type() -> None:
    """VS-26, CL-5: a put logs the raw value at the version timestamp with the version's headers; a delete or a null
    put logs a tombstone at the version timestamp with the record context's headers."""
    context = {"timestamp": 1000, "headers": [["h", "01"]]}
    base = {"store_type": "versioned_kv_with_headers", "key": "6b", "context": context}
    put = call("changelog.record_for_write", {**base, "operation": "put", "value": _STORED_A78, "timestamp": 42})
    assert put == {"record": {"key": "6b", "value": "76", "timestamp": 42, "headers": [["a", "78"]]}}
    delete = call("changelog.record_for_write", {**base, "operation": "delete", "timestamp": 43})
    assert delete == {"record": {"key": "6b", "value": None, "timestamp": 43, "headers": [["h", "01"]]}}
    null_put = call("changelog.record_for_write", {**base, "operation": "put", "value": None, "timestamp": 44})
    assert null_put == {"record": {"key": "6b", "value": None, "timestamp": 44, "headers": [["h", "01"]]}}


def test_inspect_decodes_versioned_headers_rows_as_versions_with_headers() -> None:
    """VS-25, VER-2, VER-4: the latest-value row and segment rows of the headers type are versioned rows whose
    values are ``[hsize][headers][value]``."""
    latest = decode_row("versioned_kv_with_headers", "default", versioned.latest_value_key(b"k"),
                        versioned.encode_latest_value(bytes.fromhex(_STORED_A78), 2_500))
    assert (latest["segment"], latest["key"], latest["value"], latest["timestamp"]) == ("latest", "k", "v", 2_500)
    assert latest["headers"] == [["a", "x"]]
    segment_value = versioned.new_segment_value_with_record(bytes.fromhex(_STORED_A78), 100, 2_500).serialize()
    older = decode_row("versioned_kv_with_headers", "default", versioned.segment_key(0, b"k"), segment_value)
    assert (older["segment"], older["key"]) == (0, "k")
    assert older["versions"] == [{"valid_from": 100, "valid_to": 2_500, "value": "v", "headers": [["a", "x"]]}]


# --- every built type through every dispatch site ---------------------------------------------------------

_CONTEXT = {"timestamp": 1000, "headers": [["c", "63"]]}
_HEADERS = [("h", b"h")]
#: Per family: the store's options, and the write op and its fields beside key and value. A family added to the
#: table without an entry here fails this test until it is given one.
_FAMILY_WRITES: dict[Family, tuple[dict[str, Any], str, dict[str, Any]]] = {
    Family.KEY_VALUE: ({}, "store.put", {}),
    Family.VERSIONED: ({"history_retention_ms": 60_000}, "versioned_store.put",
                       {"timestamp": 1000, "headers": [["h", "68"]]}),
    Family.WINDOW: ({"retention_ms": 60_000, "window_size_ms": 1000}, "window_store.put", {"window_start": 1000}),
    Family.SESSION: ({"retention_ms": 60_000}, "session_store.put", {"start": 1000, "end": 1000}),
}
#: What ``changelog.record_for_write`` needs beside the key and value, per family (CL-3 to CL-7).
_RECORD_FIELDS: dict[Family, dict[str, Any]] = {
    Family.KEY_VALUE: {"operation": "put"},
    Family.VERSIONED: {"operation": "put", "timestamp": 1000},
    Family.WINDOW: {"operation": "put", "window_start": 1000},
    Family.SESSION: {"operation": "put", "start": 1000, "end": 1000},
}


def _ok(name: str, payload: dict[str, Any]) -> dict[str, Any]:
    out = call(name, payload)
    assert "error" not in out, (name, out)
    return out


def _dumped_rows(dump: dict[str, Any]) -> list[tuple[str, bytes, bytes]]:
    """``(column family, key, value)`` of every data row of a ``store.dump`` answer, segments flattened."""
    databases = list(dump["segments"].values()) if "segments" in dump else [dump["column_families"]]
    return [(cf, bytes.fromhex(k), bytes.fromhex(v)) for families in databases for cf, rows in families.items()
            if cf != OFFSETS_CF for k, v in rows]


@pytest.mark.parametrize("store_type", BUILT_TYPES, ids=[t.value for t in BUILT_TYPES])
def test_every_built_type_passes_every_dispatch_site(tmp_path: Path, store_type: StoreType) -> None:
    """One write through store open, change-logging, record_for_write, restore_value (CL-3 to CL-11, VS-26, VS-27),
    inspect's decode_row (LAY-5), the oracle's conversions and the audit's semantics answers for every built type."""
    info = STORE_TYPES[store_type]
    options, write_op, fields = _FAMILY_WRITES[info.family]
    stored = encode_stored_value(store_type, b"v", 1000, _HEADERS)
    assert stored is not None
    # Store open and the family's write op; the versioned ops take the raw value and encode it themselves (VS-25).
    where = {"state_dir": str(tmp_path), "application_id": "app", "task_id": "0_0", "name": "s"}
    handle = _ok("store.open", {"store_type": store_type.value, "backend": "rocksdb", **where, "options": options})["handle"]
    _ok("store.set_context", {"handle": handle, **_CONTEXT})
    written = b"v" if info.family is Family.VERSIONED else stored
    _ok(write_op, {"handle": handle, "key": b"k".hex(), "value": written.hex(), **fields})
    logged = _ok("store.changelog", {"handle": handle})["records"]
    _ok("store.close", {"handle": handle})
    assert len(logged) == 1
    record = {k: logged[0][k] for k in ("key", "value", "timestamp", "headers")}

    # Changelog ops: the record the store logged, and restore converts it back to the stored value (CL-9 to CL-11).
    for_write = _ok("changelog.record_for_write", {"store_type": store_type.value, "key": b"k".hex(),
                                                   "value": stored.hex(), "context": _CONTEXT,
                                                   **_RECORD_FIELDS[info.family]})
    assert for_write["record"] == record
    restored = _ok("changelog.restore_value", {"store_type": store_type.value, "record": record})
    assert restored["value"] == stored.hex()
    assert ("timestamp" in restored) is (info.family is Family.VERSIONED)

    # Inspect: every row on disk decodes by the type to ``v`` (and its header).
    rows = _dumped_rows(_ok("store.dump", {"store_type": store_type.value, **where}))
    assert rows
    for cf, key, value in rows:
        decoded = decode_row(store_type, cf, key, value)
        assert row_decoder(store_type, cf)(key, value) == decoded  # the dump's per-family decoder (issue 35)
        assert decoded["key"] == "k" and decoded.get("value", "v") == "v", decoded
        versions = decoded.get("versions", [decoded])
        assert all(v["value"] == "v" and v.get("headers", [["h", "h"]]) == [["h", "h"]] for v in versions), decoded
        assert ("headers" in versions[0]) is info.stores_headers

    # The oracle's pure conversions and the audit's semantics, per family.
    if info.family is Family.KEY_VALUE:
        assert store_type in STATE_BUILDERS
        headers = [(k, None if v is None else bytes.fromhex(v)) for k, v in record["headers"]]
        assert expected_value(store_type, None, b"k", b"v", record["timestamp"], headers) == stored
    else:
        check_parameters(store_type, FamilyParameters(retention_ms=60_000, history_retention_ms=60_000))
        entries = read_store_entries(store_type, 0, tmp_path / "app" / "0_0" / layout.store_dir(store_type, "s"))
        assert len(entries) == 1 and entries[0][1] == b"k"
        assert b"v" in entries[0] and ([("h", b"h")] in entries[0]) is info.stores_headers


def test_an_unknown_store_type_is_refused_by_name_at_every_site() -> None:
    """No dispatch falls through to a default: a type the table does not know is refused, naming it."""
    for name, payload in (("changelog.record_for_write", {"operation": "put", "key": "6b", "context": _CONTEXT}),
                          ("changelog.restore_value", {"record": {"key": "6b", "value": "76", "timestamp": 1}}),
                          ("store.open", {"backend": "memory"})):
        out = call(name, {**payload, "store_type": "nonesuch_kv"})
        assert "nonesuch_kv" in out["error"]["message"], (name, out)
    with pytest.raises(UnknownStoreTypeError, match="nonesuch_kv"):
        decode_row("nonesuch_kv", "default", b"k", b"v")
    with pytest.raises(UnknownStoreTypeError, match="nonesuch_kv"):
        row_decoder("nonesuch_kv", "default")(b"k", b"v")
    with pytest.raises(AuditSetupError):
        semantics_for(StoreType.TIME_ORDERED_WINDOW_WITH_HEADERS)


@pytest.mark.parametrize("value", [b"\x00" * 8 + b"text", b"\x00" * 8 + b"\xff\xfe", b"\x00" * 8 + b"0xab", b"\x00" * 7,
                                   b"\x00" * 8 + b"\x00\x01", b"\x80" * 8 + "é".encode(), b"\x01" * 8,
                                   b"\x00" * 8 + b"\xed\xa0\x80"])
@pytest.mark.parametrize("key", [b"k", b"\xff", b"0x12", b"line\n", b"", "ü".encode(), b"\xed\xa0\x80"])
def test_the_key_value_row_decoder_answers_as_decode_row(key: bytes, value: bytes) -> None:
    """The per-family decoder of a dump (issue 35) answers what decode_row answers, or fails as it fails (LAY-5)."""
    for store_type, cf in ((StoreType.TIMESTAMPED_KV, "keyValueWithTimestamp"), (StoreType.KEY_VALUE, "default"),
                           (StoreType.TIMESTAMPED_KV, "default"), (StoreType.TIMESTAMPED_KV, "nonesuch")):
        outcomes = []
        for decode in (functools.partial(decode_row, store_type, cf), row_decoder(store_type, cf)):
            try:
                outcomes.append(decode(key, value))
            except Exception as exc:  # compared by type and text
                outcomes.append((type(exc), str(exc)))
        assert outcomes[0] == outcomes[1], (store_type, cf)
# --- the Java side: the generated table, and every switch over store types ends in a throw (issue 33, item 5) ----

_ROOT = Path(__file__).resolve().parents[2]
_JAVA_SOURCES = ("testees/kafka-jvm/src/main/java", "instances/kafka-streams/src/main/java", java_store_types.SHARED_JAVA)
#: The selectors of the switches over a store type, or over a family (``family``), in the Java sources.
_STORE_TYPE_SELECTORS = ("type", "storeType", "c.storeType", "config.storeType", "family")


def _switch_bodies(source: str) -> list[tuple[int, str]]:
    """``(line, body)`` of every ``switch`` over a store type in ``source``, its body up to the matching brace."""
    found = []
    for match in re.finditer(r"switch \(([\w.]+)\) \{", source):
        if match.group(1) not in _STORE_TYPE_SELECTORS:
            continue
        depth, end = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(source[end], 0)
            end += 1
        found.append((source.count("\n", 0, match.start()) + 1, source[match.end():end - 1]))
    return found


def test_the_java_store_type_table_is_current() -> None:
    """The generated ``StoreTypes.java`` that both Maven projects compile says what ``kstate.codecs.store_types``
    says now (regenerate with ``python -m kstate.java_store_types``)."""
    assert not java_store_types.is_stale(_ROOT)
    rendered = java_store_types.render()
    for store_type in StoreType:
        assert f'public static final String {store_type.name} = "{store_type.value}";' in rendered
        assert f"case {store_type.name}: return FAMILY_{STORE_TYPES[store_type].family.name};" in rendered


def test_the_java_table_answers_per_family_and_type_as_the_table() -> None:
    """The generated lookups the Java parts read instead of naming a family (issue 33): the families in order, each
    family's types, and per type its column families (LAY-5 to LAY-8), whether it is segmented and keeps headers."""
    rendered = java_store_types.render()
    assert f"FAMILIES = List.of({', '.join(f'FAMILY_{f.name}' for f in Family)});" in rendered
    for family in Family:
        types = ", ".join(t.name for t in StoreType if STORE_TYPES[t].family is family)
        assert f"case FAMILY_{family.name}: return List.of({types});" in rendered
    for store_type, info in STORE_TYPES.items():
        assert info.column_families is not None
        upgrades = ", ".join(f'"{u.source_cf}"' for u in info.column_families.upgrades)
        assert f'case {store_type.name}: return "{info.column_families.data_cf}";' in rendered
        assert f"case {store_type.name}: return List.of({upgrades});" in rendered
    for method in ("segmented", "dataColumnFamily", "upgradeColumnFamilies", "storesHeaders"):
        assert f'default: throw unknown(storeType, "StoreTypes.{method}");' in rendered
    assert 'default: throw unknown(family, "StoreTypes.types");' in rendered


def test_every_family_has_its_class_in_the_kafka_streams_instance() -> None:
    """The instance finds a family's class by the family's name (``Families.family``: ``key_value`` ->
    ``KeyValueFamily``), so every family of the table has one (issue 33)."""
    folder = _ROOT / "instances/kafka-streams/src/main/java/kstate/streams"
    for family in Family:
        name = "".join(word.capitalize() for word in family.value.split("_")) + "Family"
        source = (folder / f"{name}.java").read_text(encoding="utf-8")
        assert f"final class {name} implements StoreFamily" in source, name


def test_both_java_projects_compile_the_one_table() -> None:
    """One ``StoreTypes.java``, in ``java-shared/``: each pom adds that directory as a source root, and no project
    keeps a copy of its own (issue 33)."""
    for project in ("testees/kafka-jvm", "instances/kafka-streams"):
        pom = (_ROOT / project / "pom.xml").read_text(encoding="utf-8")
        assert "<source>${project.basedir}/../../" + java_store_types.SHARED_JAVA + "</source>" in pom, project
        assert java_store_types.shared_sources(_ROOT / project) == _ROOT / java_store_types.SHARED_JAVA
        assert not list((_ROOT / project / "src").rglob("StoreTypes.java")), project


def test_a_stale_java_table_is_reported(tmp_path: Path) -> None:
    assert java_store_types.write(tmp_path)
    assert not java_store_types.is_stale(tmp_path)
    assert not java_store_types.write(tmp_path)
    (tmp_path / java_store_types.JAVA_FILE).write_text(java_store_types.render().replace('"kv"', '"kv2"'),
                                                       encoding="utf-8")
    assert java_store_types.is_stale(tmp_path)
    assert java_store_types.main(["--root", str(tmp_path), "--check"]) == 1
    assert java_store_types.main(["--root", str(tmp_path)]) == 0
    assert java_store_types.main(["--root", str(tmp_path), "--check"]) == 0


def test_every_java_switch_over_store_types_uses_the_table_and_ends_in_a_throw() -> None:
    """No Java switch over a store type or a family answers a default (the headers key-value store, the session
    options, the window processor, the key-value topic config...): its labels are the generated constants and its
    ``default`` throws the table's error."""
    switches = 0
    for folder in _JAVA_SOURCES:
        for path in sorted((_ROOT / folder).rglob("*.java")):
            if path.name == "StoreTypes.java":
                continue
            for line, body in _switch_bodies(path.read_text(encoding="utf-8")):
                where = f"{path.relative_to(_ROOT)}:{line}"
                switches += 1
                assert not re.search(r'case\s+"', body), f"{where}: a store type spelled as a literal"
                defaults = re.findall(r"default\s*(?::|->)\s*(\S+\s+[\w.]+\()", body)
                assert defaults == ["throw StoreTypes.unknown("], f"{where}: default {defaults}"
    # The testee's builders over a family's types (KeyValueFamily, WindowFamily x1: its dispatch over families is its
    # family classes, StoreFamily); the instance's family classes over their types (11).
    assert switches >= 13
