"""The ``kstate`` command: vector replay, fixtures, conformance runs, mutation analysis, spec checks."""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

# Run from a checkout, the shared material sits beside the repository.
DEFAULT_VECTORS = Path(os.environ.get("KSTATE_VECTORS", "../shared/jvm-vectors/kafka-jvm-vectors.json"))

console = Console()
err_console = Console(stderr=True)


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err_console, transient=True, disable=not err_console.is_terminal)


# --- vectors --------------------------------------------------------------------------------------------


def cmd_vectors_check(args: argparse.Namespace) -> int:
    from kstate.vectors import VectorFileError, check, load_vector_file

    try:
        document = load_vector_file(args.file)
    except VectorFileError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        return 2
    vectors = document["vectors"]
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


def cmd_fixtures_generate(args: argparse.Namespace) -> int:
    from kstate.fixtures_tool import (
        jvm_fixture_documents,
        reference_fixture_documents,
        stale_documents,
        write_documents,
    )

    # Generation writes into a checkout, never into an installed package's data.
    root = Path(args.root or "fixtures")
    if not (root / "fixture.schema.json").exists():
        err_console.print(f"[red]error:[/red] {root} is not a fixtures directory (run from the repository root or pass --root)")
        return 2
    documents = reference_fixture_documents()
    vectors = Path(args.vectors) if args.vectors else DEFAULT_VECTORS
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
    with _progress() as progress:
        task = progress.add_task("verifying fixtures", total=len(fixture_files(root)))
        checked, failures = verify(root, progress=lambda _n: progress.advance(task))
    for failure in failures[: args.show]:
        console.print(f"[red]FAIL[/red] {failure.file} {failure.case_id}: {failure.detail}")
    console.print(f"{checked} fixture cases checked against the reference, {len(failures)} failed")
    return 1 if failures else 0


# --- conformance, mutants, spec -------------------------------------------------------------------------


#: ``kstate conformance`` exit codes (documented in its --help and the README), and pytest's they come from.
CONFORMANCE_EXIT_CODES = {
    0: "conforming: every selected test passed, was skipped (unsupported or not applicable) or failed as listed "
       "in the expected-failure file",
    1: "not conforming: a test failed, or a test listed as an expected failure passed",
    2: "usage or setup error: a bad option; an implementation that cannot be imported, built or started, or a "
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
    report_dir = Path(args.report) if args.report else None
    if args.compare and report_dir is None:
        err_console.print("[red]error:[/red] --compare needs --report DIR (the verdicts are read from results.json)")
        return 2
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        # "--opt=path" forms: pytest would take a separate path token for a test path and move its rootdir.
        pytest_args += [f"--junitxml={report_dir / 'junit.xml'}", f"--kstate-report={report_dir}"]
    if err_console.is_terminal and not args.no_progress:
        pytest_args += ["--kstate-progress", "-o", "console_output_style=classic"]
    status = _PYTEST_TO_CONFORMANCE.get(int(pytest.main(pytest_args + list(args.pytest_args))), 3)
    if args.compare and report_dir is not None and status in (0, 1):
        from kstate_conformance.differential import compare_runs

        diff = compare_runs(Path(args.compare), report_dir / "results.json")
        for line in diff.describe():
            console.print(line, soft_wrap=True, markup=False)
        if not diff.identical:
            return status or 1
    return status


def cmd_mutants(args: argparse.Namespace) -> int:
    from kstate_conformance.mutants import all_mutants
    from kstate_conformance.mutation import run_all

    names = args.names or None
    total = len(names) if names else len(all_mutants())
    with _progress() as progress:
        task = progress.add_task("running the suite on mutants", total=total)
        results = run_all(names, workers=args.workers, on_result=lambda _r: progress.advance(task))
    table = Table(title="Mutation analysis")
    for column in ("mutant", "family", "verdict", "seconds", "first failing test"):
        table.add_column(column)
    for r in sorted(results, key=lambda r: (r.family, r.name)):
        table.add_row(r.name, r.family, "[green]killed[/green]" if r.killed else "[red]SURVIVED[/red]",
                      f"{r.seconds:.1f}", r.first_failure[:90])
    console.print(table)
    killed = sum(r.killed for r in results)
    console.print(f"mutation score: {killed}/{len(results)} killed")
    if args.report:
        from kstate_conformance.mutation import write_mutation_report

        write_mutation_report(results, Path(args.report))
        console.print(f"mutation report written to {args.report}/mutation.md")
    return 0 if killed == len(results) else 1


def cmd_testee(args: argparse.Namespace) -> int:
    from kstate.testee import main as testee_main

    return testee_main([])


def cmd_spec_check(args: argparse.Namespace) -> int:
    from kstate_conformance.traceability import analyse

    trace = analyse()
    console.print(f"{len(trace.rules)} rules, {len(trace.rules) - len(trace.uncovered)} cited by a test")
    for rule in trace.uncovered:
        console.print(f"[red]no test cites[/red] {rule}")
    for rule, ids in sorted(trace.unknown.items()):
        console.print(f"[red]unknown rule[/red] {rule} cited by {', '.join(sorted(ids)[:3])}")
    for test in trace.untagged_tests:
        console.print(f"[red]test cites no rule[/red] {test}")
    return 0 if trace.ok else 1


def cmd_audit(args: argparse.Namespace) -> int:
    """Compare the instances' stores with the state the Spark oracle computes from the changelog topic."""
    from rich.progress import SpinnerColumn

    from kstate.app.dump import dump_store_dir
    from kstate.codecs.changelog import changelog_topic_name
    from kstate.codecs.layout import parse_task_dir_name
    from kstate.spark.oracle import LegacyBoundary, audit
    from kstate.stores.api import StoreType

    store_type = StoreType(args.store_type)
    topic = changelog_topic_name(args.application_id, args.store)
    boundaries: dict[int, LegacyBoundary] = {}
    for item in args.legacy:
        partition, offset, legacy_type = item.split(":")
        boundaries[int(partition)] = LegacyBoundary(int(partition), int(offset), StoreType(legacy_type))
    steps = ["dumping stores", "starting Spark", "reading the changelog", "computing the expected state", "comparing"]
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=err_console)
    with progress:
        task = progress.add_task(steps[0], total=len(steps))
        actual: dict[int, dict[bytes, bytes]] = {}
        for state_dir in args.state_dir:
            app_dir = Path(state_dir) / args.application_id
            for task_dir in sorted(app_dir.iterdir()) if app_dir.is_dir() else []:
                parsed = parse_task_dir_name(task_dir.name)
                store_dir = task_dir / "rocksdb" / args.store
                if parsed is not None and store_dir.is_dir():
                    actual.setdefault(parsed[1], {}).update(dump_store_dir(store_dir).logical_view(store_type))
        progress.update(task, advance=1, description=steps[1])
        spark = None
        if args.engine == "spark":
            from kstate.spark.session import spark_session

            spark = spark_session(args.master, conf={"spark.ui.showConsoleProgress": "false"})
        progress.update(task, advance=1, description=steps[2])

        def step(message: str) -> None:
            if message != steps[2]:
                progress.update(task, advance=1, description=message)

        report = audit(args.bootstrap, topic, store_type, actual, spark=spark, boundaries=boundaries, progress=step)
        progress.update(task, completed=len(steps), description="done")
    console.print(f"{topic}: {len(actual)} partitions dumped from {len(args.state_dir)} state directories")
    console.print(report.summary(), markup=False, highlight=False, soft_wrap=True)
    return 0 if report.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kstate", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    vectors = sub.add_parser("vectors", help="replay recorded Kafka vectors").add_subparsers(dest="action", required=True)
    check = vectors.add_parser("check", help="replay every vector of FILE against the reference codecs")
    check.add_argument("file")
    check.add_argument("--junit", help="write a JUnit XML report here")
    check.add_argument("--show", type=int, default=20, help="mismatches to print (default 20)")
    check.add_argument("--show-lenient", action="store_true", help="list the vectors Kafka accepted leniently")
    check.set_defaults(func=cmd_vectors_check)

    fixtures = sub.add_parser("fixtures", help="golden fixtures").add_subparsers(dest="action", required=True)
    generate = fixtures.add_parser("generate", help="rebuild the fixtures deterministically")
    generate.add_argument("--root", help="fixtures directory (default: ./fixtures)")
    generate.add_argument("--vectors", help=f"Kafka vector file to import (default {DEFAULT_VECTORS})")
    generate.add_argument("--check", action="store_true", help="change nothing; exit 1 if a byte would change")
    generate.set_defaults(func=cmd_fixtures_generate)
    verify = fixtures.add_parser("verify", help="validate every fixture and check it against the reference")
    verify.add_argument("--root")
    verify.add_argument("--show", type=int, default=20)
    verify.set_defaults(func=cmd_fixtures_verify)

    conformance = sub.add_parser(
        "conformance", help="run the conformance suite against an implementation",
        description="Run the conformance suite against an implementation. The implementation is loaded (or the "
                    "testee started and its handshake completed) before any test is collected.",
        epilog="exit codes:\n" + "\n".join(textwrap.fill(text, 78, initial_indent=f"  {code}  ", subsequent_indent="     ")
                                             for code, text in CONFORMANCE_EXIT_CODES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    conformance.add_argument("--impl", default="reference",
                             help="reference, mutant:NAME, module:factory, or cmd:COMMAND for an out-of-process testee")
    conformance.add_argument("--report", help="write reports (JUnit XML, Markdown, HTML) into this directory")
    conformance.add_argument("--level", default="tentative", choices=["required", "recommended", "tentative"])
    conformance.add_argument("--profile", choices=["quick", "default", "thorough"])
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
    conformance.add_argument("--compare", metavar="RESULTS",
                             help="results.json (or its directory) of another run: fail unless verdicts are identical")
    conformance.add_argument("--no-progress", action="store_true", help="no progress display, even on a terminal")
    conformance.add_argument("pytest_args", nargs="*", help="further pytest arguments (after --)")
    conformance.set_defaults(func=cmd_conformance)

    mutants = sub.add_parser("mutants", help="mutation analysis: the suite must fail every mutant")
    mutants.add_argument("names", nargs="*", help="mutants to run (default all)")
    mutants.add_argument("--workers", type=int, default=2)
    mutants.add_argument("--report", help="write mutation.md and mutation.json into this directory")
    mutants.set_defaults(func=cmd_mutants)

    testee = sub.add_parser("testee", help="serve the reference implementation as a testee on stdin/stdout")
    testee.set_defaults(func=cmd_testee)

    spec = sub.add_parser("spec", help="the normative spec").add_subparsers(dest="action", required=True)
    spec_check = spec.add_parser("check", help="every rule cited by a test; every citation names a rule")
    spec_check.set_defaults(func=cmd_spec_check)

    audit = sub.add_parser("audit", help="compare instances' stores with the Spark changelog oracle")
    audit.add_argument("--bootstrap", required=True, help="the Kafka bootstrap address")
    audit.add_argument("--application-id", required=True)
    audit.add_argument("--store", required=True, help="the store name (changelog <application-id>-<store>-changelog)")
    audit.add_argument("--store-type", required=True, choices=["kv", "timestamped_kv", "timestamped_kv_headers"])
    audit.add_argument("--state-dir", action="append", required=True, help="an instance's state.dir (repeatable)")
    audit.add_argument("--master", default="local[2]", help="Spark master: local[N] or a cluster URL")
    audit.add_argument("--engine", choices=["spark", "python"], default="spark")
    audit.add_argument("--legacy", action="append", default=[], metavar="P:OFFSET:TYPE",
                       help="partition P was upgraded in place from TYPE; records before OFFSET are legacy")
    audit.set_defaults(func=cmd_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    from kstate.errors import KStateError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KStateError as exc:
        err_console.print(f"[red]error:[/red] {exc}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
