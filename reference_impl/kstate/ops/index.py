"""The operation index for porters (spec/ops-index.md, ``kstate ops``): every operation with its fields.

Field names and types of an operation are derived from its golden fixture cases (every case's input
and output, merged into one shape); an example is one of those cases. Stateful ``store.*`` operations
have no fixtures: their fields are declared once on ``@op`` (:mod:`kstate.ops.fields`, the same declaration
that parses their input) and their examples come from running the stores each family declares for the index
(:func:`kstate.ops.index_store`) against the reference, so every example in the index is a real answer (OPS-1..4).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kstate.codecs.store_types import Family
from kstate.ops import INDEX_STATE_DIR, INDEX_STORES, IndexStore, JsonDict, OpSpec, call, load_all
from kstate.ops.store_scenario_ops import SCENARIO_OP

_HEX = re.compile(r"^(?:[0-9a-f]{2})*$")
#: Objects with more keys than this, or nested deeper, are shown as ``object`` (the example shows them).
_MAX_KEYS = 12
_MAX_DEPTH = 4
#: A text field with at most this many distinct values in the fixtures lists them.
_MAX_VALUES = 8
#: The text fields that are enumerations (a scenario step's ``op``, a store type, ...); others are free text.
ENUM_FIELDS = frozenset({"op", "kind", "operation", "store_type", "status", "mode", "conversion", "data_cf",
                         "legacy_cf", "backend"})

# --- shapes: the merged JSON type of every value a field took -----------------------------------------------------


@dataclass
class Shape:
    """The union of the JSON values seen at one place: scalar kinds, a list element, object fields."""

    seen: int = 0
    kinds: set[str] = field(default_factory=set)
    element: Shape | None = None
    lengths: set[int] = field(default_factory=set)
    items: list[Shape] = field(default_factory=list)
    objects: int = 0
    fields: dict[str, Shape] = field(default_factory=dict)
    field_counts: Counter[str] = field(default_factory=Counter)
    texts: set[str] = field(default_factory=set)

    def add(self, value: Any) -> None:
        self.seen += 1
        if value is None:
            self.kinds.add("null")
        elif isinstance(value, bool):
            self.kinds.add("bool")
        elif isinstance(value, int):
            self.kinds.add("int")
        elif isinstance(value, float):
            self.kinds.add("number")
        elif isinstance(value, str):
            self.kinds.add("hex" if _HEX.match(value) else "string")
            if len(self.texts) <= _MAX_VALUES:
                self.texts.add(value)
        elif isinstance(value, list):
            self.kinds.add("list")
            self.lengths.add(len(value))
            self.element = self.element or Shape()
            for position, item in enumerate(value):
                self.element.add(item)
                while len(self.items) <= position:
                    self.items.append(Shape())
                self.items[position].add(item)
        elif isinstance(value, dict) and set(value) == {"error"}:
            self.kinds.add("error")
        elif isinstance(value, dict):
            self.kinds.add("object")
            self.objects += 1
            for key, item in value.items():
                self.field_counts[key] += 1
                self.fields.setdefault(key, Shape()).add(item)

    def render(self, depth: int = 0, in_list: bool = False, name: str = "") -> str:
        """A compact type: ``hex | null``, ``list[[string, hex | null]]``, ``{key: hex, seqnum?: int}``."""
        kinds = set(self.kinds)
        if {"hex", "string"} <= kinds:
            kinds.discard("hex")  # a field that also holds non-hex text is text that sometimes looks like hex
        parts: list[str] = []
        for kind in ("hex", "string", "int", "number", "bool"):
            if kind == "string" and kind in kinds and depth > 0 and self.values_note(name):
                parts += [json.dumps(text) for text in sorted(self.texts)]  # an enumeration inside a structure
            elif kind in kinds:
                parts.append(kind)
        if "list" in kinds:
            parts.append(self._render_list(depth, in_list))
        if "object" in kinds:
            parts.append(self._render_object(depth))
        if "error" in kinds:
            parts.append("error")
        if "null" in kinds:
            parts.append("null")
        return " | ".join(parts) or "unknown"

    def _render_list(self, depth: int, in_list: bool) -> str:
        if depth >= _MAX_DEPTH:
            return "list"
        # A list of fixed small length inside a list is a tuple: [topic, partition, offset], [key, value].
        if in_list and len(self.lengths) == 1 and 2 <= next(iter(self.lengths)) <= 4:
            return "[" + ", ".join(item.render(depth + 1) for item in self.items) + "]"
        if self.element is None or not self.element.seen:
            return "list"
        return f"list[{self.element.render(depth + 1, in_list=True)}]"

    def _render_object(self, depth: int) -> str:
        if depth >= _MAX_DEPTH or len(self.fields) > _MAX_KEYS:
            return "object"
        if not self.fields:
            return "{}"
        inner = ", ".join(
            f"{key}{'' if self.field_counts[key] == self.objects else '?'}: {self.fields[key].render(depth + 1, name=key)}"
            for key in sorted(self.fields)
        )
        return "{" + inner + "}"

    def values_note(self, name: str) -> str:
        """``values seen: a, b`` for an enumeration field (:data:`ENUM_FIELDS`) with few distinct values."""
        if name not in ENUM_FIELDS or "string" not in self.kinds or len(self.texts) > _MAX_VALUES or any(len(t) > 40 for t in self.texts):
            return ""
        return "values seen: " + ", ".join(sorted(self.texts))


# --- the stateful store operations: fields declared on @op, a real session for examples --------------------------

#: Operations the harness runs itself and never sends to an implementation, with why (OPS-5): a testee does not
#: implement them, and the index says so.
HARNESS_ONLY: dict[str, str] = {
    SCENARIO_OP: "The harness expands a scenario into the implementation's own store.* calls (OPS-5); it is never "
                 "sent to a testee, and a testee does not list it in hello.",
}


def declared_ops() -> dict[str, OpSpec]:
    """The operations that declare their fields on ``@op`` (the stateful ones and the converted codec ones; the
    others' fields are derived from their fixtures)."""
    return {name: spec for name, spec in load_all().items() if spec.inputs is not None}


#: The Kafka methods of operations recorded vectors do not name (``java`` in the registry names those).
KAFKA_METHODS: dict[str, tuple[str, ...]] = {
    "store.open": ("KeyValueStoreBuilder.build", "StateStore.init"),
    "store.close": ("StateStore.close",),
    "store.flush": ("StateStore.flush",),
    "store.flush_cache": ("CachingKeyValueStore.flushCache",),
    "store.commit": ("StateStore.commit",),
    "store.committed_offset": ("StateStore.committedOffset",),
    "store.put": ("KeyValueStore.put",),
    "store.put_if_absent": ("KeyValueStore.putIfAbsent",),
    "store.put_all": ("KeyValueStore.putAll",),
    "store.delete": ("KeyValueStore.delete",),
    "store.get": ("ReadOnlyKeyValueStore.get",),
    "store.get_typed": ("TimestampedKeyValueStoreWithHeaders.get", "TimestampedKeyValueStore.get"),
    "store.range": ("ReadOnlyKeyValueStore.range",),
    "store.reverse_range": ("ReadOnlyKeyValueStore.reverseRange",),
    "store.all": ("ReadOnlyKeyValueStore.all",),
    "store.reverse_all": ("ReadOnlyKeyValueStore.reverseAll",),
    "store.prefix_scan": ("ReadOnlyKeyValueStore.prefixScan",),
    "store.approximate_num_entries": ("ReadOnlyKeyValueStore.approximateNumEntries",),
    "store.iterator_next": ("KeyValueIterator.next",),
    "store.iterator_peek_next_key": ("KeyValueIterator.peekNextKey",),
    "store.iterator_close": ("KeyValueIterator.close",),
    "store.restore": ("RocksDBStore.restoreBatch",),
    "store.wipe": ("StateManagerUtil.wipeStateStores",),
    "primitives.increment": ("Bytes.increment",),
    "primitives.compare": ("Bytes.BYTES_LEXICO_COMPARATOR",),
    "primitives.segment_id": ("Segments.segmentId",),
    "changelog.topic_name": ("ProcessorStateManager.storeChangelogTopic",),
    "position.serialize": ("PositionSerde.serialize",),
    "position.deserialize": ("PositionSerde.deserialize",),
    "position.merge": ("Position.merge",),
}

#: The state directory the example run names (each run has a fresh one in its place).
STATE_DIR = INDEX_STATE_DIR


#: The ``source`` of an example from the example run: the store session, not a store family (kept as the index
#: has always shown it).
RUN_SOURCE = "session"

#: The steps of the example run before any family's stores: those of no store.
SHARED_STEPS: tuple[tuple[str, JsonDict], ...] = (("store.capabilities", {}),)


def store_session() -> tuple[IndexStore, ...]:
    """The stores of the example run, as their families declare them (:func:`kstate.ops.index_store`): the
    families in the table's order, each family's stores in its order; every store has a handle name of its own, so
    the order changes no example, but an operation's first use is its example (``store.open``: the first store's)."""
    load_all()
    families = list(Family)
    return tuple(sorted(INDEX_STORES, key=lambda store: families.index(store.family)))


def _substitute(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, list):
        return [_substitute(v, names) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, names) for k, v in value.items()}
    return value


def run_store_session() -> list[tuple[str, JsonDict, JsonDict]]:
    """Run :data:`SHARED_STEPS`, then every family's stores of the example run (:func:`store_session`), on the
    reference in a fresh state directory; answers in canonical names."""
    steps: list[tuple[str, JsonDict, JsonDict]] = []
    with tempfile.TemporaryDirectory(prefix="kstate-ops-index-") as state_dir:
        real = {STATE_DIR: state_dir}  # placeholder -> the value this run produced
        canonical = {state_dir: STATE_DIR}  # the value this run produced -> its name in the index
        iterators: Counter[str] = Counter()
        runs = [(None, "store.capabilities", SHARED_STEPS),
                *((store.handle, store.family.value, store.steps) for store in store_session())]
        for handle, owner, store_steps in runs:
            for name, template in store_steps:
                payload = _substitute(template, real)
                output = call(name, payload)
                if isinstance(output.get("handle"), str):
                    if handle is None or f"${handle}" in real:
                        raise ValueError(f"{name} of the index's {owner} store {handle} opened a handle it has no "
                                         "name for")
                    alias = handle
                elif isinstance(output.get("iterator"), str):
                    owner_alias = canonical[payload["handle"]]
                    iterators[owner_alias] += 1
                    alias = f"{owner_alias}-i{iterators[owner_alias]}"
                else:
                    alias = ""
                if alias:
                    produced = output.get("handle") or output["iterator"]
                    real[f"${alias}"] = produced
                    canonical[produced] = alias
                steps.append((name, _substitute(payload, canonical), _substitute(output, canonical)))
    return steps


# --- the index -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldInfo:
    name: str
    type: str
    required: bool
    note: str = ""

    def to_json(self) -> JsonDict:
        out: JsonDict = {"name": self.name, "type": self.type, "required": self.required}
        if self.note:
            out["note"] = self.note
        return out


def _derived_fields(shape: Shape, cases: int) -> list[FieldInfo]:
    return [FieldInfo(name, shape.fields[name].render(), shape.field_counts[name] == cases,
                      shape.fields[name].values_note(name)) for name in sorted(shape.fields)]


def _example_rank(case: JsonDict) -> tuple[int, int, int, str]:
    # A case that answers (not refuses), shows the most fields, and is short; ties broken by id for stability.
    refused = int("error" in case["output"]) * 2 + int('"error"' in json.dumps(case["output"]))
    fields = len(case["input"]) + len(case["output"])
    return (refused, -fields, len(json.dumps(case, sort_keys=True)), str(case.get("id", "")))


#: Where an example comes from, best first: a hand-worked case (fixtures/spec/), one recorded from Kafka
#: (fixtures/kafka-jvm/), then one the reference generated (fixtures/reference/).
EXAMPLE_SOURCES = ("spec", "kafka-jvm", "reference")


def _fixture_cases(fixtures_root: Path | None) -> dict[str, list[JsonDict]]:
    """Every fixture case by operation, each with ``_source``: the fixture directory it came from."""
    cases: dict[str, list[JsonDict]] = {}
    if fixtures_root is None:
        return cases
    for path in sorted(fixtures_root.glob("*/*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        for case in document.get("cases", []):
            cases.setdefault(case["op"], []).append({**case, "_source": path.parent.name})
    return cases


def _example_choice(case: JsonDict) -> tuple[int, int, tuple[int, int, int, str]]:
    # An answer before a refusal, then a hand-worked case before a recorded one before a generated one.
    source = str(case.get("_source", ""))
    rank = EXAMPLE_SOURCES.index(source) if source in EXAMPLE_SOURCES else len(EXAMPLE_SOURCES)
    return (int("error" in case["output"]), rank, _example_rank(case))


# --- rule links: each rule id to the heading that holds its text ------------------------------------------------

_RULE_HEADING = re.compile(r"^### ([A-Z]+-\d+): ")
_HEADING = re.compile(r"^(#{1,6}) +(.+?) *#* *$")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: its text lowercased, punctuation but ``-``/``_`` dropped,
    spaces made ``-`` (links and code spans count by their text)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) -> text
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def heading_anchors(path: Path) -> list[tuple[str, str]]:
    """Every heading of a Markdown file (outside code blocks) with its GitHub anchor; a repeated anchor takes
    ``-1``, ``-2``, ... as GitHub does."""
    seen: Counter[str] = Counter()
    anchors: list[tuple[str, str]] = []
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        match = _HEADING.match(line)
        if in_code or not match:
            continue
        base = github_anchor(match.group(2))
        anchors.append((match.group(2), base if not seen[base] else f"{base}-{seen[base]}"))
        seen[base] += 1
    return anchors


def rule_links(spec_root: Path | None) -> dict[str, str]:
    """Each rule id of the spec to a link relative to spec/ (``header-values.md#hv-1-...``)."""
    links: dict[str, str] = {}
    if spec_root is None or not spec_root.is_dir():
        return links
    for path in sorted(spec_root.glob("*.md")):
        for heading, anchor in heading_anchors(path):
            match = _RULE_HEADING.match("### " + heading)
            if match:
                links.setdefault(match.group(1), f"{path.name}#{anchor}")
    return links


def _refusals(cases: list[JsonDict]) -> str | None:
    refusals = sum(1 for c in cases if "error" in c["output"])
    return f"{refusals} of {len(cases)} fixture cases" if refusals else None


def _entry(spec: OpSpec, cases: list[JsonDict], session: dict[str, tuple[JsonDict, JsonDict]],
           links: dict[str, str]) -> JsonDict:
    entry: JsonDict = {
        "name": spec.name,
        "family": spec.family,
        "doc": spec.doc,
        "level": spec.level,
        "rules": list(spec.rules),
        # Each rule's text: a link relative to spec/ (the index lives there), or absent for an unknown id.
        "rule_links": {rule: links[rule] for rule in spec.rules if rule in links},
        "kafka": list(spec.java_ops or KAFKA_METHODS.get(spec.name, ())),
        "lenient": None,
        "fixture_cases": len(cases),
        # False: the harness runs it and never sends it to a testee (OPS-5).
        "testee": spec.name not in HARNESS_ONLY,
    }
    if spec.lenient is not None:
        entry["lenient"] = (spec.lenient.__doc__ or "Kafka accepts some malformed input").strip().splitlines()[0]
    if spec.inputs is not None:
        entry["inputs"] = [FieldInfo(f.name, f.type, f.required, f.note()).to_json() for f in spec.inputs]
        entry["outputs"] = [FieldInfo(o.name, o.type, o.required, o.note()).to_json() for o in spec.outputs]
        entry["refuses"] = _refusals(cases) if cases else "when Kafka throws (closed store, unknown handle, null key, ...)"
    elif cases:
        in_shape, out_shape = Shape(), Shape()
        for case in cases:
            in_shape.add(case["input"])
        # Which output fields an answer always has is read from the answers, not from the refusals.
        answered = [c for c in cases if "error" not in c["output"]] or cases
        for case in answered:
            out_shape.add({k: v for k, v in case["output"].items() if k != "error"})
        entry["inputs"] = [f.to_json() for f in _derived_fields(in_shape, len(cases))]
        entry["outputs"] = [f.to_json() for f in _derived_fields(out_shape, len(answered))]
        entry["refuses"] = _refusals(cases)
    else:
        entry["inputs"], entry["outputs"], entry["refuses"] = [], [], None
    if cases:
        best = min(cases, key=_example_choice)
        entry["example"] = {"case": best.get("id"), "source": best["_source"], "input": best["input"],
                            "output": best["output"]}
    elif spec.name in session:
        example_in, example_out = session[spec.name]
        entry["example"] = {"case": "store session", "source": RUN_SOURCE, "input": example_in,
                            "output": example_out}
    else:
        entry["example"] = None
    return entry


def build_index(fixtures_root: Path | None, ops: Iterable[str] | None = None,
                spec_root: Path | None = None) -> list[JsonDict]:
    """One entry per registered operation, sorted by name (fields from fixtures or declarations, one example,
    a link to each rule's text in ``spec_root``, by default the ``spec`` beside ``fixtures_root``)."""
    registry = load_all()
    cases = _fixture_cases(fixtures_root)
    if spec_root is None and fixtures_root is not None:
        spec_root = fixtures_root.parent / "spec"
    links = rule_links(spec_root)
    session: dict[str, tuple[JsonDict, JsonDict]] = {}
    for name, payload, output in run_store_session():
        session.setdefault(name, (payload, output))
    names = sorted(registry) if ops is None else sorted(ops)
    return [_entry(registry[name], cases.get(name, []), session, links) for name in names]


# --- rendering -------------------------------------------------------------------------------------------------

_PREAMBLE = """\
# Operation index (generated)

<!-- Generated by `kstate ops --write` from the operation registry and the golden fixtures; do not edit.
     tests/test_ops_index.py fails when this file and the registry disagree. -->

Every operation of the neutral vocabulary ([ops.md](ops.md)): its input and output fields with their
JSON types, the rules it serves (each linked to its text, where the byte format is), the Kafka method it
mirrors, whether Kafka is lenient with malformed input (OPS-4), and one example's input and output bytes
(hex), named by its fixture case: a hand-worked case (fixtures/spec/) where one exists, else one recorded
from Kafka (fixtures/kafka-jvm/), else one the reference generated (fixtures/reference/). A testee ([testee-protocol.md](testee-protocol.md))
lists the operations it implements in `hello` and answers each request with the output object; an operation
marked *harness only* is run by the suite itself and never sent to a testee.

Types: `hex` is lowercase hex of bytes (`""` is zero bytes), `null` is a Java null kept apart from
`""`, `int` is a signed 64-bit integer, `[a, b]` is a fixed-length JSON array, `list[T]` a JSON array,
`{k: T, k2?: T}` an object (`?`: not always present), `error` an `{"error": {...}}` refusal in place of
a sub-output (OPS-3). A required input field is in every fixture case; an output field marked
optional is left out in some answers. Any operation may answer `{"error": {...}}` where Kafka throws;
"refuses" says how often the fixtures expect that. An operation that declares its fields on `@op`
(`kstate.ops.fields`: the declaration its input is parsed by) shows that declaration; the fields of the
others are derived from every fixture case. The `store.*` operations have no fixtures: their examples come
from one session run against the reference (handles `h1`, `h2`, ... are whatever `store.open` answered).
"""


def _code(value: Any) -> str:
    return "`" + str(value).replace("|", "\\|") + "`"


def _field_rows(fields: list[JsonDict]) -> list[str]:
    if not fields:
        return ["| (none) | | | |"]
    return [f"| `{f['name']}` | {_code(f['type'])} | {'yes' if f['required'] else 'optional'} | "
            f"{f.get('note', '').replace('|', '/')} |" for f in fields]


def render_markdown(index: list[JsonDict], preamble: bool = True) -> str:
    """spec/ops-index.md: a summary table, then every operation in full by family (without ``preamble``: only
    the operations, as ``kstate ops NAME`` shows them)."""
    lines = []
    families: dict[str, list[JsonDict]] = {}
    for entry in index:
        families.setdefault(entry["family"], []).append(entry)
    if preamble:
        lines += [_PREAMBLE, "## Summary", "", "| operation | rules | Kafka | level | lenient | fixture cases |",
                  "|---|---|---|---|---|---|"]
        for entry in index:
            lines.append(f"| [`{entry['name']}`](#{_anchor(entry['name'])}) | {', '.join(entry['rules'])} | "
                         f"{', '.join(entry['kafka']) or '—'} | {_level(entry)} | "
                         f"{'yes' if entry['lenient'] else 'no'} | {entry['fixture_cases']} |")
    for family, entries in families.items():
        if preamble:
            lines += ["", f"## {family}"]
        for entry in entries:
            lines += ["", f"### `{entry['name']}`", "", entry["doc"] or "(no description)", ""]
            if not entry["testee"]:
                lines += [f"**Harness only, not for testees.** {HARNESS_ONLY[entry['name']]}", ""]
            lines.append(f"rules: {_linked_rules(entry)} | level: {_level(entry)} | "
                         f"Kafka: {', '.join(entry['kafka']) or '—'}")
            if entry["lenient"]:
                lines += ["", f"lenient: {entry['lenient']}"]
            if entry["refuses"]:
                lines += ["", f"refuses: {entry['refuses']}"]
            for title, key in (("input", "inputs"), ("output", "outputs")):
                lines += ["", f"| {title} field | type | required | note |", "|---|---|---|---|", *_field_rows(entry[key])]
            example = entry["example"]
            if example is not None:
                lines += ["", _example_title(example), "", "```json",
                          json.dumps({"input": example["input"]}, sort_keys=True),
                          json.dumps({"output": example["output"]}, sort_keys=True), "```"]
    return "\n".join(lines) + "\n"


#: How an example's origin reads in the index.
_SOURCE_NAMES = {"spec": "hand-worked case", "kafka-jvm": "recorded from Kafka", "reference": "reference case"}


def _example_title(example: JsonDict) -> str:
    if example["source"] == RUN_SOURCE:
        return "Example (the store session, run against the reference):"
    return f"Example ({_SOURCE_NAMES.get(example['source'], example['source'])} `{example['case']}`):"


def _linked_rules(entry: JsonDict) -> str:
    """The rules as links to their text, so a porter reads the byte format beside the fields."""
    links: dict[str, str] = entry.get("rule_links", {})
    return ", ".join(f"[{rule}]({links[rule]})" if rule in links else rule for rule in entry["rules"])


def _level(entry: JsonDict) -> str:
    """The level a testee reads: ``harness only`` for an operation never sent to it (OPS-5)."""
    return str(entry["level"]) if entry["testee"] else "harness only"


def _anchor(name: str) -> str:
    # GitHub's heading anchors: lowercase, punctuation other than - and _ dropped.
    return re.sub(r"[^a-z0-9_\- ]", "", name.lower()).replace(" ", "-")


def render_json(index: list[JsonDict]) -> str:
    return json.dumps({"format": 1, "operations": index}, indent=1, sort_keys=True) + "\n"
