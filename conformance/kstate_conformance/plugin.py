"""The pytest plugin (entry point ``pytest11``): options, the ``implementation`` fixture, hypothesis profiles,
expected-failure files, reports and progress.

``pytest --pyargs kstate_conformance.tests --kstate-impl module:factory`` runs the suite against an
implementation; without ``--kstate-impl`` (or ``KSTATE_IMPL``) the reference implementation is used.
``--kstate-impl "cmd:COMMAND"`` runs an out-of-process testee (spec/testee-protocol.md).
"""

from __future__ import annotations

import contextlib
import copy
import gc
import os
import re
from collections import Counter, deque
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kstate.codecs.store_types import LEGACY_ALIASES, StoreType
from kstate.scratch import scratch_temp_dir
from kstate_conformance.adapter import ImplementationAdapter, JsonDict, Unsupported
from kstate_conformance.capabilities import (
    canonical_store_type,
    capabilities_of,
    feature_of,
    feature_of_input,
    lacks_reason,
    share_capabilities,
)
from kstate_conformance.expectations import (
    Entry,
    ExpectationFileError,
    ExpectedFailures,
    item_test_id,
    stable_test_id,
)
from kstate_conformance.kit_tools import KIT_TOOLS, NOT_APPLICABLE_REASON, kit_answer
from kstate_conformance.loading import ImplementationError, extend_report, load_implementation
from kstate_conformance.store_types import ALL_TYPES, CODEC_OP_FAMILIES

# Kit and Store assert on the implementation's answers for the tests: rewritten, their failures show the
# values compared, as the tests' own asserts do.
pytest.register_assert_rewrite("kstate_conformance.harness")

#: The levels in the order ``--kstate-level`` runs them: each runs the ones before it too (spec/README.md). ``hardened``
#: holds the rules where the reference deliberately does better than Kafka 4.4, so ``required`` is what Kafka does.
LEVEL_ORDER = {"required": 0, "recommended": 1, "hardened": 2, "tentative": 3}
PROFILES = {"quick": 15, "default": 60, "thorough": 1000}
ADAPTER_KEY = pytest.StashKey[ImplementationAdapter]()
#: The model implementation the paired machines compare the implementation under test with (``--kstate-model``).
MODEL_KEY = pytest.StashKey[ImplementationAdapter]()
WRAPPER_KEY = pytest.StashKey["SkippingAdapter"]()
#: Parameter values that name a store type or a backend, when a test's parameters are not named so.
BACKENDS = ("rocksdb", "memory", "in_memory")
STORE_TYPES = tuple(t.value for t in StoreType) + tuple(LEGACY_ALIASES)
#: Operations never sent to an implementation (OPS-5: the harness expands a scenario), so not counted in coverage.
NEVER_SENT = frozenset({"store.scenario"})
#: Families of pure operations (bytes and numbers in and out, no handle, no files): a failure's calls of these
#: are replayed on the reference to find the one whose answer is wrong; a store family's own codec operations are
#: its entry's (store_types.FAMILIES).
PURE_FAMILIES = frozenset({"varint", "primitives", "headers", "record_v2", "timestamped", "header_values",
                           "position", "layout", "changelog", *CODEC_OP_FAMILIES})
#: Calls of one test remembered for that search (hypothesis replays the minimal example last).
REMEMBERED_CALLS = 64


class SkippingAdapter(ImplementationAdapter):
    """Wraps an adapter so that an unsupported operation skips the test, with the reason; remembers the
    last call of the running test, so that a failure can name its operation, input and actual output."""

    def __init__(self, inner: ImplementationAdapter) -> None:
        self.inner = inner
        self.name = inner.name
        #: The running test's latest calls as (operation, input, output); output None if the call raised.
        self.calls: deque[tuple[str, JsonDict, Any]] = deque(maxlen=REMEMBERED_CALLS)
        #: Whether the implementation answered an operation of its own (not a kit tool) in the running test.
        self.answered_own_operation = False
        # Parsed once, as the implementation was loaded: the harness's reads through the wrapper ask nothing again.
        share_capabilities(self, inner)

    @property
    def last_call(self) -> tuple[str, JsonDict, Any] | None:
        return self.calls[-1] if self.calls else None

    def supports(self, op: str) -> bool:
        # A kit tool is always there: the call below answers it with the kit's own, or finds the case n/a.
        return self.inner.supports(op) or op in KIT_TOOLS

    def _lacked_by(self, op: str, payload: JsonDict) -> str | None:
        """For an operation answered unsupported: the optional feature it belongs to (capabilities.OPTIONAL_FEATURES),
        or the store type (and backend) of its input, that the implementation's capabilities say it does not have
        (OPS-1 ``store_backends``), so that the case is absent, not an operation it fails to answer (CL-5 of the
        versioned store with headers, which Kafka 4.4 lacks). A type the spec does not know is no feature to lack:
        its refusal is what such a case checks."""
        feature = feature_of(op) or feature_of_input(op, payload)
        if feature is not None:
            return capabilities_of(self.inner).lacks(feature=feature)
        store_type = payload.get("store_type")
        if (not isinstance(store_type, str) or canonical_store_type(store_type) not in ALL_TYPES
                or not self.inner.supports("store.capabilities")):
            return None
        backend = payload.get("backend")
        return capabilities_of(self.inner).lacks(store_type, backend if isinstance(backend, str) else None)

    def call(self, op: str, payload: JsonDict) -> JsonDict:
        self.calls.append((op, payload, None))
        try:
            output = self.inner.call(op, payload)
        except Unsupported:
            lacked = self._lacked_by(op, payload)
            if lacked is not None:
                pytest.skip(lacks_reason(self.name, lacked))
            if op not in KIT_TOOLS:
                pytest.skip(f"{self.name} does not support operation {op}")
            # A kit tool (kit_tools.py): a case of the tool alone does not apply; one that has reached the
            # implementation reads what it wrote with the kit's tool.
            if not self.answered_own_operation:
                pytest.skip(NOT_APPLICABLE_REASON.format(op=op, name=self.name))
            output = kit_answer(op, payload)
        if op not in KIT_TOOLS:
            self.answered_own_operation = True
        self.calls[-1] = (op, payload, output)
        return output


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kstate", "Kafka Streams state-store conformance")
    group.addoption("--kstate-impl", default=None,
                    help="implementation under test: reference, mutant:NAME, cmd:COMMAND (a testee) or module:factory")
    group.addoption("--kstate-model", default=None, metavar="IMPL",
                    help="a second implementation (e.g. kafka-jvm:4.4.0) the paired state machines compare the "
                         "implementation under test with, step by step (or KSTATE_MODEL); without it they do not run")
    group.addoption("--kstate-level", default="tentative", choices=sorted(LEVEL_ORDER),
                    help="run rules up to this level (required < recommended < hardened < tentative)")
    group.addoption("--kstate-profile", default=None, choices=sorted(PROFILES),
                    help="hypothesis effort: quick, default or thorough")
    group.addoption("--kstate-report", default=None,
                    help="directory for report.md, report.html and results.json")
    group.addoption("--kstate-testee-timeout", type=float, default=None,
                    help="seconds a testee has to answer one request (default 10, or KSTATE_TESTEE_TIMEOUT)")
    group.addoption("--kstate-testee-start-timeout", type=float, default=None,
                    help="seconds a testee has to start and answer the hello (default 30)")
    group.addoption("--kstate-testee-validate", action="store_true",
                    help="check every testee answer against spec/testee-protocol.schema.json")
    group.addoption("--kstate-expected-failures", default=None, metavar="FILE",
                    help="strict expected-failure list: listed failures are xfail, listed passes fail the run")
    group.addoption("--kstate-fix", action="store_true",
                    help="rewrite the expected-failure file with this run's actual failures")
    group.addoption("--kstate-grouped-failures", action="store_true",
                    help="show failures only grouped by rule and operation (with input, expected and actual output), "
                         "not as one pytest traceback each")
    group.addoption("--kstate-require-rules", action="append", default=[], metavar="IDS",
                    help="rule families or IDs (comma-separated, e.g. PRIM,TSKV-3) whose every rule must pass, not be "
                         "unsupported, partial or not run; otherwise the run fails")
    group.addoption("--kstate-case", action="append", default=[], metavar="ID",
                    help="run exactly this test (repeatable): a golden case id (kafka-jvm.varint.varint_edge_4), a test "
                         "id as reports and expected-failure files name it, or a test's name; unlike -k, no "
                         "similar ids")
    group.addoption("--kstate-progress", action="store_true",
                    help="show a progress display on stderr instead of pytest's per-test letters")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "rules(*ids): the spec rules a conformance test checks")
    config.addinivalue_line("markers", "kstate_level(level): the conformance level of a test case")
    config.addinivalue_line("markers", "kstate_places(*places): places of the rule x place matrix a test reaches "
                                       "that the static reading cannot see (rule_places.py)")
    from hypothesis import HealthCheck, settings

    for name, examples in PROFILES.items():
        settings.register_profile(
            f"kstate-{name}", max_examples=examples, deadline=None, derandomize=name != "thorough",
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
    # Without a choice the suite runs its own default profile (derandomized, no deadline), so that
    # verdicts are reproducible and a slow out-of-process testee is not failed for its latency.
    # (Only for runs of the suite: the plugin is also loaded, by entry point, in unrelated test runs.)
    profile = config.getoption("--kstate-profile") or os.environ.get("KSTATE_PROFILE")
    if profile or any("kstate_conformance" in str(arg) for arg in config.args):
        settings.load_profile(f"kstate-{profile or 'default'}")
    if is_suite_run(config):
        # Stores on tmpfs where there is one (kstate.scratch); removed when pytest ends. Forked children of the
        # mutation analysis leave without clean-up, so their stores go with the parent's directory.
        scratch = contextlib.ExitStack()
        scratch.enter_context(scratch_temp_dir("suite"))
        config.add_cleanup(scratch.close)
        from kstate_conformance.timings import SuiteTimings

        config.pluginmanager.register(SuiteTimings(), "kstate-timings")
    expected = config.getoption("--kstate-expected-failures")
    if expected:
        config.pluginmanager.register(_ExpectedFailurePlugin(config, Path(expected)), "kstate-expected-failures")
    if is_suite_run(config):
        config.pluginmanager.register(_ReportCollector(config), "kstate-report-collector")
    elif config.getoption("--kstate-fix"):
        raise pytest.UsageError("--kstate-fix needs --kstate-expected-failures FILE")
    if config.getoption("--kstate-progress"):
        from kstate_conformance.progress import ProgressDisplay

        config.pluginmanager.register(ProgressDisplay(), "kstate-progress")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    limit = LEVEL_ORDER[config.getoption("--kstate-level")]
    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        marker = item.get_closest_marker("kstate_level")
        level = marker.args[0] if marker else "required"
        (keep if LEVEL_ORDER.get(level, 0) <= limit else dropped).append(item)
    wanted = set(config.getoption("--kstate-case"))
    if wanted:
        chosen = [item for item in keep if wanted & case_names(item)]
        missing = wanted - set().union(*(case_names(item) for item in chosen))
        if missing:
            raise pytest.UsageError(f"--kstate-case: no test of this run is named {', '.join(sorted(missing))}")
        dropped += [item for item in keep if item not in chosen]
        keep = chosen
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    # The collected suite (thousands of items, the modules, hypothesis's strategies) lives until the run ends:
    # frozen, no collection scans it again. A full collection (every store open that finds its LOCK held, every
    # dropped column family, pytest's own at the end) then costs what the tests made since, not the whole heap
    # (issue 35). Collected first, so no garbage (a RocksDB handle keeping its LOCK) is frozen with it.
    if is_suite_run(session.config):
        gc.collect()
        gc.freeze()


def case_names(item: pytest.Item) -> set[str]:
    """The exact names ``--kstate-case`` knows a test by: its stable id, its name with parameters, its parameters
    (a golden case's id)."""
    test_id = item_test_id(item)
    names = {test_id, test_id.split("::", 1)[-1]}
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        names.add(str(callspec.id))
    return names


def is_suite_run(config: pytest.Config) -> bool:
    """Whether this pytest run runs the conformance suite (the plugin is also loaded, by entry point, elsewhere)."""
    return bool(config.getoption("--kstate-impl") or os.environ.get("KSTATE_IMPL")
                or any("kstate_conformance" in str(arg) for arg in config.args))


def implementation_spec(config: pytest.Config) -> str:
    return str(config.getoption("--kstate-impl") or os.environ.get("KSTATE_IMPL") or "reference")


def model_spec(config: pytest.Config) -> str | None:
    """The model implementation named by ``--kstate-model`` or ``KSTATE_MODEL``, or None."""
    return config.getoption("--kstate-model") or os.environ.get("KSTATE_MODEL") or None


def item_dimensions(item: pytest.Item) -> tuple[str, str]:
    """The store type and backend a test runs on, from its parameters ('' where it has none)."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return "", ""
    params = callspec.params
    store_type = str(params["store_type"]) if isinstance(params.get("store_type"), str) else ""
    backend = str(params["backend"]) if isinstance(params.get("backend"), str) else ""
    tokens = str(callspec.id).split("-")
    store_type = store_type or next((t for t in tokens if t in STORE_TYPES), "")
    backend = backend or next((t for t in tokens if t in BACKENDS), "")
    return store_type, backend


def positional_ids(items: list[pytest.Item]) -> list[str]:
    """Parametrized tests whose id is a list position (``argname3``), not data: unstable when cases move."""
    found: list[str] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        for part in str(callspec.id).split("-"):
            if any(part.startswith(name) and part[len(name):].isdigit() and part != name
                   for name in callspec.params):
                found.append(item.nodeid)
                break
    return found


# --- the implementation under test ------------------------------------------------------------------------


def build_implementation(config: pytest.Config) -> ImplementationAdapter:
    """Load, build or start the implementation under test; :class:`ImplementationError` if it cannot be."""
    timeout = config.getoption("--kstate-testee-timeout")
    if timeout is None and os.environ.get("KSTATE_TESTEE_TIMEOUT"):
        timeout = float(os.environ["KSTATE_TESTEE_TIMEOUT"])
    return load_implementation(implementation_spec(config), timeout=timeout,
                               start_timeout=config.getoption("--kstate-testee-start-timeout"),
                               validate=bool(config.getoption("--kstate-testee-validate")))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    # Fail fast: an implementation that cannot be imported, built or started (or fails its handshake) is a
    # setup error reported once, before thousands of tests are collected to fail the same way.
    config = session.config
    if not is_suite_run(config):
        return
    try:
        config.stash[ADAPTER_KEY] = build_implementation(config)
    except ImplementationError as exc:
        raise pytest.UsageError(f"{exc}\n(no test was run: the implementation under test is not usable)") from None
    model = model_spec(config)
    if model:
        # Started once for the run (a JVM model is not restarted per example), like the implementation.
        try:
            config.stash[MODEL_KEY] = load_implementation(model, start_timeout=config.getoption("--kstate-testee-start-timeout"))
        except ImplementationError as exc:
            raise pytest.UsageError(f"{exc}\n(no test was run: the model implementation is not usable)") from None


def pytest_unconfigure(config: pytest.Config) -> None:
    adapter = config.stash.get(ADAPTER_KEY, None)
    if adapter is not None:
        adapter.close()
    model = config.stash.get(MODEL_KEY, None)
    if model is not None:
        model.close()


@pytest.fixture(scope="session")
def implementation(request: pytest.FixtureRequest) -> Any:
    """The implementation under test, behind the adapter protocol."""
    config = request.config
    adapter = config.stash.get(ADAPTER_KEY, None)
    if adapter is None:
        adapter = build_implementation(config)
        config.stash[ADAPTER_KEY] = adapter
    wrapper = SkippingAdapter(adapter)
    config.stash[WRAPPER_KEY] = wrapper
    return wrapper


@pytest.fixture(scope="session")
def model_impl(request: pytest.FixtureRequest) -> Any:
    """The model implementation (``--kstate-model``), or None when the run names none."""
    return request.config.stash.get(MODEL_KEY, None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # An out-of-process testee (or model) that failed in the previous test is restarted for this one.
    adapter = item.config.stash.get(ADAPTER_KEY, None)
    wrapper = item.config.stash.get(WRAPPER_KEY, None)
    if wrapper is not None:
        wrapper.calls.clear()
        wrapper.answered_own_operation = False
    if adapter is not None:
        adapter.begin_test(item.nodeid)
    model = item.config.stash.get(MODEL_KEY, None)
    if model is not None:
        model.begin_test(item.nodeid)


# --- expected failures (strict) ------------------------------------------------------------------------------


class _ExpectedFailurePlugin:
    """Listed failures become xfail; a listed test that passes is an unexpected pass and fails the run;
    ``--kstate-fix`` rewrites the list (with a reason for each new entry) and the run exits 0."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config = config
        self.fix = bool(config.getoption("--kstate-fix"))
        if not path.exists() and not self.fix:
            raise pytest.UsageError(f"the expected-failure file {path} does not exist "
                                    "(give --kstate-fix to create it from this run's failures)")
        try:
            self.expectations = ExpectedFailures.load(path)
        except (ExpectationFileError, OSError, UnicodeDecodeError) as exc:
            raise pytest.UsageError(f"cannot read the expected-failure file {path}: {exc}") from None
        self.ran: set[str] = set()
        self.failed: set[str] = set()
        self.reasons: dict[str, str] = {}
        self.unexpected_passes: list[str] = []
        #: Listed tests that passed where their entry says they may (a drawn sequence that missed the bug).
        self.passed_may_pass: list[str] = []
        #: Listed tests that ran with the steps reaching their entry's rules withheld, with those rules.
        self.withheld: dict[str, list[str]] = {}
        self.collected: set[str] = set()
        self.deselected: set[str] = set()
        #: Each test's (operation, rules), to list entries and unexpected passes by operation.
        self.keys: dict[str, tuple[str, list[str]]] = {}
        self.rewritten: tuple[list[Entry], list[Entry], ExpectedFailures] | None = None

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        # Deselected tests (by --kstate-level, -k or --kstate-case) exist: their entries are not stale, only not run.
        self.deselected.update(item_test_id(item) for item in items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = {item_test_id(item) for item in session.items}

    def applied_entries(self) -> list[Entry]:
        """The entries this run applies to the tests it selected (by --level, -k or --case)."""
        return self.expectations.applied(self.collected)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        """A test whose entry says ``withhold: R-1`` runs with the state machine's steps reaching R-1 withheld."""
        from kstate_conformance.state_machines import withholding

        entry = self.expectations.match(item_test_id(item))
        with withholding(frozenset(entry.withheld) if entry is not None else frozenset()):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report: pytest.TestReport = yield
        test_id = item_test_id(item)
        if (report.when == "call" and not report.skipped) or report.failed:
            self.ran.add(test_id)
        if report.failed:
            self.failed.add(test_id)
            self.reasons.setdefault(test_id, failure_reason(report, failure_context(item, call.excinfo).message))
        if report.when == "call" or report.failed:
            self.keys[test_id] = grouping_key(item, report.failed)
        entry = self.expectations.match(test_id)
        if entry is None:
            return report
        where = f"{self.expectations.path}" + (f" ({entry.reason})" if entry.reason else "")
        if entry.withheld:
            # Withholding is a promise that the test passes without those steps: a failure is a failure.
            if report.when == "call":
                self.withheld[test_id] = entry.withheld
                report.kstate_withheld = entry.withheld  # type: ignore[attr-defined]
                report.kstate_expected_reason = entry.reason  # type: ignore[attr-defined]
            return report
        if report.failed and report.when in ("setup", "call"):
            report.outcome = "skipped"
            report.wasxfail = f"expected failure, listed in {where}"
            # The rules it is xfail for are those the reason names (report.xfail_rules), not all of the test's.
            report.kstate_expected_reason = entry.reason  # type: ignore[attr-defined]
        elif report.when == "call" and report.passed and entry.may_pass:
            self.passed_may_pass.append(test_id)
        elif report.when == "call" and report.passed:
            self.unexpected_passes.append(test_id)
            # Still a failure of the run (the list is strict), but reported as what it is.
            report.outcome = "failed"
            report.kstate_unexpected_pass = True  # type: ignore[attr-defined]
            report.longrepr = (f"[unexpected pass] {test_id} is listed as an expected failure in {where} but passed; "
                               "remove it from the list (or rerun with --fix)")
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, str] | None:
        if getattr(report, "kstate_unexpected_pass", False):
            return "unexpected pass", "U", "UNEXPECTED PASS"
        return None

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if not self.fix:
            return
        before = {e.pattern: e for e in self.expectations.entries}
        fixed = self.expectations.fixed(self.failed, self.ran, self.reasons)
        after = {e.pattern: e for e in fixed.entries}
        fixed.write()
        self.rewritten = ([after[p] for p in sorted(set(after) - set(before))],
                          [before[p] for p in sorted(set(before) - set(after))], fixed)
        # The list now says what this run did: failures it lists are no longer a reason to fail.
        if session.exitstatus == pytest.ExitCode.TESTS_FAILED:
            session.exitstatus = pytest.ExitCode.OK

    def _grouped(self, lines: dict[str, str]) -> list[str]:
        """``{test id: line}`` grouped by operation (one bug touching a hundred tests is one heading)."""
        from kstate_conformance.report import grouped_listing

        return grouped_listing([(*self.keys.get(test_id, ("(not run)", [])), line) for test_id, line in lines.items()])

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        stale = self.expectations.unmatched(self.collected | self.deselected)
        not_selected = len(self.expectations.unmatched(self.collected)) - len(stale)
        if self.unexpected_passes:
            terminalreporter.write_sep("=", f"{len(self.unexpected_passes)} unexpected passes "
                                       "(listed as expected failures, but passed), by operation", red=True)
            for line in self._grouped({t: f"UNEXPECTED PASS {t}" for t in self.unexpected_passes}):
                terminalreporter.write_line(line)
        if not_selected:
            terminalreporter.write_line(f"{not_selected} expected-failure entries name only tests this run did not "
                                        "select (--level, -k or --case): not applied")
        by_class = Counter(entry.tag or "no class" for entry in self.applied_entries())
        if by_class:
            terminalreporter.write_line("expected-failure entries applied by this run: " + ", ".join(
                f"[{tag}] {count}" for tag, count in sorted(by_class.items())))
        if self.withheld:
            terminalreporter.write_line(f"{len(self.withheld)} listed drawn tests ran with the steps reaching a listed "
                                        "bug withheld (not verified for those rules): " + ", ".join(
                                            f"{t} ({', '.join(r)})" for t, r in sorted(self.withheld.items())))
        if self.passed_may_pass:
            terminalreporter.write_line(f"{len(self.passed_may_pass)} listed tests passed where their entry says they "
                                        "may (their drawn sequences missed the bug): "
                                        + ", ".join(sorted(self.passed_may_pass)))
        unknown = self.expectations.unknown_classes()
        if unknown:
            terminalreporter.write_sep("-", f"{len(unknown)} expected-failure entries of a class not in "
                                       "expectations.ENTRY_CLASSES")
            for entry in unknown:
                terminalreporter.write_line(f"  [{entry.tag}] {entry.pattern}")
        if stale:
            terminalreporter.write_sep("-", f"{len(stale)} expected-failure entries match no test of this run")
            for entry in stale:
                terminalreporter.write_line(f"  {entry.pattern}")
        if self.rewritten is not None:
            added, removed, fixed = self.rewritten
            terminalreporter.write_sep("=", f"--fix wrote {fixed.path}: {len(fixed.entries)} entries, "
                                       f"{len(added)} added, {len(removed)} removed")
            for line in self._grouped({e.pattern: f"+ {e.pattern}  # {e.reason}" for e in added}):
                terminalreporter.write_line(line)
            for line in self._grouped({e.pattern: f"- {e.pattern}" for e in removed}):
                terminalreporter.write_line(line)
        elif self.unexpected_passes or (self.failed - self.listed_failures()):
            terminalreporter.write_line(f"to update the list: rerun with --kstate-fix "
                                        f"(kstate conformance --expected-failures {self.expectations.path} --fix)")

    def listed_failures(self) -> set[str]:
        return {t for t in self.failed if self.expectations.match(t)}


#: An expected-failure reason longer than this is cut (a repr of a large value, not a reason).
REASON_LIMIT = 400


def failure_reason(report: pytest.TestReport, innermost: str = "") -> str:
    """A one-line reason for an expected-failure entry: the failure's own first line (the innermost error's,
    when hypothesis wrapped it)."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = innermost or str(getattr(crash, "message", "") or report.longrepr or "")
    line = next((x.strip() for x in text.splitlines() if x.strip()), "failed")
    return (line[:REASON_LIMIT - 3] + "...") if len(line) > REASON_LIMIT else line


# --- reports -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailureContext:
    """What a failed test was about: the operation blamed, its input, expected and actual output, and the
    innermost error's message and minimal example when hypothesis wrapped it (else empty)."""

    op: str = ""
    input: Any = None
    expected: Any = None
    actual: Any = None
    message: str = ""
    example: str = ""


CONTEXT_KEY = pytest.StashKey[FailureContext]()


def failure_context(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException] | None = None) -> FailureContext:
    """The :class:`FailureContext` of a failed test, computed once (the report and the expectations both ask):
    a golden case's operation, else the call :func:`blamed_call` finds, else the test's last call."""
    cached = item.stash.get(CONTEXT_KEY, None)
    if cached is not None:
        return cached
    message, example = unwrapped_error(excinfo.value) if excinfo is not None else ("", "")
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("case") if callspec is not None else None
    wrapper = item.config.stash.get(WRAPPER_KEY, None)
    calls = list(wrapper.calls) if wrapper is not None else []
    last = calls[-1] if calls else None
    if isinstance(case, dict) and isinstance(case.get("op"), str):
        actual = last[2] if last is not None and last[0] == case["op"] else None
        context = FailureContext(case["op"], case.get("input"), case.get("output"), actual, message, example)
    elif (blamed := blamed_call(calls)) is not None:
        context = FailureContext(*blamed, message, example)
    elif last is not None:
        context = FailureContext(last[0], last[1], None, last[2], message, example)
    else:
        context = FailureContext(message=message, example=example)
    item.stash[CONTEXT_KEY] = context
    return context


def blamed_call(calls: list[tuple[str, JsonDict, Any]]) -> tuple[str, JsonDict, Any, Any] | None:
    """(operation, input, expected, actual) of the call that failed: the last call if it raised, else the last
    pure call whose answer differs from the reference's (its expected output); None if no call can be blamed."""
    # In a round trip (write, then read back) the assertion fails after the read, though the write may be what
    # is wrong: replaying the pure calls on the reference finds the one that answered differently.
    if not calls:
        return None
    if calls[-1][2] is None:
        # The last call raised (a crash, a hang, garbage from a testee): that operation failed.
        return calls[-1][0], calls[-1][1], None, None
    from kstate.ops import call as reference_call
    from kstate.ops import load_all
    from kstate.ops.compare import differences

    known = load_all()
    for op, payload, output in reversed(calls):
        if op not in known or op.split(".", 1)[0] not in PURE_FAMILIES:
            continue
        try:
            expected = reference_call(op, copy.deepcopy(payload))
        except Exception:  # a payload the reference cannot even take is no evidence either way
            continue
        if differences(expected, output):
            return op, payload, expected, output
    return None


_EXAMPLE_NOTE = re.compile(r"^\s*(Falsifying example|Falsifying explicit example|Failing test case)")


def unwrapped_error(exc: BaseException) -> tuple[str, str]:
    """(message, minimal example) of the innermost error inside hypothesis's FlakyFailure or an ExceptionGroup;
    ("", "") for an error that wraps nothing (its own text is read from the report as before)."""
    wrappers: list[BaseException] = []
    inner = exc
    while isinstance(getattr(inner, "exceptions", None), tuple) and inner.exceptions:  # type: ignore[attr-defined]
        wrappers.append(inner)
        inner = inner.exceptions[0]  # type: ignore[attr-defined]
    if not wrappers:
        return "", ""
    outer = wrappers[0]
    count = len(getattr(outer, "exceptions", ()))
    first_line = next((line for line in str(outer).splitlines() if line.strip()), "")
    first_line = re.sub(r"(?:implementation|codec)=<[^>]*>,\s*", "", first_line)  # the adapter object's repr says nothing
    text = [line for line in f"{type(inner).__name__}: {inner}".splitlines() if line.strip()][:3]
    text.append(f"(the innermost error{f', 1 of {count},' if count > 1 else ''} of {type(outer).__name__}: "
                f"{first_line})")
    notes = [str(n) for n in getattr(inner, "__notes__", ())]
    example = next((n for n in notes if _EXAMPLE_NOTE.match(n)), "")
    example_lines = [line.rstrip() for line in example.strip().splitlines() if not re.match(r"\s*(?:implementation|codec)=<", line)]
    if example_lines:
        example_lines[0] = example_lines[0].replace("Failing test case", "Falsifying example", 1)
    return "\n".join(text), "\n".join(example_lines)


def item_rules(item: pytest.Item) -> list[str]:
    """The rules a test case checks (issue 31): its parameter's ``rules`` mark where it has one (a golden case's
    rules, or ``pytest.param(..., marks=rules(...))``), else the test's ``@rules`` marker."""
    callspec = getattr(item, "callspec", None)
    for mark in getattr(callspec, "marks", None) or ():
        if mark.name == "rules":
            return [str(r) for r in mark.args]
    marker = item.get_closest_marker("rules")
    return [str(r) for r in marker.args] if marker else []


def grouping_key(item: pytest.Item, failed: bool) -> tuple[str, list[str]]:
    """(operation, rules) a test's outcome is grouped under: the blamed operation of a failure, a golden case's
    operation, else the test's name."""
    rules = item_rules(item)
    if failed:
        op = failure_context(item).op
        if op:
            return op, rules
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("case") if callspec is not None else None
    if isinstance(case, dict) and isinstance(case.get("op"), str):
        return case["op"], rules
    return getattr(item, "originalname", None) or item.name, rules


def required_rules(tokens: Iterable[str], level: str) -> list[str]:
    """The rules ``--require-rules`` names (families or IDs, comma-separated), up to the run's level."""
    from kstate_conformance.spec_rules import load_rules

    rules = load_rules()
    wanted: list[str] = []
    for token in (t.strip() for chunk in tokens for t in chunk.split(",")):
        if not token:
            continue
        matched = [r for r in rules if r == token or r.split("-", 1)[0] == token]
        if not matched:
            raise pytest.UsageError(f"--require-rules: {token} names no rule and no rule family of the spec")
        wanted += [r for r in matched if LEVEL_ORDER[rules[r].level] <= LEVEL_ORDER[level] and r not in wanted]
    return wanted


class _ReportCollector:
    """Records each conformance test's outcome with its rules, level, store type, backend, skip kind and, for a
    failure, its operation, input, expected and actual output; prints the grouped summary and the closing line,
    and writes the reports when asked."""

    def __init__(self, config: pytest.Config) -> None:
        from kstate_conformance.report import RunReport

        self.config = config
        self.report = RunReport(implementation=implementation_spec(config))
        self._meta: dict[str, tuple[list[str], str, str, str]] = {}
        #: Each test's stable id by node id (expectations.item_test_id: from its file, not its node id).
        self._test_ids: dict[str, str] = {}
        self._outcomes: dict[str, Any] = {}
        self._context: dict[str, FailureContext] = {}
        self.report_dir: Path | None = None
        self.exit_status = 0
        self.required = required_rules(config.getoption("--kstate-require-rules"), config.getoption("--kstate-level"))

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            level = item.get_closest_marker("kstate_level")
            store_type, backend = item_dimensions(item)
            self._meta[item.nodeid] = (item_rules(item), level.args[0] if level else "required", store_type, backend)
            self._test_ids[item.nodeid] = item_test_id(item)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        report: pytest.TestReport = yield
        if report.when in ("setup", "call") and (report.failed or hasattr(report, "wasxfail")):
            self._context[item.nodeid] = failure_context(item, call.excinfo)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from kstate_conformance.departures import departure_rules
        from kstate_conformance.report import DEPARTED, TestOutcome, classify_skip, minimal_example

        if report.nodeid not in self._meta:
            return
        wasxfail = hasattr(report, "wasxfail")
        if report.when == "call" or (report.when == "setup" and not report.passed) or report.failed:
            outcome: str = "xfailed" if report.skipped and wasxfail else report.outcome
            if getattr(report, "kstate_unexpected_pass", False):
                outcome = "unexpected_pass"
            detail = str(report.longrepr) if outcome != "passed" and report.longrepr else ""
            if report.skipped and isinstance(report.longrepr, tuple):
                detail = str(report.longrepr[2])
            existing = self._outcomes.get(report.nodeid)
            if existing is not None and report.when == "teardown":
                existing.outcome = "failed"
                existing.detail = (existing.detail + "\n--- teardown ---\n" + detail).strip()
                return
            rules, level, store_type, backend = self._meta[report.nodeid]
            context = FailureContext()
            if outcome in ("failed", "xfailed"):
                context = self._context.pop(report.nodeid, context)
            departs = departure_rules(detail) if outcome == "skipped" else None
            if departs is not None:
                # An allowed departure from Kafka (OPS-4): counted against the rules allowing it alone.
                outcome = DEPARTED
                departs = [r for r in departs if r in rules] or list(rules)
            skip_kind, unsupported = classify_skip(detail) if outcome == "skipped" else ("", "")
            outcome_record = TestOutcome(
                report.nodeid, outcome, rules, level, detail, test_id=self._test_ids.get(report.nodeid) or stable_test_id(report.nodeid),
                store_type=store_type, backend=backend, expected_failure=wasxfail,
                example=context.example or (minimal_example(detail) if outcome in ("failed", "xfailed") else ""),
                seconds=round(report.duration, 4), skip_kind=skip_kind, unsupported=unsupported,
                op=context.op, input=context.input, expected=context.expected, actual=context.actual,
                message=context.message, expected_reason=getattr(report, "kstate_expected_reason", ""),
                departs=departs or [], withheld=list(getattr(report, "kstate_withheld", [])),
            )
            self._outcomes[report.nodeid] = outcome_record
            self.report.outcomes.append(outcome_record)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from kstate_conformance.report import DEPARTS, write_reports
        from kstate_conformance.spec_rules import load_rules

        self.report.operations = self._operations()
        self.report.finished()  # every test's reports are in: no outcome changes from here on
        fixing = self.config.pluginmanager.get_plugin("kstate-expected-failures")
        if isinstance(fixing, _ExpectedFailurePlugin) and fixing.rewritten is not None:
            added, removed, fixed = fixing.rewritten
            self.report.fixed = f"--fix wrote {fixed.path}: {len(fixed.entries)} entries, {len(added)} added, " \
                                f"{len(removed)} removed"
        if self.required and self.report.outcomes:
            verdicts = self.report.rule_verdicts()
            self.report.requirement_shortfalls = {
                rule: verdicts.get(rule, "not run") for rule in self.required
                if verdicts.get(rule, "not run") not in ("pass", "n/a", DEPARTS)}
            if self.report.requirement_shortfalls and session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.exit_status = int(session.exitstatus)

        if self.config.getoption("--kstate-grouped-failures"):
            # Failures were recorded with full detail; only pytest's per-test traceback sections are left out.
            self.config.option.tbstyle = "no"
        directory = self.config.getoption("--kstate-report")
        if not directory:
            return
        titles = {r.id: (r.title, r.level) for r in load_rules().values()}
        expected = self.config.getoption("--kstate-expected-failures")
        self.report.expected_failures_file = str(expected or "")
        self.report_dir = Path(directory)
        write_reports(self.report, self.report_dir, titles)
        extend_report(self.report_dir / "report.md", self.report.implementation, self.report.rule_verdicts())

    def _operations(self) -> tuple[int, int] | None:
        """(operations the implementation supports, operations it can be sent), if it was built."""
        adapter = self.config.stash.get(ADAPTER_KEY, None)
        if adapter is None:
            return None
        from kstate.ops import load_all

        names = [name for name in load_all() if name not in NEVER_SENT]

        def supported(name: str) -> bool:
            try:
                return bool(adapter.supports(name))
            except Exception:  # an adapter that cannot answer supports() does not support the operation
                return False

        return sum(supported(name) for name in names), len(names)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from kstate_conformance.report import console_summary

        for line in console_summary(self.report):
            if line.startswith("=== "):
                terminalreporter.write_sep("=", line.strip("= "), bold=True)
            else:
                terminalreporter.write_line(line)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # The last line of the run, after pytest's own counts (as protobuf's conformance runner ends).
        from kstate_conformance.report import closing_line, headline

        if not self.report.outcomes and self.exit_status in (pytest.ExitCode.OK, pytest.ExitCode.USAGE_ERROR):
            return  # nothing ran (--collect-only, --help, a usage error): nothing to close
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        line = closing_line(self.report, self.report_dir, self.exit_status)
        if terminal is not None:
            # The headline figure (issue 31), then the closing line, the run's last.
            terminal.write_line(headline(self.report), bold=True)
            terminal.write_line(line, bold=True)


# --- JUnit XML ----------------------------------------------------------------------------------------------


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    # After pytest's junitxml plugin has written its file (trylast): tidy it for CI dashboards.
    xmlpath = getattr(session.config.option, "xmlpath", None)
    if xmlpath and is_suite_run(session.config) and Path(xmlpath).exists():
        tidy_junit(Path(xmlpath))


def tidy_junit(path: Path) -> None:
    """Drop hypothesis's base64 statistics properties; name each test class by its module
    (``kstate_conformance.tests.test_golden``), not by where the suite is installed."""
    import xml.etree.ElementTree as ET

    tree = ET.parse(path)
    for properties in tree.iter("properties"):
        for prop in list(properties):
            if prop.get("name", "").startswith("hypothesis-statistics"):
                properties.remove(prop)
    for parent in tree.iter():
        for child in list(parent):
            if child.tag == "properties" and not len(child):
                parent.remove(child)
    marker = "kstate_conformance.tests."
    for case in tree.iter("testcase"):
        classname = case.get("classname", "")
        index = classname.find(marker)
        if index > 0:
            case.set("classname", classname[index:])
    tree.write(path, encoding="utf-8", xml_declaration=True)


