"""Running the code blocks of README.md and docs/ (used by ``test_examples.py``).

Sybil (PyPI ``sybil``) finds the blocks and keeps one namespace per page, so a guide is a path:
a later block uses what an earlier one defined. On top of its Markdown lexers:

- ``python`` blocks run as written; a block may ``await`` at top level (it then runs under
  ``anyio.run``), and what it prints is kept for an output block;
- ``<!-- output -->`` before a block: the block is what the Python block above printed
  (``...`` matches anything, as in doctest's ELLIPSIS; runs of whitespace compare equal);
- ``console`` blocks: each ``$ command`` (``\\`` continues a line) runs in bash in the page's
  working directory, and the lines after it are its output, compared the same way (a command
  with no lines after it is only required to succeed);
- ``sql`` blocks run, statement by statement, against the SQLite ledger the page's commands
  recorded (``.harness/ledger.sqlite``): a query on a table or column that does not exist
  fails;
- ``<!-- skip: next "why" -->`` (Sybil's skip directive) leaves the next block out, with the
  reason: a block that starts a server or installs from PyPI.

Every page runs in its own temporary directory with its own ledger, state and cache
directories, so nothing of the checkout or the user's home is touched.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import inspect
import io
import os
import re
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
from sybil import Document, Example, Region, Sybil
from sybil.evaluators.python import pad
from sybil.parsers.markdown import CodeBlockParser, SkipParser
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
CLI_PATH = ROOT / "tools" / "npm" / "node_modules" / ".bin"


def documents() -> list[Path]:
    """README.md and every page of docs/ (the generated reference pages have no examples)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# Languages of blocks that are code to run: each such block runs, or is skipped with a reason.
RUNNABLE = {"python", "console", "sh", "bash", "shell", "pycon", "sql"}
PRINTED = "__printed__"

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def matches(want: str, got: str) -> bool:
    """Whether output ``got`` is what a page shows (``want``): ``...`` matches anything, any
    UUID matches any UUID, whitespace runs compare equal."""
    want, got = _UUID.sub("<uuid>", want), _UUID.sub("<uuid>", got)
    return doctest.OutputChecker().check_output(want.strip() + "\n", got.strip() + "\n", _FLAGS)


def evaluate_python(example: Example) -> None:
    __tracebackhide__ = True
    source = pad(example.parsed, example.line + example.parsed.line_offset)
    code = compile(
        source, example.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
    )
    printed = io.StringIO()
    namespace = example.namespace
    try:
        with contextlib.redirect_stdout(printed):
            if code.co_flags & inspect.CO_COROUTINE:

                async def top_level() -> None:
                    await eval(code, namespace)

                anyio.run(top_level)
            else:
                exec(code, namespace)
    finally:
        namespace.pop("__builtins__", None)
        namespace[PRINTED] = printed.getvalue()
        sys.stdout.write(printed.getvalue())


def _output_regions(document: Document) -> Iterable[Region]:
    directive = DirectiveInHTMLCommentLexer(directive="output")
    blocks = FencedCodeBlockLexer(language=r".*")
    fences = list(blocks(document))
    for lexed in directive(document):
        block = next((f for f in fences if f.start > lexed.end), None)
        between = document.text[lexed.end : block.start] if block is not None else "x"
        if block is None or between.replace("-->", "", 1).strip():
            raise ValueError(f"{document.path}: <!-- output --> must precede a code block")
        yield Region(lexed.start, block.end, str(block.lexemes["source"]), _check_output)


def _check_output(example: Example) -> str | None:
    got = example.namespace.get(PRINTED)
    if got is None:
        return "an output block with no Python block before it"
    if not matches(example.parsed, got):
        return f"printed:\n{got}\nthe page shows:\n{example.parsed}"
    return None


def console_commands(source: str) -> list[tuple[str, str]]:
    """``[(command, expected output)]`` of a console block (``$ `` starts a command)."""
    commands: list[tuple[str, list[str]]] = []
    continuing = False
    for line in source.splitlines():
        if continuing:
            commands[-1] = (commands[-1][0] + "\n" + line, commands[-1][1])
            continuing = line.endswith("\\")
        elif line.startswith("$ "):
            commands.append((line[2:], []))
            continuing = line.endswith("\\")
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"console block: output before any `$ command`: {line!r}")
    return [(command, "\n".join(output)) for command, output in commands]


def run_command(command: str, env: dict[str, str], cwd: Path) -> tuple[int, str]:
    result = subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=180,
    )
    return result.returncode, result.stdout


def run_session(commands: list[str], env: dict[str, str], cwd: Path) -> list[tuple[int, str]]:
    """Run a console block's commands in one bash (a variable or ``cd`` carries over to the
    next command, as in a terminal): ``[(exit code, output)]`` per command."""
    marker = f"@@doc-command-{uuid.uuid4().hex}@@"
    script = "".join(f"{command}\nprintf '\\n{marker} %s\\n' \"$?\"\n" for command in commands)
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    found = []
    rest = result.stdout
    for _ in commands:
        output, _, rest = rest.partition(f"\n{marker} ")
        code, _, rest = rest.partition("\n")
        found.append((int(code) if code.strip().isdigit() else result.returncode, output))
    return found


def evaluate_console(example: Example) -> str | None:
    env = example.namespace["__env__"]
    cwd = example.namespace["__cwd__"]
    commands = console_commands(str(example.parsed))
    if not commands:
        return "a console block without a `$ command` (mark it skip, or give it prompts)"
    results = run_session([command for command, _ in commands], env, cwd)
    for (command, want), (code, got) in zip(commands, results, strict=True):
        if not want.strip():
            if code != 0:
                return f"$ {command}\nexited {code}:\n{got}"
        elif not matches(want, got):
            return f"$ {command}\nprinted (exit {code}):\n{got}\nthe page shows:\n{want}"
    return None


def evaluate_sql(example: Example) -> str | None:
    ledger = Path(example.namespace["__cwd__"]) / ".harness" / "ledger.sqlite"
    if not ledger.exists():
        return f"no ledger at {ledger} for the query to read"
    connection = sqlite3.connect(f"file:{ledger}?mode=ro", uri=True)
    try:
        for statement in sqlparse_statements(str(example.parsed)):
            connection.execute(statement).fetchall()
    except sqlite3.Error as error:
        return f"{error}"
    finally:
        connection.close()
    return None


def sqlparse_statements(text: str) -> list[str]:
    """The statements of a block (``;``-separated, ``--`` comments dropped)."""
    lines = [line for line in text.splitlines() if not line.strip().startswith("--")]
    return [part.strip() for part in "\n".join(lines).split(";") if part.strip()]


def page_environment(workdir: Path) -> dict[str, str]:
    """The environment a page's commands and code run with: the checkout's venv first on PATH,
    the pinned CLIs found, no colour, everything stateful under the page's directory."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("HARNESS_", "PYTEST_")) and key not in ("COLUMNS", "LINES")
    }
    env.update(
        PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        HARNESS_CLI_PATH=str(CLI_PATH),
        HARNESS_STATE_DIR=str(workdir / ".state"),
        HARNESS_CACHE_DIR=str(workdir / ".cache"),
        NO_COLOR="1",
        COLUMNS="100",
        PYTHONUNBUFFERED="1",
    )
    return env


SYBIL = Sybil(
    parsers=[
        CodeBlockParser("python", evaluate_python),
        CodeBlockParser("console", evaluate_console),
        CodeBlockParser("sql", evaluate_sql),
        _output_regions,
        SkipParser(),
    ]
)


def fenced_blocks(path: Path) -> list[tuple[int, str]]:
    """``(line, language)`` of every fenced code block of a page."""
    document = Document(path.read_text(encoding="utf-8"), str(path))
    found = []
    for lexed in FencedCodeBlockLexer(language=r".*")(document):
        line = document.text.count("\n", 0, lexed.start) + 1
        found.append((line, str(lexed.lexemes["language"]).strip()))
    return found


def line_of(example: Example) -> int:
    return int(example.document.text.count("\n", 0, example.start) + 1)


def examples(path: Path) -> tuple[Document, list[Example]]:
    document = SYBIL.parse(path)
    return document, list(document)


def describe(value: Any) -> str:
    return f"{type(value).__name__}: {value}"
