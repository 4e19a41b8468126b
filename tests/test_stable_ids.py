"""Stable test ids: parametrized ids come from data (fixture ids, operation names), never list positions."""

from __future__ import annotations

import json
import subprocess
import sys

from suite_runner import REPO_ROOT, child_env

from kstate_conformance.fixtures import all_cases

COLLECT = """
import json, sys, pytest
from kstate_conformance.plugin import positional_ids
from kstate_conformance.expectations import stable_test_id
from kstate_conformance.pytest_args import suite_args
class Collector:
    items = []
    def pytest_collection_finish(self, session):
        Collector.items = list(session.items)
pytest.main([*suite_args(), "--collect-only", "-q"], plugins=[Collector()])
print("@@" + json.dumps({"positional": positional_ids(Collector.items),
                          "ids": [stable_test_id(i.nodeid) for i in Collector.items]}))
"""


def test_no_test_id_is_a_list_position_and_ids_are_unique() -> None:
    proc = subprocess.run([sys.executable, "-c", COLLECT], capture_output=True, text=True, env=child_env(),
                          cwd=REPO_ROOT, check=False, timeout=300)
    payload = json.loads(proc.stdout.rsplit("@@", 1)[1])
    assert payload["positional"] == []
    ids = payload["ids"]
    assert len(ids) > 500 and len(ids) == len(set(ids))
    golden = {i.split("[", 1)[1][:-1] for i in ids if i.startswith("test_golden.py::")}
    assert golden == {case["id"] for case in all_cases()}


def test_positional_ids_are_detected() -> None:
    from kstate_conformance.plugin import positional_ids

    class CallSpec:
        def __init__(self, id_: str, params: dict[str, object]) -> None:
            self.id, self.params = id_, params

    class Item:
        def __init__(self, nodeid: str, callspec: CallSpec) -> None:
            self.nodeid, self.callspec = nodeid, callspec

    items = [Item("t.py::a[case3]", CallSpec("case3", {"case": {}})),
             Item("t.py::b[kv-rocksdb]", CallSpec("kv-rocksdb", {"store_type": "kv", "backend": "rocksdb"})),
             Item("t.py::c[2147483647-True-0]", CallSpec("2147483647-True-0", {"seq": 1, "wrap": True, "out": 0}))]
    assert positional_ids(items) == ["t.py::a[case3]"]  # type: ignore[arg-type]
