"""The kit's consoles: rich output to stdout and stderr, wide lines when not on a terminal (CI logs, pipes)."""

from __future__ import annotations

import os

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
