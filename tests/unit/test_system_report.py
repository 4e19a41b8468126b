"""``kstate system``'s reports (INST-42), read back from a synthetic JUnit file as pytest writes one: each
scenario's outcome (passed, failed, unsupported with the reason, skipped), the instance's describe answer; and the
command's own errors before any scenario runs (INST-41)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kstate.cli import main
from kstate_conformance import rules
from kstate_conformance.system_report import (
    FAILED,
    PASSED,
    SKIPPED,
    UNSUPPORTED,
    SystemReportError,
    read_junit,
    write_system_reports,
)

DESCRIBE = {"instance_protocol": 1, "implementation": "toy-impl", "store_types": ["kv"], "crash_points": [],
            "events": ["starting", "opened", "restored", "running", "stopped"]}
_PROPERTIES = (
    '<property name="instance_implementation" value="toy-impl"/>'
    '<property name="instance_command" value="python3 toy.py"/>'
    f'<property name="instance_describe" value="{json.dumps(DESCRIBE).replace(chr(34), "&quot;")}"/>'
)
JUNIT = f"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="2" tests="5" time="42.0">
<properties>{_PROPERTIES}</properties>
<testcase classname="system_tests.test_restore" name="test_wiped_state_restores_byte_for_byte[kv]" time="6.5">
<properties><property name="restore kv" value="{{&quot;records&quot;: 3000}}"/></properties></testcase>
<testcase classname="system_tests.test_restore" name="test_wiped_state_restores_byte_for_byte[timestamped_kv]" time="7.0">
<failure message="AssertionError: partition 0 differs">def test():
&gt;       assert again.data_families() == original[p].data_families()
E       AssertionError: partition 0: restore differs byte for byte
E       assert {{'default': 1}} == {{'default': 2}}

system_tests/test_restore.py:41: AssertionError</failure></testcase>
<testcase classname="system_tests.test_window_restore" name="test_wiped_segmented_store_restores[window]" time="0.1">
<skipped type="pytest.skip" message="unsupported by toy-impl: store type window">system_tests/conftest.py:67: unsupported by toy-impl: store type window</skipped></testcase>
<testcase classname="system_tests.test_spark_oracle" name="test_the_data_source_reads_every_record_exactly" time="0.0">
<skipped type="pytest.skip" message="could not import 'pyspark': No module named 'pyspark'">skip</skipped></testcase>
<testcase classname="system_tests.test_upgrades" name="test_rolling_upgrade[kip258]" time="1.0">
<error message="failed on setup with &quot;BrokerUnavailable: tansu at 127.0.0.1:9 gone&quot;">E   kstate.kafka.broker.BrokerUnavailable: tansu at 127.0.0.1:9 gone</error></testcase>
</testsuite></testsuites>
"""


@pytest.fixture
def junit(tmp_path: Path) -> Path:
    path = tmp_path / "system-junit.xml"
    path.write_text(JUNIT, encoding="utf-8")
    return path


@rules("INST-40", "INST-42")
def test_each_scenarios_outcome_is_read_with_its_reason(junit: Path) -> None:
    run = read_junit(junit)
    assert (run.implementation, run.command, run.describe) == ("toy-impl", "python3 toy.py", DESCRIBE)
    outcomes = {s.name: (s.outcome, s.reason) for s in run.scenarios}
    assert outcomes == {
        "test_wiped_state_restores_byte_for_byte[kv]": (PASSED, ""),
        "test_wiped_state_restores_byte_for_byte[timestamped_kv]": (
            FAILED, "AssertionError: partition 0: restore differs byte for byte\n"
                    "assert {'default': 1} == {'default': 2}"),
        "test_wiped_segmented_store_restores[window]": (UNSUPPORTED, "unsupported by toy-impl: store type window"),
        "test_the_data_source_reads_every_record_exactly": (SKIPPED, "could not import 'pyspark': No module named 'pyspark'"),
        "test_rolling_upgrade[kip258]": (
            FAILED, "error in setup or teardown: kstate.kafka.broker.BrokerUnavailable: tansu at 127.0.0.1:9 gone"),
    }
    assert run.scenarios[0].properties == [("restore kv", '{"records": 3000}')]
    assert not run.ok()
    assert run.unsupported() == {"unsupported by toy-impl: store type window": 1}
    assert run.counts_line() == "5 scenarios: 1 passed, 2 failed, 1 unsupported by toy-impl, 1 skipped"
    assert run.closing_line(None).startswith("SYSTEM SCENARIOS FAILED for toy-impl: 5 scenarios")


@rules("INST-42")
def test_markdown_and_html_list_every_scenario_and_the_describe_answer(junit: Path, tmp_path: Path) -> None:
    write_system_reports(read_junit(junit), tmp_path / "out")
    markdown = (tmp_path / "out" / "system.md").read_text(encoding="utf-8")
    page = (tmp_path / "out" / "system.html").read_text(encoding="utf-8")
    assert markdown.startswith("# System scenarios: `toy-impl`\n\n5 scenarios: 1 passed, 2 failed, 1 unsupported")
    assert '"implementation": "toy-impl"' in markdown and "Command: `python3 toy.py`" in markdown
    assert "| `test_wiped_state_restores_byte_for_byte[kv]` | passed | 6.5 | restore kv: {\"records\": 3000} |" in markdown
    assert ("| `test_wiped_segmented_store_restores[window]` | unsupported | 0.1 | "
            "unsupported by toy-impl: store type window |") in markdown
    assert "| unsupported by toy-impl: store type window | 1 |" in markdown
    assert "### `system_tests.test_restore::test_wiped_state_restores_byte_for_byte[timestamped_kv]`" in markdown
    assert "E       assert {'default': 1} == {'default': 2}" in markdown  # the full output, folded
    assert "<h1>System scenarios: toy-impl</h1>" in page and "&quot;implementation&quot;: &quot;toy-impl&quot;" in page
    assert "<tr class='unsupported'><td><code>test_wiped_segmented_store_restores[window]</code></td>" in page
    assert page.count("<tr class='failed'>") == 2 and page.count("<div class='failure'>") == 2


def test_a_run_where_nothing_failed_is_ok_with_unsupported_scenarios(tmp_path: Path) -> None:
    path = tmp_path / "j.xml"
    path.write_text(JUNIT.replace("<failure", "<skipped").replace("</failure>", "</skipped>")
                    .replace('<error message="failed on setup', '<skipped message="unsupported by toy-impl: event wiped')
                    .replace("</error>", "</skipped>"), encoding="utf-8")
    run = read_junit(path)
    assert run.ok() and run.totals()[FAILED] == 0 and run.totals()[UNSUPPORTED] == 2
    assert run.closing_line(tmp_path).startswith("SYSTEM SCENARIOS PASSED for toy-impl")


@pytest.mark.parametrize("text", ["not xml", "<testsuites/>", '<testsuite><properties><property '
                                  'name="instance_describe" value="{oops"/></properties></testsuite>'])
def test_an_unreadable_junit_file_is_a_typed_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.xml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SystemReportError, match=str(path)):
        read_junit(path)


@rules("INST-41")
def test_an_instance_command_that_cannot_be_used_is_exit_2_before_any_scenario(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["system", "--instance", "/nonexistent/instance --x", "--report", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "instance command /nonexistent/instance --x: cannot be run" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()  # nothing ran, nothing written
    assert main(["system", "--tests", str(tmp_path)]) == 2
    assert "no system_tests directory" in capsys.readouterr().err
