"""The ``kstate`` command: vector replay, fixtures, conformance runs, mutation analysis, spec checks."""

from __future__ import annotations

import argparse
import os
import sys
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


def cmd_conformance(args: argparse.Namespace) -> int:
    import pytest

    from kstate_conformance.pytest_args import suite_args

    pytest_args = [*suite_args(), "--kstate-impl", args.impl, "--kstate-level", args.level, "-q"]
    profile = "quick" if args.quick else "thorough" if args.thorough else args.profile
    if profile:
        pytest_args += ["--kstate-profile", profile]
    if args.timeout is not None:
        pytest_args += ["--kstate-testee-timeout", str(args.timeout)]
    if args.validate_protocol:
        pytest_args.append("--kstate-testee-validate")
    if args.expected_failures:
        pytest_args.append(f"--kstate-expected-failures={args.expected_failures}")
    if args.fix:
        if not args.expected_failures:
            err_console.print("[red]error:[/red] --fix needs --expected-failures FILE")
            return 2
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
    status = int(pytest.main(pytest_args + list(args.pytest_args)))
    if args.compare and report_dir is not None:
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


# --- inspect --------------------------------------------------------------------------------------------


def cmd_inspect(args: argparse.Namespace) -> int:
    """Read-only inspection of a state directory (LAY-*, OFF-*): 0 clean, 1 violations, 2 usage/not a state dir."""
    import json

    from kstate.inspect import InspectError, dump_store, inspect_state_dir

    try:
        if args.dump:
            rows = dump_store(args.state_dir, args.dump, task=args.task)
            if args.json:
                for row in rows:
                    print(json.dumps(row, sort_keys=True))
                return 0
            table = Table(title=f"{args.dump}: decoded rows")
            columns = ("task", "segment_start", "cf", "key", "value", "timestamp", "headers", "window", "session",
                       "versions", "error")
            materialized = list(rows)
            shown = [c for c in columns if any(c in r for r in materialized)]
            for column in shown:
                table.add_column(column)
            for row in materialized:
                table.add_row(*("" if row.get(c) is None else str(row[c]) for c in shown))
            console.print(table)
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
        table.add_column(column)
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
    console.print(table)
    for note in report.notes:
        console.print(f"[yellow]note:[/yellow] {note}", markup=True, highlight=False)
    for v in report.violations:
        console.print(f"[red]{v.rule} {v.kind}[/red] {v.path}: {v.message}", highlight=False)
    console.print(f"{len(report.tasks)} tasks, {sum(len(t.stores) for t in report.tasks)} stores, "
                  f"{len(report.violations)} violations")
    return 0 if report.clean else 1


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

    conformance = sub.add_parser("conformance", help="run the conformance suite against an implementation")
    conformance.add_argument("--impl", default="reference",
                             help="reference, mutant:NAME, module:factory, or cmd:COMMAND for an out-of-process testee")
    conformance.add_argument("--report", help="write reports (JUnit XML, Markdown, HTML) into this directory")
    conformance.add_argument("--level", default="tentative", choices=["required", "recommended", "tentative"])
    conformance.add_argument("--profile", choices=["quick", "default", "thorough"])
    conformance.add_argument("--quick", action="store_true", help="the quick hypothesis profile")
    conformance.add_argument("--thorough", action="store_true", help="the thorough hypothesis profile")
    conformance.add_argument("--timeout", type=float, help="seconds a testee has to answer one request (default 10)")
    conformance.add_argument("--validate-protocol", action="store_true",
                             help="check every testee answer against spec/testee-protocol.schema.json")
    conformance.add_argument("--expected-failures", metavar="FILE",
                             help="strict expected-failure list (text: one test id a line, '#' comments; or JSON)")
    conformance.add_argument("--fix", action="store_true", help="rewrite the expected-failure list with this run's failures")
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

    inspect = sub.add_parser("inspect", help="read-only inspection of a Kafka Streams state directory")
    inspect.add_argument("state_dir", help="a state.dir, an application directory or a task directory")
    inspect.add_argument("--dump", metavar="STORE", help="print the decoded rows of STORE")
    inspect.add_argument("--task", help="with --dump: only this task (for example 0_1)")
    inspect.add_argument("--json", action="store_true", help="machine output: one JSON document (JSON lines with --dump)")
    inspect.set_defaults(func=cmd_inspect)
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
