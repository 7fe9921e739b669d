"""Where and how the CLI writes: JSON Lines for machines, plain or ``rich`` text for people.

The ``--json`` convention, for every command: **JSON Lines** - one JSON object per line on
stdout, nothing else. A stream (``run``, ``events``) is one object per event; a listing
(``sessions``, ``list``, ``plugins``) is one object per item; a single answer (``describe``,
``conformance``, ``close``) is one line with one object. ``jq`` and ``for line in stdout`` read
them all the same way.

Text for people goes through :class:`Out`: ``rich`` colour and tables when stdout is a terminal
(and ``rich`` is installed, and ``NO_COLOR`` is not set), plain text otherwise.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any


def print_json(value: dict[str, Any]) -> None:
    """One JSON Lines record on stdout."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def print_json_lines(values: Iterable[dict[str, Any]]) -> None:
    for value in values:
        print_json(value)


def _wants_colour(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Out:
    """Styled text on one stream; styles are ``rich`` markup names, dropped when plain."""

    def __init__(self, stream: IO[str] | None = None, *, colour: bool | None = None) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self._console: Any = None
        if colour if colour is not None else _wants_colour(self.stream):
            try:
                from rich.console import Console
            except ImportError:  # rich is optional at run time: plain text then
                pass
            else:
                self._console = Console(file=self.stream, highlight=False, soft_wrap=True)

    @property
    def rich(self) -> bool:
        return self._console is not None

    def write(self, text: str, style: str | None = None) -> None:
        """Write ``text`` as is (no newline added), styled when colour is on."""
        if self._console is not None and style:
            from rich.text import Text

            self._console.print(Text(text, style=style), end="")
        else:
            self.stream.write(text)
        self.stream.flush()

    def line(self, text: str = "", style: str | None = None) -> None:
        self.write(text + "\n", style)

    def table(
        self, headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[str] = ()
    ) -> None:
        """A table with a header row: a ``rich`` table on a terminal, aligned columns otherwise."""
        if self._console is not None:
            from rich.table import Table

            table = Table(box=None, header_style="bold", pad_edge=False)
            # Never cut ids and numbers on a narrow terminal: only the last column gives way.
            for index, header in enumerate(headers):
                last = index == len(headers) - 1
                width = max([len(header), *(len(row[index]) for row in rows)])
                table.add_column(
                    header,
                    justify="right" if header in right else "left",
                    no_wrap=True,
                    min_width=None if last else width,
                    overflow="ellipsis",
                )
            for row in rows:
                table.add_row(*row)
            self._console.print(table)
            return
        widths = [len(h) for h in headers]
        for row in rows:
            widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

        def fmt(cells: Sequence[str]) -> str:
            parts = [
                cell.rjust(width) if header in right else cell.ljust(width)
                for header, cell, width in zip(headers, cells, widths, strict=True)
            ]
            return "  ".join(parts).rstrip()

        self.stream.write(fmt(headers) + "\n")
        for row in rows:
            self.stream.write(fmt(row) + "\n")
        self.stream.flush()
