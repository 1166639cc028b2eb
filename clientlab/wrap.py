"""Prose for the terminal: wrapped at the console's width on word boundaries, with a hanging
indent, so that nothing wraps mid-word or past the right edge (80 columns in a pipe)."""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.text import Text


def wrapped(text: str, width: int, first: str = "", rest: str = "    ") -> list[str]:
    """`text` in lines of at most `width`, the first led by `first`, the others by `rest`; only a
    word longer than a whole line (a long setting, a URL) is cut, where it must be."""
    lines: list[str] = []
    for i, paragraph in enumerate(text.splitlines() or [""]):
        lines += textwrap.wrap(paragraph, max(20, width), initial_indent=first if i == 0 else rest,
                               subsequent_indent=rest, break_on_hyphens=False) or [""]
    return lines


def print_wrapped(console: Console, text: str, first: str = "", rest: str = "    ", style: str = "") -> None:
    for line in wrapped(text, console.width, first, rest):
        console.print(Text(line, style=style), highlight=False, soft_wrap=True)
