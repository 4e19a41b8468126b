"""The row counter of long reads (``kstate inspect --dump``, issue 35): on a terminal only, counting every row."""

from __future__ import annotations

import io

from rich.console import Console

from kstate.terminal import PROGRESS_EVERY, RowProgress


def test_the_counter_shows_on_a_terminal_and_counts_every_row() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with RowProgress(console, "dumping s") as progress:
        for _ in range(PROGRESS_EVERY + 5):
            progress.tick()
        progress._progress.refresh()
        shown = out.getvalue()
    assert progress.rows == PROGRESS_EVERY + 5
    assert "dumping s" in shown and f"{PROGRESS_EVERY:,} rows" in shown


def test_the_counter_writes_nothing_off_a_terminal() -> None:
    out = io.StringIO()
    with RowProgress(Console(file=out, force_terminal=False), "dumping s") as progress:
        for _ in range(PROGRESS_EVERY * 2):
            progress.tick()
    assert progress.rows == PROGRESS_EVERY * 2 and out.getvalue() == ""
