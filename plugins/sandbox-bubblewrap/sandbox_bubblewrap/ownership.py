"""Lending writable host directories to the sandbox's unprivileged user, and giving them back.

When the harness runs as another uid (config ``user``), the directories it must write - the
workspace, its private HOME, the adapter's state directory, ``rw_paths`` - are handed to that
uid for the session (``chown -R``) and, at finalize, handed back to the owner each top
directory had before (files the harness created included). Symlinks are changed themselves,
never followed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

Loan = tuple[Path, int, int]  # (path, original uid, original gid)


def _chown_tree(root: Path, uid: int, gid: int) -> None:
    with contextlib.suppress(OSError):
        os.chown(root, uid, gid, follow_symlinks=False)
    for parent, dirs, files in os.walk(root, followlinks=False):
        for name in (*dirs, *files):
            with contextlib.suppress(OSError):
                os.chown(os.path.join(parent, name), uid, gid, follow_symlinks=False)


def lend(paths: Iterable[Path], uid: int, gid: int) -> list[Loan]:
    loans: list[Loan] = []
    for path in dict.fromkeys(paths):
        info = os.stat(path, follow_symlinks=False)
        loans.append((path, info.st_uid, info.st_gid))
        _chown_tree(path, uid, gid)
    return loans


def give_back(loans: Iterable[Loan]) -> None:
    for path, uid, gid in loans:
        if path.exists():
            _chown_tree(path, uid, gid)
