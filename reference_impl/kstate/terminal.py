"""The kit's consoles: rich output to stdout and stderr, wide lines when not on a terminal (CI logs, pipes)."""

from __future__ import annotations

import os

from rich.console import Console

#: Columns of a line written to a log or a pipe (a terminal's own width is used on a terminal).
LOG_WIDTH = 200


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=LOG_WIDTH)
    return console


console = make_console()
err_console = make_console(stderr=True)
