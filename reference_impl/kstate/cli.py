"""The ``kstate`` command: vector replay, fixtures, conformance runs, mutation analysis, spec checks."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kstate.spark.audit_command import AUDIT_EPILOG, audit_choices, cmd_audit
from kstate.terminal import console, err_console

#: Run from a checkout, the shared material sits beside the repository (a public clone has none).
SHARED_VECTORS = Path("../shared/jvm-vectors/kafka-jvm-vectors.json")


def default_vectors() -> Path:
    """The vector file when none is named: ``$KSTATE_VECTORS``, else the shared material's."""
    return Path(os.environ.get("KSTATE_VECTORS") or SHARED_VECTORS)


def _is_shared_location(path: Path) -> bool:
    return path.resolve() == SHARED_VECTORS.resolve()

def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err_console, transient=True, disable=not err_console.is_terminal)


# --- vectors --------------------------------------------------------------------------------------------


def cmd_vectors_check(args: argparse.Namespace) -> int:
    from kstate.vectors import VectorFileError, check, load_vector_file

    path = Path(args.file) if args.file else default_vectors()
    if not path.exists() and _is_shared_location(path):
        # A clone without the shared material beside it: the vectors are imported in fixtures/kafka-jvm/, which
        # `fixtures verify` and the suite replay; only the raw file's replay is left out, said in one line.
        console.print(f"vectors check skipped: no vector file at {path} (the shared material is not beside this "
                      "clone; name a file or set KSTATE_VECTORS)", soft_wrap=True, markup=False, highlight=False)
        if args.junit:
            _write_skipped_junit(Path(args.junit), f"no vector file at {path}")
        return 0
    args.file = path
    try:
        document = load_vector_file(args.file)
    except VectorFileError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        return 2
    vectors = document["vectors"]
    if not vectors:
        # Zero checked is not a pass: the file is empty, or it is not the file that was meant.
        err_console.print(f"[red]error:[/red] {escape(str(args.file))} holds no vectors: nothing to check", soft_wrap=True)
        return 2
    with _progress() as progress:
        task = progress.add_task("replaying vectors", total=len(vectors))
        report = check(vectors, progress=lambda: progress.advance(task))
    table = Table(title=f"Kafka JVM vectors: {args.file}")
    for column in ("group", "op", "checked", "matched", "lenient", "mismatched", "unsupported"):
        table.add_column(column, justify="right" if column not in ("group", "op") else "left")
    for (group, java_op), row in report.counts().items():
        style = "red" if row["mismatched"] or row["unsupported"] else None
        table.add_row(group, java_op, *(str(row[k]) for k in ("checked", "matched", "lenient", "mismatched", "unsupported")),
                      style=style)
    table.add_row("total", "", str(len(report.results)), *(str(report.total(s)) for s in
                                                          ("matched", "lenient", "mismatched", "unsupported")),
                  style="bold")
    console.print(table)
    bad = [r for r in report.results if r.status in ("mismatched", "unsupported")]
    for result in bad[: args.show]:
        console.print(f"[red]{result.status}[/red] {result.group}/{result.case} ({result.java_op}): {result.detail}")
    if args.show_lenient:
        for result in (r for r in report.results if r.status == "lenient"):
            console.print(f"[yellow]lenient[/yellow] {result.group}/{result.case}: {result.detail}")
    if args.junit:
        _write_vector_junit(report, Path(args.junit))
    return 0 if report.ok else 1


def _write_skipped_junit(path: Path, reason: str) -> None:
    """A JUnit report of one skipped case, so that CI shows the replay was left out rather than passed."""
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name="kafka-jvm-vectors", tests="1", failures="0", skipped="1")
    case = ET.SubElement(suite, "testcase", classname="vectors", name="kafka-jvm-vectors")
    ET.SubElement(case, "skipped", message=reason)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def _write_vector_junit(report: object, path: Path) -> None:
    from xml.etree import ElementTree as ET

    from kstate.vectors import VectorReport

    assert isinstance(report, VectorReport)
    suite = ET.Element("testsuite", name="kafka-jvm-vectors", tests=str(len(report.results)),
                       failures=str(report.total("mismatched")), skipped=str(report.total("unsupported")))
    for result in report.results:
        case = ET.SubElement(suite, "testcase", classname=f"vectors.{result.group}", name=result.case)
        if result.status == "mismatched":
            ET.SubElement(case, "failure", message=result.detail[:500]).text = result.detail
        elif result.status == "unsupported":
            ET.SubElement(case, "skipped", message=result.detail)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


# --- fixtures -------------------------------------------------------------------------------------------


def _fixtures_root(args: argparse.Namespace) -> Path:
    if args.root:
        return Path(args.root)
    from kstate_conformance.data import fixtures_dir

    return fixtures_dir()


def _checkout_fixtures_root(args: argparse.Namespace) -> Path | None:
    """``--root``, else ./fixtures: generating and recording write into a checkout, never into an installed
    package's data; None (the error printed) where that is no fixtures directory."""
    root = Path(args.root or "fixtures")
    if not (root / "fixture.schema.json").exists():
        err_console.print(f"[red]error:[/red] {root} is not a fixtures directory (run from the repository root or pass --root)")
        return None
    return root


def cmd_fixtures_generate(args: argparse.Namespace) -> int:
    from kstate.fixtures_tool import (
        hand_written_documents,
        jvm_fixture_documents,
        reference_fixture_documents,
        stale_documents,
        write_documents,
    )

    root = _checkout_fixtures_root(args)
    if root is None:
        return 2
    documents = reference_fixture_documents() | hand_written_documents(root)
    vectors = Path(args.vectors) if args.vectors else default_vectors()
    if vectors.exists():
        documents.update(jvm_fixture_documents(vectors))
    elif args.vectors:
        err_console.print(f"[red]error:[/red] vector file {vectors} not found")
        return 2
    else:
        err_console.print(f"[yellow]note:[/yellow] {vectors} not found; kafka-jvm fixtures left as they are")
    if args.check:
        stale = stale_documents(documents, root)
        for rel in stale:
            console.print(f"[red]would change:[/red] {rel}")
        console.print(f"{len(documents)} fixture files regenerated in memory, {len(stale)} differ from {root}")
        return 1 if stale else 0
    changed = write_documents(documents, root)
    console.print(f"{len(documents)} fixture files, {len(changed)} written: {', '.join(changed) or 'none changed'}")
    return 0


def cmd_fixtures_verify(args: argparse.Namespace) -> int:
    from kstate.fixtures_tool import fixture_files, verify

    root = _fixtures_root(args)
    with _progress() as progress, _store_log(Path(args.log) if args.log else None) as logged:
        task = progress.add_task("verifying fixtures", total=len(fixture_files(root)))
        checked, failures = verify(root, progress=lambda _n: progress.advance(task))
    for failure in failures[: args.show]:
        console.print(f"[red]FAIL[/red] {failure.file} {failure.case_id}: {failure.detail}")
    console.print(f"{checked} fixture cases checked against the reference, {len(failures)} failed")
    if logged:
        where = f"written to {args.log}" if args.log else "not shown (--log FILE keeps them)"
        console.print(f"{len(logged)} store log lines (what Kafka logs too for the inputs the cases feed) {where}",
                      soft_wrap=True, markup=False, highlight=False)
    return 1 if failures else 0


@contextmanager
def _store_log(path: Path | None) -> Iterator[list[logging.LogRecord]]:
    """The ``kstate`` loggers' records, kept out of the output: counted, and written to ``path`` if given."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("kstate")
    handlers: list[logging.Handler] = [Keep()]
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(path, mode="w", encoding="utf-8"))
        handlers[-1].setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    saved = logger.propagate
    for handler in handlers:
        logger.addHandler(handler)
    # Without a handler of its own, Python's last-resort handler would print each warning amid the output.
    logger.propagate = False
    try:
        yield records
    finally:
        logger.propagate = saved
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()


# --- conformance, mutants, spec -------------------------------------------------------------------------


#: ``kstate conformance`` exit codes (documented in its --help and docs/porter.md), and pytest's they come from.
CONFORMANCE_EXIT_CODES = {
    0: "conforming: every selected test passed, was skipped (unsupported or not applicable) or failed as listed "
       "in the expected-failure file",
    1: "not conforming: a test failed, a test listed as an expected failure passed, or a rule named by "
       "--require-rules did not pass",
    2: "usage or setup error: a bad option (a --case that names no test, a --require-rules that names no rule); "
       "an implementation that cannot be imported, built or started, or a "
       "testee that fails its handshake (reported before any test runs); a missing or unreadable expected-failure "
       "file (without --fix)",
    3: "internal error of the suite or of pytest",
    4: "interrupted, or errors while collecting the suite",
    5: "no tests selected (for example a -k expression that matches nothing)",
}
_PYTEST_TO_CONFORMANCE = {0: 0, 1: 1, 2: 4, 3: 3, 4: 2, 5: 5}


def cmd_conformance(args: argparse.Namespace) -> int:
    import pytest

    from kstate_conformance.pytest_args import suite_args

    # Failures grouped by rule and operation with their input, expected and actual output, not one traceback
    # each (pytest's FAILED lines and tracebacks come back with: -- -rfE --tb=short).
    pytest_args = [*suite_args(), "--kstate-impl", args.impl, "--kstate-level", args.level, "-q", "-rE"]
    if not any(a.startswith("--tb") for a in args.pytest_args):
        pytest_args.append("--kstate-grouped-failures")
    profile = "quick" if args.quick else "thorough" if args.thorough else args.profile
    if profile:
        pytest_args += ["--kstate-profile", profile]
    if args.model:
        pytest_args += ["--kstate-model", args.model]
    if args.timeout is not None:
        pytest_args += ["--kstate-testee-timeout", str(args.timeout)]
    if args.start_timeout is not None:
        pytest_args += ["--kstate-testee-start-timeout", str(args.start_timeout)]
    if args.validate_protocol:
        pytest_args.append("--kstate-testee-validate")
    if args.fix and not args.expected_failures:
        err_console.print("[red]error:[/red] --fix needs --expected-failures FILE")
        return 2
    if args.expected_failures:
        expected = Path(args.expected_failures)
        if not expected.exists() and not args.fix:
            err_console.print(f"[red]error:[/red] the expected-failure file {expected} does not exist "
                              "(give --fix to create it from this run's failures)", soft_wrap=True, highlight=False)
            return 2
        pytest_args.append(f"--kstate-expected-failures={expected}")
    if args.fix:
        pytest_args.append("--kstate-fix")
    pytest_args += [f"--kstate-case={case}" for case in args.case or ()]
    if args.require_rules:
        pytest_args += [f"--kstate-require-rules={ids}" for ids in args.require_rules]
    report_dir = Path(args.report) if args.report else None
    if args.compare and report_dir is None:
        err_console.print("[red]error:[/red] --compare needs --report DIR (the verdicts are read from results.json)")
        return 2
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        # "--opt=path" forms: pytest would take a separate path token for a test path and move its rootdir.
        pytest_args += [f"--junitxml={report_dir / 'junit.xml'}", f"--kstate-report={report_dir}"]
    if not args.no_progress:
        # Outside a terminal (CI logs) the display prints a heartbeat line naming the running test instead.
        pytest_args += ["--kstate-progress"]
        if err_console.is_terminal:
            pytest_args += ["-o", "console_output_style=classic"]
    status = _PYTEST_TO_CONFORMANCE.get(int(pytest.main(pytest_args + list(args.pytest_args))), 3)
    if args.compare and report_dir is not None and status in (0, 1):
        from kstate_conformance.differential import compare_runs

        diff = compare_runs(Path(args.compare), report_dir / "results.json")
        for line in diff.describe():
            console.print(line, soft_wrap=True, markup=False)
        if not diff.identical:
            return status or 1
    return status


# --- system scenarios -----------------------------------------------------------------------------------


#: ``kstate system`` exit codes (its --help and docs/porter.md); pytest's map onto them as the conformance run's do.
SYSTEM_EXIT_CODES = {
    0: "nothing failed: every selected scenario passed, or was skipped as unsupported by the instance (its describe "
       "does not list what the scenario needs) or for another stated reason",
    1: "a scenario failed",
    2: "usage or setup error: a bad option, an instance command that cannot be run or whose --describe is unusable, "
       "no system_tests directory",
    3: "internal error of the scenarios or of pytest",
    4: "interrupted, or errors while collecting the scenarios",
    5: "no scenarios selected (for example a -k expression that matches nothing)",
}


def _system_tests_dir(given: str | None) -> Path | None:
    """``--tests``, else ``system_tests`` in the working directory or in the checkout kstate runs from."""
    import kstate

    candidates = [Path(given)] if given else [Path.cwd() / "system_tests",
                                              Path(kstate.__file__).resolve().parents[2] / "system_tests"]
    return next((c.resolve() for c in candidates if (c / "conftest.py").is_file()), None)


def cmd_system(args: argparse.Namespace) -> int:
    """Run the system scenarios (a real broker, instance processes) against an instance implementation (INST-1),
    the reference by default; with --report, JUnit XML, Markdown and HTML reports (INST-42)."""
    import pytest

    from kstate.app.process import InstanceCommand
    from kstate_conformance.system_report import read_junit, write_system_reports

    tests = _system_tests_dir(args.tests)
    if tests is None:
        err_console.print("[red]error:[/red] no system_tests directory here or in the kstate checkout; run from a "
                          "kstate-kit checkout or give --tests DIR", soft_wrap=True, highlight=False)
        return 2
    # Described here first, so that an unusable command is one clear error before a broker starts (INST-41).
    command = InstanceCommand.from_command_line(args.instance) if args.instance else InstanceCommand.reference()
    console.print(f"instance under test: {command}", soft_wrap=True, highlight=False, markup=False)
    pytest_args = [str(tests), "-p", "no:cacheprovider", "-q", "-rfEs", f"--instance={shlex.join(command.argv)}"]
    if args.k:
        pytest_args += ["-k", args.k]
    report_dir = Path(args.report) if args.report else None
    junit = None
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        junit = report_dir / "system-junit.xml"
        pytest_args.append(f"--junitxml={junit}")
    status = _PYTEST_TO_CONFORMANCE.get(int(pytest.main(pytest_args + list(args.pytest_args))), 3)
    if junit is not None and junit.exists():
        run = read_junit(junit)
        write_system_reports(run, junit.parent)
        console.print(run.closing_line(report_dir), soft_wrap=True, highlight=False, markup=False)
    return status


def cmd_mutants(args: argparse.Namespace) -> int:
    import time

    from kstate_conformance.mutants import all_mutants
    from kstate_conformance.mutation import (
        MutantResult,
        MutationRunError,
        describe_result,
        run_all,
        write_kill_map,
        write_mutation_report,
    )
    from kstate_conformance.traceability import MUTANT_COVERED_PREFIXES, mutant_coverage

    names = args.names or None
    known = all_mutants()
    if args.list:
        from kstate_conformance.mutants import mutant_listing

        # Plain print: a listing read by people and by grep, never wrapped or styled.
        print(mutant_listing({n: known[n] for n in names if n in known} if names else known))
        return 0
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        err_console.print(f"[red]error:[/red] no mutant named {', '.join(unknown)} "
                          "(`kstate mutants --list` lists them, grouped by family, with their rules)")
        return 2
    total = len(names) if names else len(known)
    started = time.monotonic()
    with _progress() as progress:
        task = progress.add_task("running the suite on mutants", total=total)

        def decided(result: MutantResult) -> None:
            # Each mutant as it is decided: the analysis takes minutes and must not be silent.
            style = "green" if result.killed else "red"
            line = describe_result(result)
            if err_console.is_terminal:
                progress.console.print(f"[{style}]{line}[/{style}]", soft_wrap=True, highlight=False, markup=True)
            else:
                err_console.print(line, soft_wrap=True, highlight=False, markup=False)
            progress.advance(task)

        try:
            results = run_all(names, workers=args.workers, on_result=decided, kill_map=args.kill_map,
                              timeout=args.timeout)
        except MutationRunError as exc:
            err_console.print(f"[red]error:[/red] {exc}", soft_wrap=True, highlight=False, markup=False)
            return 3
    elapsed = time.monotonic() - started
    table = Table(title="Mutation analysis")
    for column in ("mutant", "family", "rules", "verdict", "seconds", "tests", "first failing test"):
        table.add_column(column)
    for r in sorted(results, key=lambda r: (r.family, r.name)):
        table.add_row(r.name, r.family, ", ".join(r.rules), "[green]killed[/green]" if r.killed else "[red]SURVIVED[/red]",
                      f"{r.seconds:.1f}", str(r.tests_run), r.first_failure[:90])
    console.print(table)
    killed = sum(r.killed for r in results)
    console.print("slowest mutants: " + ", ".join(
        f"{r.name} {r.seconds:.1f} s ({r.tests_run} tests)" for r in sorted(results, key=lambda r: -r.seconds)[:10]),
        soft_wrap=True, markup=False, highlight=False)
    console.print(f"mutation score: {killed}/{len(results)} killed in {elapsed:.0f} s "
                  f"({sum(r.seconds for r in results):.0f} s of mutant runs, {args.workers} at a time)",
                  soft_wrap=True, markup=False, highlight=False)
    without_mutant, unknown_rules = mutant_coverage()
    console.print(f"required rules of {', '.join(MUTANT_COVERED_PREFIXES)} that no mutant breaks: "
                  f"{len(without_mutant)}" + (f" ({', '.join(without_mutant)})" if without_mutant else ""),
                  soft_wrap=True, markup=False)
    for name, rules in sorted(unknown_rules.items()):
        console.print(f"[red]mutant {name} cites rules that do not exist:[/red] {', '.join(rules)}")
    if args.report:
        write_mutation_report(results, Path(args.report), without_mutant)
        console.print(f"mutation report written to {args.report}/mutation.md")
    if args.write_kill_map:
        written = write_kill_map(results, args.kill_map)
        console.print(f"kill map written to {written}", soft_wrap=True, markup=False, highlight=False)
    return 0 if killed == len(results) else 1


def _ops_index_file(args: argparse.Namespace) -> Path:
    if args.file:
        return Path(args.file)
    from kstate_conformance.data import spec_dir

    return spec_dir() / "ops-index.md"


def cmd_ops(args: argparse.Namespace) -> int:
    """The operation index (spec/ops-index.md): fields, types, rules, Kafka methods, leniency, an example."""
    from kstate.ops import load_all
    from kstate.ops.index import build_index, render_json, render_markdown

    unknown = [name for name in args.names if name not in load_all()]
    if unknown:
        err_console.print(f"[red]error:[/red] unknown operation(s): {', '.join(unknown)} (kstate ops lists them all)")
        return 2
    if (args.write or args.check) and (args.names or args.json):
        err_console.print("[red]error:[/red] --write and --check cover the whole index in Markdown: no names, no --json")
        return 2
    from kstate_conformance.data import spec_dir

    index = build_index(_fixtures_root(args), args.names or None, spec_root=spec_dir())
    if args.json:
        sys.stdout.write(render_json(index))
        return 0
    text = render_markdown(index)
    if args.write or args.check:
        target = _ops_index_file(args)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if args.check:
            if current == text:
                console.print(f"{target} is up to date ({len(index)} operations)", markup=False, highlight=False)
                return 0
            err_console.print(f"[red]stale:[/red] {escape(str(target))} differs from the registry and fixtures; "
                              "run kstate ops --write", soft_wrap=True)
            return 1
        if current != text:
            target.write_text(text, encoding="utf-8")
        console.print(f"{target}: {len(index)} operations, {'written' if current != text else 'unchanged'}",
                      markup=False, highlight=False)
        return 0
    if args.names or args.markdown:
        sys.stdout.write(text if args.markdown else render_markdown(index, preamble=False))
        return 0
    _print_ops_overview(index)
    return 0


def _print_ops_overview(index: list[dict[str, object]]) -> None:
    """One row an operation: its fields (``?`` optional), rules, Kafka method, leniency."""
    table = Table(title=f"{len(index)} operations (kstate ops NAME for fields, types and an example)")
    for column in ("operation", "input", "output", "rules", "Kafka", "lenient"):
        table.add_column(column, overflow="fold")

    def names(fields: object) -> str:
        assert isinstance(fields, list)
        return ", ".join(f"{f['name']}{'' if f['required'] else '?'}" for f in fields)

    for entry in index:
        rules, kafka = entry["rules"], entry["kafka"]
        assert isinstance(rules, list) and isinstance(kafka, list)
        table.add_row(str(entry["name"]), names(entry["inputs"]), names(entry["outputs"]), ", ".join(rules),
                      ", ".join(kafka), "yes" if entry["lenient"] else "")
    console.print(table, markup=False, highlight=False)


def cmd_testee(args: argparse.Namespace) -> int:
    from kstate.testee import main as testee_main

    return testee_main([])


def cmd_spec_check(args: argparse.Namespace) -> int:
    from kstate_conformance.traceability import analyse

    trace = analyse()
    console.print(f"{len(trace.rules)} rules, {len(trace.rules) - len(trace.uncovered) - len(trace.not_checkable)} "
                  f"cited by a test")
    if trace.not_checkable:
        console.print(f"{len(trace.not_checkable)} rules are cited by the project's own tests only, not found here "
                      f"(run from a checkout to check them): {', '.join(trace.not_checkable)}")
    for rule in trace.uncovered:
        console.print(f"[red]no test cites[/red] {rule}")
    for rule, ids in sorted(trace.unknown.items()):
        console.print(f"[red]unknown rule[/red] {rule} cited by {', '.join(sorted(ids)[:3])}")
    for test in trace.untagged_tests:
        console.print(f"[red]test cites no rule[/red] {test}")
    for rule in trace.without_mutant:
        console.print(f"[red]no mutant breaks[/red] {rule} (required)")
    for name, rules in sorted(trace.unknown_mutant_rules.items()):
        console.print(f"[red]mutant cites unknown rules[/red] {name}: {', '.join(rules)}")
    if trace.without_independent_evidence:
        console.print(f"[red]{len(trace.without_independent_evidence)} required rules have no kafka-jvm or spec "
                      f"case[/red] (expected outputs only from the reference): "
                      f"{', '.join(trace.without_independent_evidence)}")
    if trace.without_store_case:  # reported only: a rule may be checkable on a pure operation alone
        excused = _excused_at_every_store(trace.without_store_case)
        open_rules = [r for r in trace.without_store_case if r not in excused]
        console.print(f"[yellow]{len(trace.without_store_case)} required rules name a store behaviour but no case "
                      f"reaches them through the store operations[/yellow] (issue 25): "
                      f"{', '.join(open_rules) or 'none'} unexplained; "
                      f"{', '.join(excused) or 'none'} marked unable to apply at every store family in the rule x "
                      f"place matrix, each with its reason (--places-report)")
    _print_place_matrix(getattr(args, "places_report", None))
    return 0 if trace.ok else 1


def _excused_at_every_store(rules: list[str]) -> list[str]:
    """Those of ``rules`` the rule x place matrix marks unable to apply at every store family it would apply at
    (issue 32 E): none is left where a store case could reach them, and each has its reason in ``NOT_APPLICABLE``."""
    from kstate_conformance.rule_places import build_matrix

    matrix = build_matrix()
    return [r for r in rules if r in matrix.applies
            and not any(p.startswith("store:") for p in matrix.applies[r])
            and any(p.startswith("store:") for p in matrix.excused.get(r, {}))]


def _print_place_matrix(report: str | None) -> None:
    """The rule x place matrix's gaps (reported, never failing), and the whole matrix into ``report`` if given."""
    from pathlib import Path

    from kstate_conformance.rule_places import PLACES, build_matrix, matrix_markdown

    matrix = build_matrix()
    gaps = matrix.rules_with_gaps
    excused = sum(len(v) for v in matrix.excused.values())
    console.print(f"[yellow]rule x place matrix: {len(gaps)} of {len(matrix.applies)} required and hardened store rules have a "
                  f"place no case reaches[/yellow] ({excused} places marked as unable to apply, with a reason; "
                  f"--places-report FILE for the whole matrix):")
    table = Table(title="rule x place gaps (GAP: the rule applies there, no case checks it)")
    for column in ("rule", *PLACES):
        table.add_column(column)
    for rule in gaps:
        table.add_row(rule, *(matrix.cell(rule, p) for p in PLACES))
    console.print(table)
    if report:
        Path(report).write_text(matrix_markdown(matrix), encoding="utf-8")
        console.print(f"rule x place matrix written to {report}")


MAIN_DESCRIPTION = """\
The kit for Kafka Streams state stores: replay Kafka's recorded vectors, rebuild and verify the golden
fixtures, run the conformance suite against an implementation, list the operations, check the spec,
and audit a running application's stores against its changelog topic."""
MAIN_EPILOG = """\
Run 'kstate COMMAND --help' for a command's options. The operation vocabulary a port implements is
listed by 'kstate ops' (spec/ops-index.md); the spec is in spec/; the README says how to start, the guides in docs/ the rest.
"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kstate-kit")
    except PackageNotFoundError:
        import kstate

        return str(getattr(kstate, "__version__", "unknown"))


# --- inspect --------------------------------------------------------------------------------------------


def cmd_inspect(args: argparse.Namespace) -> int:
    """Read-only inspection of a state directory (LAY-*, OFF-*): 0 clean, 1 violations, 2 usage/not a state dir."""
    import json

    from kstate.codecs.key_schemas import segmented_schemas
    from kstate.inspect import InspectError, dump_store, dump_store_lines, inspect_state_dir
    from kstate.terminal import table_console

    out = table_console()  # a page wide, not a log line, when written to a file (issue 34)

    try:
        if args.dump:
            from kstate.stores.restore import gc_paused
            from kstate.terminal import RowProgress

            # A row counter on stderr while the store is read, on a terminal only; the collector paused, as the rows
            # are acyclic and freed as they are printed (issue 35).
            with gc_paused(), RowProgress(err_console, f"dumping {args.dump}") as progress:
                if args.json:
                    # dump_store_lines: json.dumps(row, sort_keys=True) of each row byte for byte, at a fraction of
                    # its cost per row; the lines written in blocks rather than by one print each (issue 35).
                    write = sys.stdout.write
                    block: list[str] = []
                    try:
                        for line in dump_store_lines(args.state_dir, args.dump, task=args.task):
                            block.append(line)
                            progress.tick()
                            if len(block) >= 1024:
                                block.append("")
                                write("\n".join(block))
                                block = []
                    finally:  # the rows read before an error are printed, as one print per row printed them
                        if block:
                            block.append("")
                            write("\n".join(block))
                    return 0
                materialized = []
                for row in dump_store(args.state_dir, args.dump, task=args.task):
                    materialized.append(row)
                    progress.tick()
            table = Table(title=f"{args.dump}: decoded rows")
            # A segmented family's row names its window by the family's name (kstate.inspect.<family>_rows).
            columns = ("task", "segment_start", "cf", "key", "value", "timestamp", "headers", *segmented_schemas(),
                       "versions", "error")
            shown = [c for c in columns if any(c in r for r in materialized)]
            for column in shown:
                table.add_column(column, overflow="fold")
            for row in materialized:
                table.add_row(*("" if row.get(c) is None else str(row[c]) for c in shown))
            out.print(table)
            return 0
        report = inspect_state_dir(args.state_dir)
    except (InspectError, OSError) as exc:  # OSError: a directory the walk cannot list
        err_console.print(f"[red]error:[/red] {exc}")
        return 2
    if args.json:
        print(json.dumps(report.to_json(), sort_keys=True))
        return 0 if report.clean else 1
    table = Table(title=f"state directory {report.root}")
    for column in ("task", "store", "type", "mode", "segments", "column families (rows)", "rows", "offsets",
                   "status"):
        table.add_column(column, overflow="fold")  # folded, never cut short with an ellipsis
    for task in report.tasks:
        for store in task.stores:
            families: dict[str, int] = {}
            offsets: dict[str, int] = {}
            for db in store.databases:
                for cf, n in db.column_families.items():
                    families[cf] = families.get(cf, 0) + n
                offsets.update(db.committed_offsets)
            segments = [str(db.segment_start) for db in store.databases if db.segment_start is not None]
            status = "unclean shutdown" if any(db.unclean for db in store.databases) else ", ".join(
                sorted({"unreadable" if db.error else db.status or "no status" for db in store.databases}))
            table.add_row(task.task, store.name, store.store_type, store.mode or "", ", ".join(segments),
                          ", ".join(f"{cf} ({n})" for cf, n in families.items()), str(store.rows),
                          ", ".join(f"{tp}={o}" for tp, o in offsets.items()), status)
        if task.checkpoint:
            table.add_row(task.task, ".checkpoint", "", "", "", "", "",
                          ", ".join(f"{tp}={o}" for tp, o in task.checkpoint.items()), "")
    out.print(table)
    for note in report.notes:
        out.print(f"[yellow]note:[/yellow] {escape(note)}", markup=True, highlight=False)
    for warning in report.warnings:
        out.print(f"[yellow]warning:[/yellow] {escape(warning)}", markup=True, highlight=False)
    for v in report.violations:
        out.print(f"[red]{v.rule} {v.kind}[/red] {escape(v.path)}: {escape(v.message)}", highlight=False)
    out.print(f"{len(report.tasks)} tasks, {sum(len(t.stores) for t in report.tasks)} stores, "
                  f"{len(report.violations)} violations")
    return 0 if report.clean else 1


def _command_group(sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str,
                   description: str) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    """A command of commands (``kstate vectors``, ``fixtures``, ``spec``): its subparsers, each an action."""
    return sub.add_parser(name, help=help, description=description).add_subparsers(
        dest="action", required=True, title="commands", metavar="COMMAND")


def _exit_codes_epilog(codes: dict[int, str]) -> str:
    """A command's --help epilog listing its exit codes, each wrapped under its number."""
    return "exit codes:\n" + "\n".join(textwrap.fill(text, 78, initial_indent=f"  {code}  ", subsequent_indent="     ")
                                         for code, text in codes.items())


def _add_vectors_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate vectors check``."""
    vectors = _command_group(
        sub, "vectors", "replay recorded Kafka vectors",
        "Vectors recorded by running Apache Kafka's own Java classes (../shared/jvm-vectors/), replayed "
        "against the reference. They are also imported into fixtures/kafka-jvm/, which `kstate fixtures "
        "verify` and the suite run without the raw file.")
    check = vectors.add_parser(
        "check", help="replay every vector of FILE against the reference codecs",
        description="Replay every vector of FILE against the reference: a table per group and Java method of "
                    "matched, lenient, mismatched and unsupported vectors. Exit 0 all matched (or skipped: no file "
                    "at the default location), 1 a mismatch or an unsupported vector, 2 an unreadable or empty file.")
    check.add_argument("file", nargs="?",
                       help=f"a vector file in the jvm-vectors layout (default: $KSTATE_VECTORS, else {SHARED_VECTORS}; "
                            "if that default location holds no file, the check is skipped with a notice and exit 0)")
    check.add_argument("--junit", help="write a JUnit XML report here")
    check.add_argument("--show", type=int, default=20, help="mismatches to print (default 20)")
    check.add_argument("--show-lenient", action="store_true", help="list the vectors Kafka accepted leniently")
    check.set_defaults(func=cmd_vectors_check)


def _add_fixtures_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser],
                           add_record_command: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None],
                           ) -> None:
    """``kstate fixtures generate``, ``record`` (Kafka's answers: ``add_record_command``) and ``verify``."""
    fixtures = _command_group(
        sub, "fixtures", "golden fixtures",
        "The golden fixtures (JSON with a JSON Schema): cases of an operation's input and expected output, "
        "recorded from Kafka (kafka-jvm), worked out from the spec (spec) or generated by the reference "
        "(reference).")
    generate = fixtures.add_parser(
        "generate", help="rebuild the fixtures deterministically",
        description="Rebuild fixtures/ in a checkout: the reference cases, and the import of Kafka's vectors when the "
                    "vector file is there; the hand-written fixtures/spec/ keeps its cases, only each case's derived "
                    "requires (store type, backend, features) is filled in.")
    generate.add_argument("--root", help="fixtures directory (default: ./fixtures)")
    generate.add_argument("--vectors", help=f"Kafka vector file to import (default: $KSTATE_VECTORS, else {SHARED_VECTORS})")
    generate.add_argument("--check", action="store_true", help="change nothing; exit 1 if a byte would change")
    generate.set_defaults(func=cmd_fixtures_generate)
    add_record_command(fixtures)
    verify = fixtures.add_parser(
        "verify", help="validate every fixture and check it against the reference",
        description="Validate every fixture file against the schema and replay every case against the reference. "
                    "Exit 1 if a case fails.")
    verify.add_argument("--root", help="fixtures directory (default: the shipped fixtures)")
    verify.add_argument("--show", type=int, default=20, help="failures to print (default 20)")
    verify.add_argument("--log", metavar="FILE",
                        help="write the store log lines the cases cause (Kafka's warnings, e.g. for an expired put) "
                             "here; without it they are only counted")
    verify.set_defaults(func=cmd_fixtures_verify)


def _add_conformance_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate conformance``: the suite's options, passed on to its pytest plugin."""
    conformance = sub.add_parser(
        "conformance", help="run the conformance suite against an implementation",
        description="Run the conformance suite against an implementation. The implementation is loaded (or the "
                    "testee started and its handshake completed) before any test is collected.",
        epilog=_exit_codes_epilog(CONFORMANCE_EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    conformance.add_argument("--impl", default="reference",
                             help="reference, mutant:NAME, module:factory, kafka-jvm:VERSION (Apache Kafka under test, built with Maven), or cmd:COMMAND for an out-of-process testee")
    conformance.add_argument("--model", metavar="IMPL",
                             help="a second implementation, e.g. kafka-jvm:4.4.0, that the paired state machines "
                                  "(test_paired_machines.py) compare --impl with step by step: answers, refusals and "
                                  "the rows left on disk; without it they do not run (KSTATE_MODEL also names it)")
    conformance.add_argument("--report", help="write reports (JUnit XML, Markdown, HTML) into this directory")
    conformance.add_argument("--level", default="tentative", choices=["required", "recommended", "hardened", "tentative"],
                             help="run the cases up to this level: required only (what Kafka 4.4 does), with "
                                  "recommended, with hardened (where the reference deliberately does better than "
                                  "Kafka), or all (default tentative: all)")
    conformance.add_argument("--profile", choices=["quick", "default", "thorough"],
                             help="hypothesis profile: quick (few examples), default (derandomized, no deadline) or "
                                  "thorough (many examples); --quick is the same as --profile quick")
    conformance.add_argument("--quick", action="store_true", help="the quick hypothesis profile")
    conformance.add_argument("--thorough", action="store_true", help="the thorough hypothesis profile")
    conformance.add_argument("--timeout", type=float, help="seconds a testee has to answer one request (default 10)")
    conformance.add_argument("--start-timeout", type=float,
                             help="seconds a testee has to start and answer the hello (default 30)")
    conformance.add_argument("--validate-protocol", action="store_true",
                             help="check every testee answer against spec/testee-protocol.schema.json")
    conformance.add_argument("--expected-failures", metavar="FILE",
                             help="strict expected-failure list (text: one test id a line, '#' comments; or JSON)")
    conformance.add_argument("--fix", action="store_true",
                             help="rewrite (or create) the expected-failure list with this run's failures, each "
                                  "with its reason, say what changed, and exit 0")
    conformance.add_argument("--case", action="append", metavar="ID",
                             help="run exactly this test (repeatable): a golden case id from a failure "
                                  "(kafka-jvm.varint.varint_edge_4) or a test id as the reports name it; unlike "
                                  "-- -k, no test whose name merely contains it")
    conformance.add_argument("--require-rules", action="append", metavar="IDS",
                             help="rule families or rule IDs, comma-separated (e.g. PRIM,TSKV-3), whose every rule "
                                  "must pass: one that is unsupported, partial, failed or not run fails the run "
                                  "(exit 1), so that a pipeline cannot pass by supporting nothing")
    conformance.add_argument("--compare", metavar="RESULTS",
                             help="results.json (or its directory) of another run: fail unless verdicts are identical")
    conformance.add_argument("--no-progress", action="store_true", help="no progress display, even on a terminal")
    conformance.add_argument("pytest_args", nargs="*", help="further pytest arguments (after --)")
    conformance.set_defaults(func=cmd_conformance)


def _add_system_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate system``: the system scenarios."""
    system = sub.add_parser(
        "system", help="run the system scenarios against an instance implementation (a real broker, processes)",
        description=" ".join((cmd_system.__doc__ or "").split()),
        epilog=_exit_codes_epilog(SYSTEM_EXIT_CODES),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    system.add_argument("--instance", metavar="CMD", default=os.environ.get("KSTATE_INSTANCE") or None,
                        help="the instance command line (spec/instance-protocol.md), split as a shell would; default "
                             "KSTATE_INSTANCE, else the reference (python -m kstate.app)")
    system.add_argument("--report", metavar="DIR",
                        help="write system-junit.xml, system.md and system.html (each scenario's outcome and the "
                             "instance's describe) into DIR")
    system.add_argument("-k", metavar="EXPR", help="only the scenarios matching this pytest -k expression")
    system.add_argument("--tests", metavar="DIR", help="the system_tests directory (default: ./system_tests, else the "
                                                       "checkout's)")
    system.add_argument("pytest_args", nargs="*", help="further pytest arguments (after --)")
    system.set_defaults(func=cmd_system)


def _add_mutants_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate mutants``: the mutation analysis."""
    mutants = sub.add_parser("mutants", help="mutation analysis: the suite must fail every mutant",
                             description="Run the conformance suite on deliberately broken implementations "
                                         "(mutants); the suite must fail every one. `kstate mutants --list` "
                                         "lists the mutants by family, with the spec rules each breaks.")
    mutants.add_argument("names", nargs="*", help="mutants to run (default all); see --list for the names")
    mutants.add_argument("--list", action="store_true",
                         help="list the mutants (or the named ones) grouped by family, each with its rules "
                              "and description, and run nothing")
    mutants.add_argument("--workers", type=int, default=2, help="mutants run in parallel (default 2)")
    mutants.add_argument("--report", help="write mutation.md and mutation.json into this directory")
    mutants.add_argument("--kill-map", default=None,
                         help="the kill map ordering each mutant's tests (default: the one shipped with the suite); "
                              "a missing or stale map costs time, never a verdict")
    mutants.add_argument("--write-kill-map", action="store_true",
                         help="record the test that killed each mutant in the kill map (--kill-map, or the shipped one)")
    mutants.add_argument("--timeout", type=float, default=600, help="seconds one mutant may run (default 600)")
    mutants.set_defaults(func=cmd_mutants)


def _add_ops_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate ops``: the operation index."""
    ops = sub.add_parser("ops", help="the operation index: every operation's fields, types, rules and an example",
                         description="Without OP: one line an operation. With OP: its fields, their types, rules, "
                                     "Kafka method, leniency and an example, in Markdown.")
    ops.add_argument("names", nargs="*", metavar="OP", help="operations to show in full (default: one line each)")
    ops.add_argument("--json", action="store_true", help="print the index as JSON (every field of every operation)")
    ops.add_argument("--markdown", action="store_true", help="print the whole index as Markdown (spec/ops-index.md)")
    ops.add_argument("--write", action="store_true", help="write the Markdown index to spec/ops-index.md")
    ops.add_argument("--check", action="store_true",
                     help="change nothing; exit 1 if spec/ops-index.md differs from the generated index")
    ops.add_argument("--file", help="the index file for --write and --check (default spec/ops-index.md)")
    ops.add_argument("--root", help="fixtures directory the field types and examples are read from (default: shipped)")
    ops.set_defaults(func=cmd_ops)


def _add_testee_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate testee``: the reference served as a testee."""
    testee = sub.add_parser(
        "testee", help="serve the reference implementation as a testee on stdin/stdout",
        description="Serve the reference implementation as an out-of-process testee: JSON lines on stdin and stdout "
                    "(spec/testee-protocol.md), until stdin ends or a shutdown request. Run by the suite as "
                    "`kstate conformance --impl \"cmd:kstate testee\"`; a model for a testee in another language.")
    testee.set_defaults(func=cmd_testee)


def _add_spec_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate spec check``: traceability."""
    spec = _command_group(
        sub, "spec", "the normative spec",
        "The normative spec (spec/*.md): every rule has an ID, a level and the Kafka source it was read "
        "from.")
    spec_check = spec.add_parser(
        "check", help="every rule cited by a test; every citation names a rule",
        description="Traceability: every spec rule is cited by a test, every citation names a rule, every required "
                    "rule of the mutant-covered families is broken by a mutant and has a kafka-jvm or spec case. "
                    "Reports the rule x place matrix: each required store rule at the places it applies (the pure "
                    "operation, a store of each family, after a crash, a restore, a reopen) and those no case reaches.")
    spec_check.add_argument("--places-report", metavar="FILE",
                            help="write the whole rule x place matrix as Markdown to FILE")
    spec_check.set_defaults(func=cmd_spec_check)


def _add_audit_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate audit``: the Spark changelog oracle, with the Kafka client's options."""
    audit = sub.add_parser("audit", help="compare instances' stores with the Spark changelog oracle",
                           description=cmd_audit.__doc__, epilog=AUDIT_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    audit.add_argument("--bootstrap", required=True, help="the Kafka bootstrap address (host:port[,host:port...])")
    audit.add_argument("--application-id", required=True, help="the Kafka Streams application.id")
    audit.add_argument("--store", required=True, action="append", metavar="NAME[:TYPE]",
                       help="a store name (changelog <application-id>-<store>-changelog), optionally with its type; "
                            "repeatable: the stores are audited in one run, one summary line each")
    audit.add_argument("--store-type", choices=audit_choices(),
                       help="the type of every store given without :TYPE, which fixes its value layout and semantics "
                            "(default: detected from the state directories; timestamped_kv_headers: the legacy alias "
                            "of timestamped_kv_with_headers)")
    audit.add_argument("--retention-ms", type=int, metavar="MS",
                       help="window and session stores: the store's retention period")
    audit.add_argument("--history-retention-ms", type=int, metavar="MS",
                       help="versioned stores: the store's history retention")
    audit.add_argument("--retain-duplicates", action="store_true",
                       help="window stores: the store keeps duplicates (compared per key and window start)")
    audit.add_argument("--state-dir", action="append", required=True, help="an instance's state.dir (repeatable)")
    audit.add_argument("--master", default="local[*]",
                       help="Spark master: local[*] (default: every core), local[N] or a cluster URL")
    audit.add_argument("--engine", choices=["spark", "python"], default="spark",
                       help="compute the expected state with Spark (default) or in this process")
    audit.add_argument("--source", choices=["python", "spark-kafka"], default="python",
                       help="the Spark engine's reader of the changelog: the kit's Python Data Source (default) or "
                            "Spark's own Kafka source (spark-sql-kafka-0-10, fetched by Maven on first use)")
    audit.add_argument("--legacy", action="append", default=[], metavar="P:OFFSET:TYPE",
                       help="partition P was upgraded in place from TYPE; records before OFFSET are legacy "
                            "(one key-value --store only)")
    audit.add_argument("--report", metavar="PATH",
                       help="write the differences to PATH: counts per store and kind, then the differences")
    audit.add_argument("--report-format", choices=["md", "html", "jsonl"],
                       help="the report's format (default: by PATH's suffix: .md, .html, .jsonl)")
    audit.add_argument("--quiet", "-q", action="store_true",
                       help="no progress display and no notes on stderr (errors and warnings only)")
    client = audit.add_argument_group("Kafka client configuration (for a secured cluster)")
    client.add_argument("-X", dest="client_property", action="append", default=[], metavar="KEY=VALUE",
                        help="a librdkafka property, e.g. -X client.id=auditor (repeatable)")
    client.add_argument("--client-config", metavar="FILE", help="a properties file of librdkafka properties (key=value)")
    client.add_argument("--security-protocol", choices=["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
                        help="security.protocol")
    client.add_argument("--sasl-mechanism", metavar="MECHANISM", help="sasl.mechanism: PLAIN, SCRAM-SHA-256, ...")
    client.add_argument("--sasl-username", metavar="USER", help="sasl.username")
    client.add_argument("--sasl-password-env", metavar="VAR",
                        help="the environment variable holding sasl.password (kept off the command line)")
    client.add_argument("--ssl-ca", metavar="FILE", help="ssl.ca.location: the CA certificate(s), PEM")
    client.add_argument("--ssl-cert", metavar="FILE", help="ssl.certificate.location: the client certificate, PEM")
    client.add_argument("--ssl-key", metavar="FILE", help="ssl.key.location: the client key, PEM")
    client.add_argument("--connect-timeout", type=float, default=15.0, metavar="SECONDS",
                        help="seconds to wait for the broker's first answer (default 15)")
    audit.set_defaults(func=cmd_audit)


def _add_inspect_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``kstate inspect``: a state directory, read only."""
    inspect = sub.add_parser("inspect", help="read-only inspection of a Kafka Streams state directory")
    inspect.add_argument("state_dir", help="a state.dir, an application directory or a task directory")
    inspect.add_argument("--dump", metavar="STORE", help="print the decoded rows of STORE")
    inspect.add_argument("--task", help="with --dump: only this task (for example 0_1)")
    inspect.add_argument("--json", action="store_true", help="machine output: one JSON document (JSON lines with --dump)")
    inspect.set_defaults(func=cmd_inspect)


def build_parser() -> argparse.ArgumentParser:
    from kstate.app.operator_commands import add_parsers as add_operator_parsers
    from kstate_conformance.kafka_jvm import commands as kafka_commands

    parser = argparse.ArgumentParser(prog="kstate", description=MAIN_DESCRIPTION, epilog=MAIN_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}",
                        help="print the kstate-kit version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")

    _add_vectors_commands(sub)
    _add_fixtures_commands(sub, kafka_commands.add_record_command)
    kafka_commands.add_verdicts_command(sub)
    for add in (_add_conformance_command, _add_system_command, _add_mutants_command, _add_ops_command,
                _add_testee_command, _add_spec_commands, _add_audit_command, _add_inspect_command):
        add(sub)
    add_operator_parsers(sub)  # demo, broker, instance (issue 34)
    return parser


#: The commands that open many temporary stores, run with TMPDIR on tmpfs where there is one (kstate.scratch).
_SCRATCH_COMMANDS = {cmd_conformance, cmd_mutants, cmd_fixtures_generate, cmd_fixtures_verify, cmd_system}


def main(argv: list[str] | None = None) -> int:
    from kstate.errors import KStateError
    from kstate.scratch import scratch_temp_dir

    args = build_parser().parse_args(argv)
    try:
        if args.func not in _SCRATCH_COMMANDS:
            status = int(args.func(args))
        else:
            with scratch_temp_dir(args.func.__name__.removeprefix("cmd_")):
                status = int(args.func(args))
        sys.stdout.flush()  # a reader that left early is met here, not in the interpreter's last flush
        return status
    except KStateError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True, highlight=False)
        return 2
    except BrokenPipeError:
        # `kstate inspect --json | head`: the reader has what it wanted. Python's own recipe: send the rest of
        # the output nowhere, so that the exit's flush cannot fail again; 141 is a shell's code for SIGPIPE.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


if __name__ == "__main__":
    sys.exit(main())
