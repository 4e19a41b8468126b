"""The kit's own tools: operations that decode or classify what a store wrote, with no store behaviour of their own
(docs/verdicts.md, "Kit tools"). Kafka has no such functions, and a port need not offer them.

A case that calls only kit tools tests the kit, so an implementation that lacks them finds it ``n/a``. A case
that has already called the implementation's own operations uses the kit's tool (the reference's) in their
place when the implementation lacks it: what it then checks is what the implementation wrote.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kstate_conformance.adapter import JsonDict, ReferenceAdapter

#: Operations of the kit with no Kafka code behind them (spec/ops-index.md: none mirrors a Kafka method).
KIT_TOOLS = frozenset({
    "layout.classify_store_file",  # LAY-10: which files of a store directory belong to the layout
    "layout.options_format_versions",  # LAY-9: an OPTIONS text's format_version per family
    "versioned.split_segment_key",  # VER-1: a physical key's segment id and key
    "versioned.version_segment",  # VER-22: the segment a version is filed in
    "versioned.segment_versions",  # VER-5..9: a checked read of every version of a segment row
})

#: Why a case that calls only kit tools is skipped as not applicable (report.classify_skip: no "unsupported" wording).
NOT_APPLICABLE_REASON = ("{op} is a kit tool, not store behaviour: this case checks the kit's own tool, which {name} "
                         "need not offer")


@lru_cache(maxsize=1)
def _reference() -> ReferenceAdapter:
    from kstate_conformance.adapter import ReferenceAdapter

    return ReferenceAdapter()


def kit_answer(op: str, payload: JsonDict) -> JsonDict:
    """The kit's own answer to a kit tool call (the reference implements every kit tool)."""
    return _reference().call(op, payload)
