"""``kstate fixtures record`` and ``kstate kafka-verdicts``: the commands of Apache Kafka under test (issue 33).

The parsers are added by :func:`kstate.cli.build_parser`; the handlers record Kafka's answers as fixtures (OPS-4,
:mod:`.recording`) and keep its per-rule verdicts (:mod:`.verdicts`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.markup import escape

from kstate.terminal import console, err_console
from kstate_conformance import kafka_jvm


def add_record_command(fixtures: Any) -> None:
    """``kstate fixtures record``, added to the ``fixtures`` commands (an argparse sub-parsers action)."""
    rec = fixtures.add_parser(
        "record", help="record Kafka's answers to the spec and reference inputs (needs Java and Maven)",
        description="Send the input of every fixtures/spec and fixtures/reference case the Kafka testee offers to "
                    "Apache Kafka (--impl kafka-jvm:VERSION) and write its answers to fixtures/kafka-jvm/recorded_*.json, "
                    "each case with its Kafka version; an answer departing from its source case is kept, marked "
                    "with the expected-failure reason. The 2024 vector cases are replayed too. Writes "
                    "fixtures/kafka-jvm/RECORDING.md (counts, deviations, vector disagreements, the differences "
                    "between versions). Exit 0 done, 1 a vector disagreement or an unclassified deviation (or, "
                    "with --check, a byte that would change), 2 setup error.")
    rec.add_argument("--impl", required=True, help="the Kafka release whose answers are written, kafka-jvm:VERSION")
    rec.add_argument("--compare", action="append", metavar="IMPL",
                     help="another release (kafka-jvm:VERSION, repeatable) recorded only for the report's comparison")
    rec.add_argument("--root", help="fixtures directory (default: ./fixtures)")
    rec.add_argument("--check", action="store_true", help="change nothing; exit 1 if a byte would change")
    rec.set_defaults(func=cmd_fixtures_record)


def add_verdicts_command(sub: Any) -> None:
    """``kstate kafka-verdicts``, added to the top-level commands (an argparse sub-parsers action)."""
    verdicts = sub.add_parser(
        "kafka-verdicts", help="keep kafka-jvm runs' per-rule verdicts; regenerate their tables",
        description="Keep the per-rule verdicts of `kstate conformance --impl kafka-jvm:VERSION --report DIR` runs in "
                    "testees/kafka-jvm/verdicts-<version>.json (with the date and the kit's commit), and regenerate "
                    "testees/kafka-jvm/VERDICTS.md (rule x release), the summary in docs/contributor.md and the headline "
                    "figures in README.md from those files. Exit 0 done, 1 with --check a file would change, 2 unreadable results or no summary block.")
    verdicts.add_argument("--results", action="append", metavar="DIR",
                          help="a kafka-jvm run's report directory (or its results.json); repeatable; without it "
                               "the tables are regenerated from the kept files")
    verdicts.add_argument("--testee-dir", help="the Kafka testee project (default: $KSTATE_KAFKA_JVM_DIR, else testees/kafka-jvm)")
    verdicts.add_argument("--readme", default="docs/contributor.md", metavar="DOC",
                          help="the document holding the generated summary block (default docs/contributor.md)")
    verdicts.add_argument("--headline-doc", default="README.md", metavar="DOC",
                          help="the document holding each release's generated headline figure (default README.md)")
    verdicts.add_argument("--commit", help="the kit commit the runs used (default: git rev-parse --short HEAD)")
    verdicts.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would change")
    verdicts.set_defaults(func=cmd_kafka_verdicts)


def cmd_fixtures_record(args: argparse.Namespace) -> int:
    """Record Kafka's answers to the spec and reference inputs into fixtures/kafka-jvm/recorded_*.json (OPS-4)."""
    from functools import partial

    from kstate.cli import _checkout_fixtures_root, _progress
    from kstate.fixtures_tool import stale_documents, write_documents
    from kstate_conformance.expectations import ExpectedFailures
    from kstate_conformance.kafka_jvm.recording import (
        REPORT_FILE,
        documents,
        record,
        report_markdown,
        stale_recorded,
    )
    from kstate_conformance.loading import ImplementationError, load_implementation

    root = _checkout_fixtures_root(args)
    if root is None:
        return 2
    impls = [args.impl, *(args.compare or [])]
    for impl in impls:
        if not kafka_jvm.names(impl):
            err_console.print(f"[red]error:[/red] {impl}: recording takes Kafka itself, kafka-jvm:VERSION")
            return 2
    recordings = []
    for impl in impls:
        version = kafka_jvm.version_named(impl)
        expected = ExpectedFailures.load(kafka_jvm.expected_failures_file(version))
        try:
            adapter = load_implementation(impl)
        except ImplementationError as exc:
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
            return 2
        try:
            with _progress() as progress:
                task = progress.add_task(f"recording {impl}", total=None)
                recordings.append(record(adapter, version, root, expected, progress=partial(progress.advance, task)))
        finally:
            close = getattr(adapter, "close", None)
            if close is not None:
                close()
    primary, others = recordings[0], recordings[1:]
    produced = documents(primary)
    produced[f"kafka-jvm/{REPORT_FILE}"] = report_markdown(primary, others)
    unclassified = [o for o in primary.outcomes if o.status == "deviates" and o.detail.startswith("[UNCLASSIFIED]")]
    stale = stale_documents(produced, root) + stale_recorded(root, produced)
    if args.check:
        for rel in stale:
            console.print(f"[red]would change:[/red] {rel}")
        console.print(f"{len(produced)} recorded files in memory, {len(stale)} differ from {root}")
        return 1 if stale else 0
    changed = write_documents(produced, root)
    for rel in stale_recorded(root, produced):
        (root / rel).unlink()
        changed.append(f"{rel} (removed)")
    for rec in recordings:
        console.print(f"Kafka {rec.version}: {rec.sources} source cases, {rec.count('recorded')} recorded, "
                      f"{rec.count('deviates')} recorded deviating, {rec.count('unsupported')} unsupported, "
                      f"{rec.count('testee_error')} not recorded (testee errors); {rec.vectors_checked} vector cases "
                      f"replayed, {len(rec.vector_disagreements)} disagree")
    console.print(f"{len(produced)} files, {len(changed)} written: {', '.join(changed) or 'none changed'}")
    problems = sum(len(r.vector_disagreements) for r in recordings) + len(unclassified)
    if problems:
        err_console.print(f"[red]{problems} disagreements with the vectors or unclassified deviations:[/red] "
                          f"see {root}/kafka-jvm/{REPORT_FILE}")
    return 1 if problems else 0


def cmd_kafka_verdicts(args: argparse.Namespace) -> int:
    """Keep kafka-jvm runs' per-rule verdicts and regenerate the rule x release table and the contributor's guide's
    summary."""
    import datetime
    import json
    import subprocess

    from kstate_conformance.kafka_jvm import verdicts as releases

    testee = Path(args.testee_dir) if args.testee_dir else kafka_jvm.project()
    readme = Path(args.readme)
    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                           check=False).stdout.strip() or "unknown"
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    produced: dict[Path, str] = {}
    try:
        for results in args.results or []:
            kept = releases.verdicts_from_results(Path(results), date, commit)
            produced[testee / f"verdicts-{kept['kafka_version']}.json"] = json.dumps(kept, indent=1, sort_keys=True) + "\n"
        runs = releases.load_verdict_files(testee)
        runs = [r for r in runs if testee / f"verdicts-{r['kafka_version']}.json" not in produced]
        runs = sorted([*runs, *(json.loads(t) for t in produced.values())],
                      key=lambda r: [int(x) if x.isdigit() else 0 for x in r["kafka_version"].replace("-", ".").split(".")])
        if not runs:
            err_console.print(f"[red]error:[/red] no verdicts-<version>.json in {testee}; pass --results DIR")
            return 2
        produced[testee / releases.TABLE_FILE] = releases.render_table(runs)
        # Links in the block lead from the document's directory back to the repository's root.
        depth = len(readme.parent.parts) if not readme.is_absolute() else 0
        produced[readme] = releases.replace_readme_block(readme.read_text(encoding="utf-8"),
                                                         releases.render_readme_block(runs, link_prefix="../" * depth))
        headline_doc = Path(args.headline_doc)
        produced[headline_doc] = releases.replace_readme_block(
            headline_doc.read_text(encoding="utf-8"), releases.render_headline_block(runs),
            (releases.HEADLINE_START, releases.HEADLINE_END))
    except (releases.VerdictsError, OSError) as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", soft_wrap=True)
        return 2
    stale = [p for p, text in produced.items() if not p.exists() or p.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            console.print(f"[red]would change:[/red] {path}")
        return 1 if stale else 0
    for path in stale:
        path.write_text(produced[path], encoding="utf-8")
    console.print(f"{len(stale)} files written: {', '.join(map(str, stale)) or 'none changed'}")
    return 0
