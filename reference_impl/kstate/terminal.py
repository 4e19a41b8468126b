"""The kit's consoles: rich output to stdout and stderr, wide lines when not on a terminal (CI logs, pipes)."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console

#: Columns of a line written to a log or a pipe (a terminal's own width is used on a terminal).
LOG_WIDTH = 200
#: Columns of a table written to a file or a pipe: a reader's page, not a log line (issue 34).
TABLE_WIDTH = 120


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=LOG_WIDTH)
    return console


def table_console() -> Console:
    """A console for tables: the terminal's width on a terminal, else ``COLUMNS`` or :data:`TABLE_WIDTH`."""
    table = Console()
    if not table.is_terminal and "COLUMNS" not in os.environ:
        table = Console(width=TABLE_WIDTH)
    return table


console = make_console()
err_console = make_console(stderr=True)


#: Rows between two updates of a row counter (a bar's redraw per row would cost more than the row).
PROGRESS_EVERY = 8192


class RowProgress:
    """A transient row counter on ``console`` while a long read runs (``kstate inspect --dump``, issue 35): shown
    only on a terminal, so that piped output and logs stay the rows alone. Call :meth:`tick` once a row."""

    def __init__(self, console: Console, description: str) -> None:
        self._progress: Any = None
        self._task: Any = None
        self.rows = 0
        self._next_update = PROGRESS_EVERY
        if console.is_terminal:
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                      TextColumn("{task.completed:,} rows"), TimeElapsedColumn(),
                                      console=console, transient=True)
            self._task = self._progress.add_task(description, total=None)

    def __enter__(self) -> RowProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def tick(self) -> None:
        self.rows += 1
        if self.rows >= self._next_update:
            self._next_update += PROGRESS_EVERY
            if self._progress is not None:
                self._progress.update(self._task, completed=self.rows)

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
