"""Unit tests of the reference KIP-1271 codecs (kstate.codecs.header_values, kstate.codecs.java_text)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kstate.codecs import header_values as hv
from kstate.codecs.java_text import decode_utf8_java, encode_utf8_java
from kstate.codecs.record_headers import Headers
from kstate.errors import DecodeError, EncodeError
from kstate.ops import call, load_all

KEYS = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=10)
HEADERS = st.lists(st.tuples(KEYS, st.none() | st.binary(max_size=12)), max_size=6)
INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)

# Every answer below was checked against JDK 17's new String(bytes, UTF_8).
JDK_DECODES = [
    ("eda080", "\ufffd"), ("eda0", "\ufffd"), ("eda041", "\ufffdA"), ("f09f8e", "\ufffd"),
    ("f09f8e41", "\ufffdA"), ("c0af", "\ufffd\ufffd"), ("e080", "\ufffd\ufffd"), ("e0", "\ufffd"),
    ("f4908080", "\ufffd" * 4), ("f5808080", "\ufffd" * 4), ("ff", "\ufffd"), ("e282", "\ufffd"),
    ("e28241", "\ufffdA"), ("80", "\ufffd"), ("f09f", "\ufffd"), ("f0", "\ufffd"), ("ed9fbf", "\ud7ff"),
    ("f48fbfbf", "\U0010ffff"), ("f0808080", "\ufffd" * 4), ("e0a080", "\u0800"), ("41e2", "A\ufffd"),
    ("f09f41", "\ufffdA"), ("c2", "\ufffd"), ("c241", "\ufffdA"), ("e282ac", "\u20ac"),
]


# --- Java text ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "text"), JDK_DECODES)
def test_jdk_replacement_rules(data: str, text: str) -> None:
    assert decode_utf8_java(bytes.fromhex(data)) == text


def test_python_replace_differs_where_the_jdk_does() -> None:
    assert bytes.fromhex("eda080").decode("utf-8", "replace") == "\ufffd" * 3
    assert decode_utf8_java(bytes.fromhex("eda080")) == "\ufffd"


@given(st.binary(max_size=32))
def test_decoding_never_fails_and_never_yields_surrogates(data: bytes) -> None:
    text = decode_utf8_java(data)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    try:
        assert text == data.decode("utf-8")
    except UnicodeDecodeError:
        assert "\ufffd" in text


@given(st.text())
def test_encoding_matches_python_for_valid_text(text: str) -> None:
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert encode_utf8_java(text) == text.encode("utf-8")
        assert decode_utf8_java(encode_utf8_java(text)) == text


def test_unpaired_surrogates_become_question_marks_and_pairs_join() -> None:
    assert encode_utf8_java("a\ud800b") == b"a?b"
    assert encode_utf8_java("\udc00") == b"?"
    assert encode_utf8_java("\ud83c\udf89") == "\U0001f389".encode()
    assert encode_utf8_java("\udf89\ud83c") == b"??"


@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="no JDK on this machine")
def test_differential_against_the_jdk(tmp_path: Path) -> None:
    source = tmp_path / "Probe.java"
    source.write_text(
        "import java.io.*; import java.nio.charset.StandardCharsets;\n"
        "public class Probe { public static void main(String[] a) throws Exception {\n"
        " BufferedReader r = new BufferedReader(new InputStreamReader(System.in)); String l;\n"
        " StringBuilder out = new StringBuilder();\n"
        " while ((l = r.readLine()) != null) { byte[] b = new byte[l.length() / 2];\n"
        "  for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(l.substring(2*i, 2*i+2), 16);\n"
        "  String s = new String(b, StandardCharsets.UTF_8);\n"
        "  for (int i = 0; i < s.length(); i++) out.append(String.format(\"%04x\", (int) s.charAt(i)));\n"
        "  out.append('\\n'); }\n"
        " System.out.print(out); } }\n", encoding="utf-8")
    subprocess.run(["javac", str(source)], check=True, cwd=tmp_path)
    alphabet = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED,
                0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF]
    corpus = [bytes([a, b, c]) for a in alphabet for b in alphabet for c in alphabet]
    corpus += [bytes([a, b]) for a in alphabet for b in alphabet] + [bytes([a]) for a in alphabet]
    corpus += [bytes([0xF0, b, c, d]) for b in alphabet for c in (0x80, 0x41) for d in (0x80, 0xBF, 0x41)]
    proc = subprocess.run(["java", "-cp", str(tmp_path), "Probe"], input="\n".join(c.hex() for c in corpus) + "\n",
                          capture_output=True, text=True, check=True)
    lines = proc.stdout.split("\n")
    for data, line in zip(corpus, lines, strict=False):
        units = bytes(b for i in range(0, len(line), 4) for b in int(line[i:i + 4], 16).to_bytes(2, "little"))
        assert decode_utf8_java(data) == units.decode("utf-16-le", "surrogatepass"), data.hex()


# --- header bytes ----------------------------------------------------------------------------------------


def test_kafka_examples() -> None:
    assert hv.encode_headers(None) == b"" and hv.encode_headers([]) == b""
    assert hv.encode_value_timestamp_headers(b"v", 5, None) == bytes.fromhex("00000000000000000576")
    assert hv.encode_value_timestamp_headers(b"v", 5, [("a", b"x")]) == bytes.fromhex("0a0202610278000000000000000576")
    assert hv.encode_value_timestamp_headers(b"v", 5, [("a", None)]) == bytes.fromhex("0802026101000000000000000576")
    dup = hv.encode_value_timestamp_headers(b"v", 5, [("a", b"1"), ("a", b"2")])
    assert dup == bytes.fromhex("12040261023102610232000000000000000576")
    assert hv.encode_value_timestamp_headers(None, 5, [("a", b"x")]) is None


def test_headers_objects_are_accepted() -> None:
    headers = Headers([("a", b"1")]).add("b", None)
    assert hv.encode_headers(headers) == hv.encode_headers([("a", b"1"), ("b", None)])


def test_null_key_is_an_encode_error() -> None:
    with pytest.raises(EncodeError):
        hv.encode_headers([(None, b"")])  # type: ignore[list-item]


@given(HEADERS)
def test_header_round_trip(headers: list[tuple[str, bytes | None]]) -> None:
    data = hv.encode_headers(headers)
    assert (data == b"") == (not headers)
    assert hv.decode_headers(data) == headers
    assert hv.decode_headers(data, strict=True) == headers
    assert hv.header_bytes_leniencies(data) == []


def test_header_bytes_equal_the_v2_record_header_section(shared_vectors: Path) -> None:
    vectors = json.loads(shared_vectors.read_text(encoding="utf-8"))["vectors"]
    checked = 0
    for vector in vectors:
        if vector["group"] != "record_headers_v2" or not vector["input"].get("headers"):
            continue
        headers = [(k, None if v is None else bytes.fromhex(v)) for k, v in vector["input"]["headers"]]
        assert hv.encode_headers(headers).hex() == vector["output"]["headers_section"], vector["case"]
        checked += 1
    assert checked > 10


def test_leniencies_are_named_and_refused_when_strict() -> None:
    cases = {
        "01": "negative header count",
        "0202680100": "trailing bytes",
        "0202ff01": "invalid UTF-8",
        "0282006801": "non-canonical varint",
    }
    for data, reason in cases.items():
        notes = hv.header_bytes_leniencies(bytes.fromhex(data))
        assert any(reason in note for note in notes), (data, notes)
        with pytest.raises(DecodeError):
            hv.decode_headers(bytes.fromhex(data), strict=True)
    assert hv.decode_headers(bytes.fromhex("0282006801")) == [("h", None)]
    assert hv.decode_headers(b"\x00", strict=True) == []  # an explicit zero count is well-formed


@pytest.mark.parametrize("data", ["0201", "0202610300", "020261087878", "80", "ffffffffff01", "020a61", "7e02610178"])
def test_malformed_header_bytes_are_refused(data: str) -> None:
    with pytest.raises(DecodeError):
        hv.decode_headers(bytes.fromhex(data))


DECODERS = [
    hv.decode_headers, hv.decode_value_timestamp_headers, hv.raw_value_of, hv.timestamp_of_headers_value,
    hv.raw_headers_of, hv.headers_of, hv.decode_aggregation_with_headers, hv.raw_aggregation_of,
    hv.header_bytes_leniencies,
]


@given(st.binary(max_size=48))
def test_hostile_bytes_raise_only_decode_errors(data: bytes) -> None:
    for decode in DECODERS:
        try:
            result = decode(data)
        except DecodeError:
            continue
        if isinstance(result, (hv.ValueTimestampHeaders, hv.AggregationWithHeaders)):
            with contextlib.suppress(DecodeError):  # the lazy parse must fail typed too
                result.headers  # noqa: B018


def test_huge_length_fields_do_not_allocate() -> None:
    # Key length 2^30 - 1, header count 2^31 - 1, headersSize 2^31 - 1: each refused before any slice.
    hostile = [bytes.fromhex("02feffffff07") + b"k", bytes.fromhex("feffffff0f0000"), bytes.fromhex("feffffff0f") + bytes(8)]
    tracemalloc.start()
    try:
        for data in hostile:
            for decode in DECODERS:
                try:
                    result = decode(data)
                    if isinstance(result, (hv.ValueTimestampHeaders, hv.AggregationWithHeaders)):
                        result.headers  # noqa: B018
                except DecodeError:
                    pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


# --- ValueTimestampHeaders, laziness, static helpers -------------------------------------------------------


@given(st.binary(max_size=16), INT64, HEADERS)
def test_value_round_trip(value: bytes, timestamp: int, headers: list[tuple[str, bytes | None]]) -> None:
    data = hv.encode_value_timestamp_headers(value, timestamp, headers)
    assert data is not None
    decoded = hv.decode_value_timestamp_headers(data)
    assert decoded is not None and not decoded.headers_decoded
    assert (decoded.value, decoded.timestamp, decoded.headers) == (value, timestamp, headers)
    assert decoded.headers_decoded and decoded.to_bytes() == data
    assert decoded == hv.ValueTimestampHeaders.make(value, timestamp, headers)
    assert hv.raw_value_of(data) == value and hv.timestamp_of_headers_value(data) == timestamp
    assert hv.headers_of(data) == headers and hv.raw_headers_of(data) == hv.encode_headers(headers)


@pytest.mark.parametrize("garbage", ["0201", "020a61", "02026105", "feffffff0f", "ff"])
def test_value_and_timestamp_of_garbage_header_bytes_do_not_raise(garbage: str) -> None:
    section = bytes.fromhex(garbage)
    data = bytes([len(section) * 2]) + section + (7).to_bytes(8, "big") + b"value"
    decoded = hv.decode_value_timestamp_headers(data)
    assert decoded is not None
    assert (decoded.value, decoded.timestamp, decoded.raw_headers) == (b"value", 7, section)
    assert not decoded.headers_decoded
    assert hv.raw_value_of(data) == b"value" and hv.timestamp_of_headers_value(data) == 7
    with pytest.raises(DecodeError):
        decoded.headers  # noqa: B018
    aggregation = hv.decode_aggregation_with_headers(bytes([len(section) * 2]) + section + b"agg")
    assert aggregation is not None and aggregation.aggregation == b"agg"
    assert hv.raw_aggregation_of(bytes([len(section) * 2]) + section + b"agg") == b"agg"
    with pytest.raises(DecodeError):
        aggregation.headers  # noqa: B018


def test_static_helpers_follow_kafka_on_a_negative_headers_size() -> None:
    data = bytes.fromhex("01000000000000000000")
    assert hv.raw_value_of(data) == b"\x00\x00"
    assert hv.timestamp_of_headers_value(data) == 72057594037927936
    for strict_read in (hv.raw_value_of, hv.timestamp_of_headers_value):
        with pytest.raises(DecodeError):
            strict_read(data, strict=True)
    for refused in (hv.decode_value_timestamp_headers, hv.headers_of):
        with pytest.raises(DecodeError):
            refused(data)
    with pytest.raises(DecodeError):
        hv.timestamp_of_headers_value(None)
    assert hv.raw_value_of(None) is None and hv.headers_of(None) is None


def test_conversions_and_restore() -> None:
    assert hv.convert_to_header_format(b"\x01") == b"\x00\x01" and hv.convert_to_header_format(None) is None
    assert hv.convert_from_plain_to_header_format(b"v") == b"\x00" + b"\xff" * 8 + b"v"
    assert hv.convert_from_plain_to_header_format(None) is None
    headers = [("a", b"x"), ("v", b"\x00")]
    assert hv.raw_value_to_headers_value(b"v", 5, headers) == hv.encode_value_timestamp_headers(b"v", 5, headers)
    assert hv.raw_value_to_session_headers_value(b"g", headers) == hv.encode_aggregation_with_headers(b"g", headers)
    assert hv.raw_value_to_headers_value(None, 5, headers) is None
    assert hv.raw_value_to_session_headers_value(None, headers) is None


def test_raw_aggregation_quirks() -> None:
    assert hv.raw_aggregation_of(b"\x00abc") == b"abc"
    assert hv.raw_aggregation_of(bytes.fromhex("016162")) == bytes.fromhex("016162")  # size -1 moves back one
    with pytest.raises(DecodeError):
        hv.raw_aggregation_of(b"")
    with pytest.raises(DecodeError):
        hv.raw_aggregation_of(bytes.fromhex("036162"))  # size -2 moves before the start


def test_ops_flag_what_kafka_merely_tolerates() -> None:
    specs = load_all()
    deserialize = specs["header_values.deserialize"].lenient
    headers = specs["header_values.deserialize_headers"].lenient
    assert deserialize is not None and headers is not None
    assert deserialize({"bytes": "01000000000000000000"}) is not None
    assert deserialize({"bytes": "7f00"}) is None  # every part refused: nothing accepted
    assert deserialize({"bytes": "0a0202610278000000000000000576"}) is None
    assert headers({"bytes": "01"}) is not None and headers({"bytes": "02026101"}) is None
    out = call("header_values.deserialize", {"bytes": "040201000000000000000576"})
    assert "error" in out["deserialize"] and out["static_value"] == {"value": "76"}
