"""The operation index (spec/ops-index.md, ``kstate ops``): in sync with the registry, complete, and true."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kstate.cli import main
from kstate.ops import call, load_all
from kstate.ops.compare import differences
from kstate.ops.fields import REQUIRED
from kstate.ops.index import Shape, build_index, declared_ops, render_markdown, run_store_session

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def index() -> list[dict[str, Any]]:
    return build_index(ROOT / "fixtures")


def test_the_spec_index_is_what_the_registry_and_fixtures_generate(index: list[dict[str, Any]]) -> None:
    assert (ROOT / "spec" / "ops-index.md").read_text(encoding="utf-8") == render_markdown(index), (
        "spec/ops-index.md is stale: run kstate ops --write"
    )


def test_every_operation_has_fields_and_an_example(index: list[dict[str, Any]]) -> None:
    assert [entry["name"] for entry in index] == sorted(load_all())
    bare = [e["name"] for e in index if e["example"] is None or not (e["inputs"] or e["outputs"] or e["fixture_cases"])]
    assert not bare, f"operations a porter could not write from the index: {bare}"
    assert not [n for n in load_all() if n.startswith("store.") and n not in declared_ops()]


def test_store_examples_use_only_declared_fields() -> None:
    from kstate.ops.index import _fixture_cases

    session = run_store_session()
    with_fixtures = set(_fixture_cases(ROOT / "fixtures"))
    declared = declared_ops()
    shown = {op for op, _, _ in session}
    assert set(declared) - with_fixtures <= shown <= set(declared), "the session shows every store operation"
    for name, payload, output in session:
        inputs, outputs = {f.name for f in declared[name].inputs or ()}, {o.name: o for o in declared[name].outputs}
        assert set(payload) <= inputs, f"{name}: undeclared input fields {set(payload) - inputs}"
        assert set(output) <= set(outputs), f"{name}: undeclared output fields {set(output) - set(outputs)}"
        required = {k for k, o in outputs.items() if not o.optional}
        assert required <= set(output), f"{name}: declared output fields missing {required - set(output)}"


def test_declared_defaults_are_what_the_parse_gives() -> None:
    """A field left out takes the default the index shows (OPS-2): the declaration is the parse."""
    checked = 0
    for name, spec in declared_ops().items():
        for field in spec.inputs or ():
            if field.default in (REQUIRED, None):
                continue
            assert field.parse({}) == field.default, f"{name}.{field.name}"
            checked += 1
    assert checked >= 20


def test_fixture_examples_replay_against_the_reference(index: list[dict[str, Any]]) -> None:
    for entry in index:
        if entry["fixture_cases"]:
            example = entry["example"]
            actual = call(entry["name"], example["input"])
            assert not differences(example["output"], actual), (entry["name"], example["case"])


def test_types_are_derived_from_the_cases(index: list[dict[str, Any]]) -> None:
    by_name = {e["name"]: e for e in index}
    assert by_name["varint.write_varint"]["inputs"] == [{"name": "value", "type": "int", "required": True}]
    assert by_name["varint.write_varint"]["outputs"] == [{"name": "bytes", "type": "hex", "required": True},
                                                         {"name": "size", "type": "int", "required": True}]
    headers = {f["name"]: f for f in by_name["header_values.serialize"]["inputs"]}
    assert headers["headers"]["type"] == "list[[string, hex | null]] | null"
    assert headers["value"]["type"] == "hex | null"
    assert by_name["varint.read_varint"]["lenient"] and not by_name["varint.write_varint"]["lenient"]
    assert by_name["varint.write_varint"]["kafka"] == ["ByteUtils.writeVarint"]


def test_shapes() -> None:
    shape = Shape()
    for value in ({"a": "00", "b": 1}, {"a": None, "c": [["k", "01"], ["j", None]]}, {"a": "xyz"}):
        shape.add(value)
    assert shape.render() == "{a: string | null, b?: int, c?: list[[string, hex | null]]}"
    refusal = Shape()
    refusal.add({"error": {"type": "X"}})
    refusal.add("ff")
    assert refusal.render() == "hex | error"


def test_kstate_ops_json_and_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ops", "--json", "varint.write_varint"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [op["name"] for op in document["operations"]] == ["varint.write_varint"]
    stale = tmp_path / "ops-index.md"
    stale.write_text("old\n")
    assert main(["ops", "--check", "--file", str(stale)]) == 1
    assert main(["ops", "--write", "--file", str(stale)]) == 0
    assert main(["ops", "--check", "--file", str(stale)]) == 0
    assert main(["ops", "no.such_op"]) == 2
    capsys.readouterr()
    assert main(["ops"]) == 0
    overview = capsys.readouterr().out
    assert f"{len(load_all())} operations" in overview and "store.put_if_absent" in overview
    assert main(["ops", "store.get"]) == 0
    detail = capsys.readouterr().out
    assert "### `store.get`" in detail and "ReadOnlyKeyValueStore.get" in detail and "### `store.put`" not in detail


def test_store_scenario_is_marked_not_for_testees(index: list[dict[str, Any]]) -> None:
    """OPS-5: the harness expands a scenario; the index says a testee does not implement it, and only it."""
    harness_only = [e["name"] for e in index if not e["testee"]]
    assert harness_only == ["store.scenario"]
    text = render_markdown(index)
    assert "| [`store.scenario`](#storescenario) | OPS-5 | — | harness only |" in text
    assert "**Harness only, not for testees.**" in text


def test_no_conformance_test_sends_a_harness_only_operation() -> None:
    """OPS-5: the wrong-JSON-types test confuses every fixture operation but the scenario, so a testee is never sent
    it and the report never counts it as unsupported."""
    from kstate.ops.index import HARNESS_ONLY
    from kstate_conformance.tests.test_hostile_input import CODEC_EXAMPLES

    assert not set(HARNESS_ONLY) & set(CODEC_EXAMPLES)


def test_store_open_names_every_built_store_type(index: list[dict[str, Any]]) -> None:
    """OPS-2: store.open opens a store of any built type, of every family; the note lists them all."""
    from kstate.codecs.store_types import BUILT_TYPES

    (store_type,) = [f for e in index if e["name"] == "store.open" for f in e["inputs"] if f["name"] == "store_type"]
    assert all(t.value in store_type["note"] for t in BUILT_TYPES)
    assert "versioned_kv_with_headers" in store_type["note"] and "session_with_headers" in store_type["note"]


def test_a_reader_that_leaves_early_is_no_traceback() -> None:
    # `kstate ops --json | head`: the output is larger than a pipe's buffer, so the write meets the closed pipe.
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(["reference_impl", "conformance"])}
    proc = subprocess.Popen([sys.executable, "-m", "kstate.cli", "ops", "--json"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=Path(__file__).resolve().parents[1])
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err


def test_github_anchors_are_the_ones_github_renders() -> None:
    """Anchors as GitHub builds them: lowercase, punctuation dropped but - and _, spaces as -, repeats -1, -2."""
    from kstate.ops.index import github_anchor, heading_anchors

    assert github_anchor("HV-1: Header bytes are empty for no headers, else a count and the headers") == (
        "hv-1-header-bytes-are-empty-for-no-headers-else-a-count-and-the-headers")
    assert github_anchor("OFF-9: `position` in [the checkpoint](offsets.md) (v2)") == (
        "off-9-position-in-the-checkpoint-v2")
    assert github_anchor("`store.put_all`") == "storeput_all"
    assert (ROOT / "spec" / "header-values.md").exists()
    spec_anchors = {anchor for _, anchor in heading_anchors(ROOT / "spec" / "ops-index.md")}
    assert {"summary", "storeput_all", "header_valuesserialize"} <= spec_anchors


def test_every_rule_link_resolves_to_a_heading_that_exists(index: list[dict[str, Any]]) -> None:
    """Each entry links its rules to their text; every link names a spec file and one of its headings."""
    import re

    from kstate.ops.index import heading_anchors

    text = render_markdown(index)
    links = re.findall(r"\[([A-Z]+-\d+)\]\(([^)#]+)#([^)]+)\)", text)
    assert len(links) >= 300, "every entry's rules are links"
    anchors: dict[str, dict[str, str]] = {}
    for rule, document, anchor in links:
        if document not in anchors:
            assert (ROOT / "spec" / document).is_file(), f"{rule}: no spec file {document}"
            anchors[document] = {a: heading for heading, a in heading_anchors(ROOT / "spec" / document)}
        heading = anchors[document].get(anchor)
        assert heading is not None, f"{rule}: {document} has no heading #{anchor}"
        assert heading.startswith(f"{rule}: "), f"{rule} links to the heading of another rule: {heading}"
    unlinked = [(e["name"], r) for e in index for r in e["rules"] if r not in e["rule_links"]]
    assert not unlinked, f"rules with no heading in spec/: {unlinked}"


def test_examples_prefer_hand_worked_then_recorded_cases(index: list[dict[str, Any]]) -> None:
    """A porter sees a hand-worked case's bytes where one exists, else Kafka's recorded bytes, and its id."""
    from kstate.ops.index import _fixture_cases

    cases = _fixture_cases(ROOT / "fixtures")
    by_name = {e["name"]: e for e in index}
    checked = {"spec": 0, "kafka-jvm": 0}
    for name, op_cases in cases.items():
        answered = {c["_source"] for c in op_cases if "error" not in c["output"]}
        example = by_name[name]["example"]
        if "spec" in answered:
            assert example["source"] == "spec", name
            checked["spec"] += 1
        elif "kafka-jvm" in answered:
            assert example["source"] == "kafka-jvm", name
            checked["kafka-jvm"] += 1
        assert example["case"] in {c.get("id") for c in op_cases if c["_source"] == example["source"]}
    assert checked["spec"] >= 20 and checked["kafka-jvm"] >= 3, checked
    assert "Example (hand-worked case `spec.header_values." in render_markdown([by_name["header_values.serialize"]])


def test_declared_codec_fields_are_the_fields_the_fixtures_use() -> None:
    """A codec operation that declares its fields on @op (the declaration its input is parsed by) declares every
    field its fixture cases send and answer, and each required input is in every case."""
    from kstate.ops.index import _fixture_cases

    cases = _fixture_cases(ROOT / "fixtures")
    declared = {name: spec for name, spec in declared_ops().items() if name in cases}
    assert len(declared) >= 13, "the primitives and varint operations at least are declared"
    for name, spec in declared.items():
        inputs = {f.name: f for f in spec.inputs or ()}
        outputs = {o.name: o for o in spec.outputs}
        assert outputs, f"{name}: no declared outputs"
        for case in cases[name]:
            assert set(case["input"]) <= set(inputs), f"{name} {case['id']}: undeclared {set(case['input']) - set(inputs)}"
            missing = {n for n, f in inputs.items() if f.required} - set(case["input"])
            assert not missing, f"{name} {case['id']}: a required field is absent: {missing}"
            if "error" not in case["output"]:
                answered = set(case["output"])
                assert answered <= set(outputs), f"{name} {case['id']}: undeclared outputs {answered - set(outputs)}"
                assert {n for n, o in outputs.items() if not o.optional} <= answered, f"{name} {case['id']}"
