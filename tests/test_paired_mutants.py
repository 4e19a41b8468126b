"""The paired run (``kstate conformance --model IMPL``) catches an implementation whose answer disagrees with the
model's (issue 23, "Kafka as the model").

Against Kafka: each mutant of ``kstate_conformance.mutants.paired_mutants`` (the reference with one answer changed
to disagree with Kafka) fails the paired machine of its store family (key-value, window, session, versioned), and the unmutated reference passes the same sequences.
That needs the model, named by ``--kstate-model kafka-jvm:4.4.0`` or KSTATE_MODEL (the kafka-jvm tox environment
passes it); without one those tests are skipped, so that the py environment and ``kstate mutants`` start no JVM.
The machinery itself is checked without a JVM, with the reference as the model, on in-memory stores.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kstate_conformance import store_types as types
from kstate_conformance.adapter import ReferenceAdapter
from kstate_conformance.loading import load_implementation
from kstate_conformance.models.kv import KeyValuePair
from kstate_conformance.models.session import SessionPair
from kstate_conformance.models.versioned import VersionedPair
from kstate_conformance.models.window import WindowPair
from kstate_conformance.mutants import all_mutants
from kstate_conformance.mutants.paired_mutants import PAIRED_MUTANTS
from kstate_conformance.paired import ENV_EXAMPLES, EXCLUSIONS, run_paired
from kstate_conformance.paired_stores import StorePair, UnknownFamilyError, paired_family, paired_machine
from kstate_conformance.spec_rules import load_rules

REPO = Path(__file__).resolve().parents[1]
#: The store each mutant is run on: its answer must be reachable there (a count is compared in memory only, KV-15).
WHERE = {
    "paired-range-drops-upper-bound": ("kv", "rocksdb"),
    "paired-memory-count-one-more": ("kv", "memory"),
    "paired-changelog-drops-headers": ("timestamped_kv_with_headers", "memory"),
    "paired-put-if-absent-answers-null": ("timestamped_kv", "rocksdb"),
    "paired-window-backward-all-forward": ("window", "rocksdb"),
    "paired-session-backward-fetch-forward": ("session_with_headers", "memory"),
    "paired-versioned-put-answers-latest": ("versioned_kv", "rocksdb"),
}


def _model_spec(config: pytest.Config) -> str:
    try:
        given = config.getoption("--kstate-model")
    except ValueError:  # the suite's plugin is not loaded in this run
        given = None
    return str(given or os.environ.get("KSTATE_MODEL") or "")


@pytest.fixture(scope="module")
def kafka(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The model implementation, started once for the module; the tests that need it skip without one."""
    spec = _model_spec(request.config)
    if not spec:
        pytest.skip("needs a model implementation: --kstate-model kafka-jvm:4.4.0 (or KSTATE_MODEL)")
    adapter = load_implementation(spec)
    yield adapter
    close = getattr(adapter, "close", None)
    if callable(close):
        close()


#: Sequences per run, by machine: enough that every mutant's answer is reached (a window, session or versioned
#: mutant needs two live entries, or an out-of-order put); derandomized, so that the verdicts are reproducible.
EXAMPLES_BY_MACHINE: dict[type[StorePair], str] = {KeyValuePair: "20", WindowPair: "30", SessionPair: "100",
                                                   VersionedPair: "30"}


def _run(subject: Any, model: Any, store_type: str, backend: str, base: Path, examples_factor: int = 1) -> None:
    machine = paired_machine(store_type)
    before = os.environ.get(ENV_EXAMPLES)
    os.environ[ENV_EXAMPLES] = str(int(EXAMPLES_BY_MACHINE[machine]) * examples_factor)
    try:
        if machine is KeyValuePair:
            # The key-value runs keep their own lambda: hypothesis derives the derandomized sequences from the code.
            run_paired(lambda: KeyValuePair(subject, model, base, store_type, backend), derandomize=True)
        else:
            run_paired(lambda: machine(subject, model, base, store_type, backend), derandomize=True)
    finally:
        if before is None:
            del os.environ[ENV_EXAMPLES]
        else:
            os.environ[ENV_EXAMPLES] = before


def test_every_paired_mutant_is_placed_and_none_is_in_the_catalogue() -> None:
    assert set(WHERE) == set(PAIRED_MUTANTS)
    assert not set(PAIRED_MUTANTS) & set(all_mutants()), "kstate mutants runs without a model: it would never kill them"


def test_the_machines_are_found_by_family_and_a_family_without_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each family's model registers its machine; no lookup ends in a default (issue 33)."""
    assert {family.name: paired_family(family.name).machine for family in types.FAMILIES} == {
        "kv": KeyValuePair, "versioned": VersionedPair, "window": WindowPair, "session": SessionPair}
    for store_type in ("nonesuch", types.VERSIONED_KV_WITH_HEADERS, types.TIME_ORDERED_WINDOW_WITH_HEADERS):
        with pytest.raises(types.UnknownStoreTypeError, match=store_type):
            paired_machine(store_type)
    with pytest.raises(UnknownFamilyError, match="columnar"):
        paired_family("columnar")
    # A family of the table whose model registers no machine: models.life stands for one.
    monkeypatch.setattr(types, "FAMILY_NAMES", (*types.FAMILY_NAMES, "life"))
    with pytest.raises(UnknownFamilyError, match="life"):
        paired_family("life")


def test_every_exclusion_names_a_rule_and_is_applied() -> None:
    """Nothing is left out silently: each exclusion cites a spec rule, and the machines apply each by its name."""
    known = set(load_rules())
    package = REPO / "conformance" / "kstate_conformance"
    sources = "".join(path.read_text(encoding="utf-8")
                      for path in (package / "paired.py", package / "paired_stores.py", *sorted(package.glob("models/*.py"))))
    applied = set(re.findall(r'excluded\("([^"]+)"\)', sources))
    for name, exclusion in EXCLUSIONS.items():
        assert exclusion.rule in known, f"exclusion {name} names no spec rule: {exclusion.rule}"
    assert applied == set(EXCLUSIONS), f"listed but not applied: {set(EXCLUSIONS) - applied}; applied but not listed: {applied - set(EXCLUSIONS)}"


@pytest.mark.parametrize("name", ["paired-memory-count-one-more", "paired-changelog-drops-headers",
                                  "paired-session-backward-fetch-forward"])
def test_the_machinery_catches_a_mutant_with_the_reference_as_model(name: str, tmp_path: Path) -> None:
    # In memory and without a JVM these are cheap. The drawn sequences depend on what ran before in the process
    # (hypothesis draws constants from the modules imported so far), so the session machine, whose mutant needs
    # two live sessions read backward, gets three times its usual sequences.
    with pytest.raises(AssertionError, match=r"the model \(reference\) answered"):
        _run(PAIRED_MUTANTS[name].adapter(), ReferenceAdapter(), *WHERE[name], tmp_path,
             examples_factor=3 if name == "paired-session-backward-fetch-forward" else 1)


def test_the_reference_agrees_with_itself(tmp_path: Path) -> None:
    _run(ReferenceAdapter(), ReferenceAdapter(), "timestamped_kv_with_headers", "memory", tmp_path)


@pytest.mark.parametrize("name", sorted(WHERE))
def test_the_paired_run_catches_the_mutant(name: str, kafka: Any, tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match=r"the model \(apache-kafka-streams\) answered"):
        _run(PAIRED_MUTANTS[name].adapter(), kafka, *WHERE[name], tmp_path)


@pytest.mark.parametrize("where", sorted(set(WHERE.values())))
def test_the_reference_passes_the_same_sequences(where: tuple[str, str], kafka: Any, tmp_path: Path) -> None:
    _run(ReferenceAdapter(), kafka, *where, tmp_path)
