"""The code blocks of README.md and docs/ run (see ``doc_examples.py``): a page cannot show code
that does not work or output the code does not print, and every block of a runnable language
either runs or is skipped with its reason."""

from __future__ import annotations

import os
import re
from unittest import SkipTest

import pytest

from .doc_examples import (
    RUNNABLE,
    documents,
    examples,
    fenced_blocks,
    line_of,
    page_environment,
    run_command,
)

PAGES = documents()
RESULTS: dict[str, tuple[int, int]] = {}  # page -> (blocks run, blocks skipped)


def test_there_are_pages():
    names = {page.name for page in PAGES}
    assert {"README.md", "host-apps.md", "plugin-authors.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_every_code_block_has_a_language(page):
    unnamed = [line for line, language in fenced_blocks(page) if not language]
    assert not unnamed, f"{page.name}: code blocks without a language at lines {unnamed}"


@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_the_code_blocks_run(page, tmp_path, monkeypatch):
    """Run one page's blocks in order, in one namespace, in a fresh directory."""
    env = page_environment(tmp_path)
    for key in [key for key in os.environ if key.startswith("HARNESS_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    document, found = examples(page)
    document.namespace.update(__env__=env, __cwd__=tmp_path, __name__="__docs__")
    ran, skipped = set(), set()
    for example in found:
        location = f"{page.relative_to(page.parents[1]) if page.parent.name == 'docs' else page.name}:{line_of(example)}"
        try:
            example.evaluate()
        except SkipTest as skip:
            if not str(skip).strip():
                pytest.fail(f"{location}: a skipped block must say why")
            skipped.add(line_of(example))
            continue
        except Exception as error:
            raise AssertionError(f"{location}: the block failed: {error}") from error
        ran.add(line_of(example))
    unrun = [
        (line, language)
        for line, language in fenced_blocks(page)
        if language in RUNNABLE and line not in ran and line not in skipped
    ]
    assert not unrun, f"{page.name}: blocks neither run nor skipped with a reason: {unrun}"
    RESULTS[page.name] = (len(ran), len(skipped))
    print(f"{page.name}: {len(ran)} blocks run, {len(skipped)} skipped")


def test_a_changed_output_fails(tmp_path):
    # the comparison is not vacuous: a page showing other output than the command prints fails
    from .doc_examples import matches

    env = page_environment(tmp_path)
    code, got = run_command("harness list", env, tmp_path)
    assert code == 0 and "echo" in got
    assert matches("...echo...", got)
    assert not matches("...no-such-harness...", got)
    assert not re.search(r"Traceback", got)
