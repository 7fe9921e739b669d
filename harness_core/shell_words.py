"""A shell command line as the simple commands it runs: what :mod:`.command_policy` judges.

The line is parsed with tree-sitter's bash grammar (``tree-sitter-bash``), never matched with
regular expressions. Every simple command the line would run becomes one :class:`Invocation`,
wherever it sits: in a pipeline, a ``&&``/``||``/``;`` list, a subshell, a function body, a
loop, a ``$(...)`` or backtick substitution, a process substitution, the string of
``bash -c``/``sh -c``/``eval``/``su -c``/``watch``, or behind a wrapper (``env X=1``, ``nice``,
``nohup``, ``time``, ``command``, ``exec``, ``sudo``, ``doas``, ``timeout``, ``stdbuf``,
``ionice``, ``setsid``, ``xargs``, ``find -exec``). A wrapper is an invocation too (so a rule
can name ``sudo``), marked ``wrapper`` so a host's default verdict applies to what it runs.

Words are evaluated the way the shell would where that is knowable: quotes removed, backslash
escapes and ``$'\\x72m'`` decoded, ``~``, ``$HOME`` and variables assigned earlier on the line
expanded, ``cd`` followed. What only the running shell knows (an unknown variable, a command
substitution) is ``None``: a rule sees it as unknown, never as harmless text.
"""

from __future__ import annotations

import codecs
import os
import posixpath
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import attrs
from attrs import frozen

#: How deep ``bash -c "bash -c '...'"`` may nest before the line counts as unreadable.
MAX_DEPTH = 6

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "fish"})

_ESCAPED = re.compile(r"\\(.)", re.DOTALL)
_QUOTED_ESCAPE = re.compile(r'\\([$`"\\\n])')
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@frozen
class Invocation:
    """One simple command the line runs, its words evaluated (``None``: known only at run time)."""

    #: the program's base name (``/bin/rm`` and ``\\rm`` are ``rm``); ``None`` when computed
    program: str | None
    #: the words after the program
    args: tuple[str | None, ...] = ()
    #: ``(operator, target)`` of each redirection, e.g. ``(">", "out.txt")``
    redirects: tuple[tuple[str, str | None], ...] = ()
    #: the directory it runs in, ``None`` once a ``cd`` went somewhere unknown
    cwd: str | None = None
    #: programs whose output it reads (earlier pipeline stages, substitutions in its words)
    feeders: frozenset[str] = frozenset()
    #: the source text of the statement it belongs to (a SQL client's ``-c`` or here-document)
    statement: str = ""
    #: a wrapper that runs another invocation (``sudo``, ``env``, ``bash -c``, ...)
    wrapper: bool = False
    #: a function calling itself from a pipeline or the background (a fork bomb)
    self_call: bool = False

    @property
    def text(self) -> str:
        """The invocation as one line (unknown words as ``$?``), for a host's glob patterns."""
        words = [self.program or "$?", *(a if a is not None else "$?" for a in self.args)]
        return " ".join(words)


@frozen
class Parsed:
    """A command line's invocations; ``problems`` names what could not be read."""

    invocations: tuple[Invocation, ...]
    problems: tuple[str, ...] = ()


@cache
def _parser() -> Any:
    # imported on first use: most runs never judge a command
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse(command: str, *, cwd: str | None, home: str | None = None) -> Parsed:
    """The invocations of ``command`` run in ``cwd`` (``None``: an unknown directory)."""
    walker = _Walker(home=home if home is not None else os.path.expanduser("~"))
    walker.line(command, _State(cwd=cwd, variables={}), frozenset(), depth=0)
    return Parsed(tuple(walker.found), tuple(walker.problems))


@attrs.define
class _State:
    cwd: str | None
    variables: dict[str, str | None]
    functions: tuple[str, ...] = ()

    def copy(self) -> _State:
        return _State(self.cwd, dict(self.variables), self.functions)


@attrs.define
class _Walker:
    home: str
    found: list[Invocation] = attrs.field(factory=list)
    problems: list[str] = attrs.field(factory=list)

    # -- lines and nodes -------------------------------------------------------------------

    def line(self, text: str, state: _State, feeders: frozenset[str], depth: int) -> None:
        if depth > MAX_DEPTH:
            self.problems.append("commands nested too deep to read")
            return
        tree = _parser().parse(text.encode("utf-8", "surrogateescape"))
        if tree.root_node.has_error:
            self.problems.append("the command could not be parsed as shell")
        self.node(tree.root_node, state, feeders, depth, text)

    def node(
        self, node: Any, state: _State, feeders: frozenset[str], depth: int, stmt: str
    ) -> None:
        kind = node.type
        if node.parent is not None and node.parent.type in ("program", "list"):
            stmt = _text(node)  # the statement a SQL client's text is read from
        if kind == "command":
            self.command(node, state, feeders, depth, stmt, redirects=())
        elif kind == "redirected_statement":
            self.redirected(node, state, feeders, depth, stmt)
        elif kind == "pipeline":
            self.pipeline(_statements(node), state, feeders, depth, stmt)
        elif kind in ("subshell", "command_substitution", "process_substitution"):
            inner = state.copy()  # a `cd` inside stays inside
            for child in node.named_children:
                self.node(child, inner, feeders, depth, stmt)
        elif kind == "variable_assignment":
            self.assign(node, state, feeders, depth, stmt)
        elif kind == "declaration_command":  # export X=1, local X=1, declare X=1
            for child in node.named_children:
                self.node(child, state, feeders, depth, stmt)
        elif kind == "function_definition":
            name = _text(node.child_by_field_name("name"))
            body = node.child_by_field_name("body")
            inner = attrs.evolve(state.copy(), functions=(*state.functions, name))
            if body is not None:
                self.node(body, inner, feeders, depth, stmt)
        else:
            for child in node.named_children:
                self.node(child, state, feeders, depth, stmt)

    def pipeline(
        self, stages: list[Any], state: _State, feeders: frozenset[str], depth: int, stmt: str
    ) -> None:
        upstream = set(feeders)
        for stage in stages:
            before = len(self.found)
            self.node(stage, state.copy(), frozenset(upstream), depth, stmt)
            upstream.update(i.program for i in self.found[before:] if i.program is not None)

    def redirected(
        self, node: Any, state: _State, feeders: frozenset[str], depth: int, stmt: str
    ) -> None:
        body = node.child_by_field_name("body")
        redirects: list[tuple[str, str | None]] = []
        piped: list[Any] = []  # `cat <<EOF | psql`: the grammar hangs the pipeline on the heredoc
        for child in node.named_children:
            if child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                redirects.extend(self.redirect(child, state, feeders, depth, stmt))
                piped.extend(c for c in child.named_children if c.type == "pipeline")
        stages = [] if body is None else [body]
        for pipe in piped:
            stages.extend(_statements(pipe))
        upstream = set(feeders)
        for index, stage in enumerate(stages):
            before = len(self.found)
            inner = state if len(stages) == 1 else state.copy()
            if index == 0 and stage.type == "command":
                self.command(stage, inner, frozenset(upstream), depth, stmt, tuple(redirects))
            else:
                self.node(stage, inner, frozenset(upstream), depth, stmt)
                if index == 0 and redirects:  # `(cd x; make) > log`: each command writes there
                    self.found[before:] = [
                        attrs.evolve(i, redirects=(*i.redirects, *redirects))
                        for i in self.found[before:]
                    ]
            upstream.update(i.program for i in self.found[before:] if i.program is not None)

    def redirect(
        self, node: Any, state: _State, feeders: frozenset[str], depth: int, stmt: str
    ) -> list[tuple[str, str | None]]:
        operator = ""
        target: str | None = None
        for child in node.children:
            if not child.is_named and child.type not in ('"', "'"):
                operator += child.type
            elif child.type in ("heredoc_start", "heredoc_body", "heredoc_end", "pipeline"):
                continue
            elif child.type != "file_descriptor":
                target = self.word(child, state, feeders, depth, stmt)
        if node.type != "file_redirect":
            return []
        return [(operator, target)]

    def assign(
        self, node: Any, state: _State, feeders: frozenset[str], depth: int, stmt: str
    ) -> None:
        name = _text(node.child_by_field_name("name"))
        value_node = node.child_by_field_name("value")
        value = "" if value_node is None else self.word(value_node, state, feeders, depth, stmt)
        state.variables[name] = value

    # -- one simple command ----------------------------------------------------------------

    def command(
        self,
        node: Any,
        state: _State,
        feeders: frozenset[str],
        depth: int,
        stmt: str,
        redirects: tuple[tuple[str, str | None], ...],
    ) -> None:
        words: list[str | None] = []
        scope = state.copy()  # `X=1 cmd`: X is cmd's, not the line's
        inputs = set(feeders)
        for child in node.named_children:
            if child.type == "variable_assignment":
                self.assign(child, scope, feeders, depth, stmt)
            elif child.type in ("file_redirect", "herestring_redirect", "heredoc_redirect"):
                redirects = (*redirects, *self.redirect(child, scope, feeders, depth, stmt))
            else:
                target = child.named_children[0] if child.type == "command_name" else child
                before = len(self.found)
                words.append(self.word(target, scope, feeders, depth, stmt))
                inputs.update(i.program for i in self.found[before:] if i.program is not None)
        if not words:
            return
        self.argv(words, scope, frozenset(inputs), depth, stmt, redirects, state)

    def argv(
        self,
        words: list[str | None],
        scope: _State,
        feeders: frozenset[str],
        depth: int,
        stmt: str,
        redirects: tuple[tuple[str, str | None], ...],
        state: _State,
    ) -> None:
        head = words[0]
        program = None if head is None else posixpath.basename(head) or head
        args = tuple(words[1:])
        inner = _unwrap(program, list(args))
        self.found.append(
            Invocation(
                program,
                args,
                redirects,
                scope.cwd,
                feeders,
                stmt,
                wrapper=inner is not None,
                self_call=program in scope.functions and _forks(stmt),
            )
        )
        if program in ("cd", "pushd"):
            state.cwd = self.chdir(state.cwd, args)
            return
        if inner is None:
            return
        how, rest = inner
        if how == "argv":
            if rest:
                self.argv(rest, scope, feeders, depth, stmt, (), scope)
        elif how == "script":
            script = rest[0] if rest else None
            if script is None:
                self.found.append(Invocation(None, (), (), scope.cwd, feeders, stmt, wrapper=True))
            else:
                self.line(script, scope.copy(), feeders, depth + 1)
        elif how == "chdir":
            moved = scope.copy()
            moved.cwd = self.chdir(scope.cwd, tuple(rest[:1]))
            if rest[1:]:
                self.argv(rest[1:], moved, feeders, depth, stmt, (), moved)

    def chdir(self, cwd: str | None, args: tuple[str | None, ...]) -> str | None:
        operands = [a for a in args if a is None or not a.startswith("-")]
        if not operands:
            return self.home
        target = operands[0]
        if target is None or (cwd is None and not target.startswith("/")):
            return None
        return posixpath.normpath(posixpath.join(cwd or "/", target))

    # -- words -----------------------------------------------------------------------------

    def word(
        self, node: Any, state: _State, feeders: frozenset[str], depth: int, stmt: str
    ) -> str | None:
        """The value of one word node, ``None`` when only the running shell knows it."""
        kind = node.type
        if kind in ("command_substitution", "process_substitution"):
            self.node(node, state.copy(), feeders, depth, stmt)
            return None
        if kind == "word":
            return self.tilde(_ESCAPED.sub(r"\1", _text(node)))
        if kind == "number":
            return _text(node)
        if kind == "raw_string":
            return _text(node)[1:-1]
        if kind == "ansi_c_string":
            return _ansi_c(_text(node)[2:-1])
        if kind in ("simple_expansion", "expansion"):
            return self.variable(node, state)
        if kind in ("string", "concatenation", "translated_string"):
            parts: list[str] = []
            known = True
            for index, child in enumerate(node.children):
                if child.type == '"' or child.type == "$":
                    continue
                if child.type == "string_content":
                    value: str | None = _QUOTED_ESCAPE.sub(r"\1", _text(child))
                else:
                    value = self.word(child, state, feeders, depth, stmt)
                    if child.type == "word" and index > 0 and value is not None:
                        value = _ESCAPED.sub(r"\1", _text(child))  # `~` only expands first
                known = known and value is not None
                parts.append(value or "")
            return "".join(parts) if known else None
        # anything else (arithmetic, arrays, brace expansion) is read as written, when it
        # holds no substitution
        for sub in _descendants(node):
            if sub.type in ("command_substitution", "process_substitution"):
                self.node(sub, state.copy(), feeders, depth, stmt)
                return None
            if sub.type in ("simple_expansion", "expansion"):
                return None
        return _text(node)

    def variable(self, node: Any, state: _State) -> str | None:
        names = [
            c for c in node.named_children if c.type in ("variable_name", "special_variable_name")
        ]
        if len(names) != 1 or len(node.named_children) != 1:
            return None  # ${X:-y}, ${X/a/b}, ${#X}: computed
        name = _text(names[0])
        if name in state.variables:
            return state.variables[name]
        if name == "HOME":
            return self.home
        if name == "PWD":
            return state.cwd
        return None

    def tilde(self, value: str) -> str | None:
        if value == "~" or value.startswith("~/"):
            return self.home + value[1:]
        if value.startswith("~"):
            return None  # another user's home: known only to the running system
        return value


# -- wrappers ---------------------------------------------------------------------------------

# options of each wrapper that take a value, so the wrapped program is found after them
_VALUED: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "exec": frozenset({"-a"}),
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user"}),
    "doas": frozenset({"-u", "-C"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u"}),
    "xargs": frozenset({"-I", "-i", "-n", "-P", "-d", "-E", "-e", "-L", "-l", "-s", "-a"}),
    "chrt": frozenset(),
    "setsid": frozenset(),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "caffeinate": frozenset(),
    "unbuffer": frozenset(),
}
_SCRIPT_RUNNERS = frozenset({"eval", "watch"})


def _unwrap(program: str | None, args: list[str | None]) -> tuple[str, list[str | None]] | None:
    """What a wrapper runs: ``("argv", words)``, ``("script", [text])`` (shell source, ``None``
    when computed) or ``("chdir", [dir, *words])``; ``None`` for a program that wraps nothing."""
    if program is None:
        return None
    if program in SHELLS:
        return _shell_script(args)
    if program in _SCRIPT_RUNNERS:
        words = _skip_options(
            args, frozenset({"-n", "-d", "--interval"}) if program == "watch" else frozenset()
        )
        if not words:
            return None
        known = all(w is not None for w in words)
        return ("script", [" ".join(w for w in words if w is not None) if known else None])
    if program == "su":
        return _su(args)
    if program == "find":
        return _find_exec(args)
    if program not in _VALUED:
        return None
    if program == "command" and any(a in ("-v", "-V") for a in args):
        return None  # `command -v x` looks x up, runs nothing
    if program == "env":
        return _env(args)
    rest = _skip_options(args, _VALUED[program])
    if program == "timeout" and rest:
        rest = rest[1:]  # the duration
    if program == "xargs":
        return ("argv", [*(rest or ["echo"]), None]) if rest is not None else None
    return ("argv", rest) if rest else None


def _skip_options(args: list[str | None], valued: frozenset[str]) -> list[str | None]:
    index = 0
    while index < len(args):
        word = args[index]
        if word is None or not word.startswith("-") or word == "-":
            break
        index += 1
        if word == "--":
            break
        if word in valued and "=" not in word:
            index += 1
    return args[index:]


def _env(args: list[str | None]) -> tuple[str, list[str | None]] | None:
    index = 0
    chdir: str | None = None
    while index < len(args):
        word = args[index]
        if word is None:
            break
        if word in ("-S", "--split-string") or word.startswith("--split-string="):
            text = word.partition("=")[2] if "=" in word else _at(args, index + 1)
            return ("script", [text])
        if word in ("-C", "--chdir"):
            chdir = _at(args, index + 1)
            index += 2
            continue
        if word.startswith("-") and word != "-":
            index += 2 if word in ("-u", "--unset") else 1
            continue
        if "=" in word and _NAME.match(word.partition("=")[0]):
            index += 1
            continue
        break
    rest = args[index:]
    if not rest:
        return None
    return ("chdir", [chdir, *rest]) if chdir is not None else ("argv", rest)


def _at(args: list[str | None], index: int) -> str | None:
    return args[index] if index < len(args) else None


def _shell_script(args: list[str | None]) -> tuple[str, list[str | None]] | None:
    """``bash -c 'script'`` (also ``-lc``, ``-ec``, ``-o x -c``): the script; else nothing."""
    index = 0
    while index < len(args):
        word = args[index]
        if word is None or not word.startswith(("-", "+")):
            return None  # `bash script.sh`: runs a file, judged as the program it is
        index += 1
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            index += 1  # the option's value
        elif not word.startswith("--") and "c" in word[1:]:
            return ("script", [_at(args, index)])
    return None


def _su(args: list[str | None]) -> tuple[str, list[str | None]] | None:
    for index, word in enumerate(args):
        if word in ("-c", "--command"):
            return ("script", [_at(args, index + 1)])
        if word is not None and word.startswith("--command="):
            return ("script", [word.partition("=")[2]])
    return None


def _find_exec(args: list[str | None]) -> tuple[str, list[str | None]] | None:
    for index, word in enumerate(args):
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            inner: list[str | None] = []
            for item in args[index + 1 :]:
                if item in (";", "+"):
                    break
                inner.append(None if item is not None and "{}" in item else item)
            return ("argv", inner) if inner else None
    return None


# -- helpers ----------------------------------------------------------------------------------


def _text(node: Any) -> str:
    if node is None:
        return ""
    return bytes(node.text).decode("utf-8", "surrogateescape")


def _statements(pipeline: Any) -> list[Any]:
    return [c for c in pipeline.named_children if c.type not in ("comment",)]


def _descendants(node: Any) -> Iterator[Any]:
    for child in node.children:
        yield child
        yield from _descendants(child)


def _forks(stmt: str) -> bool:
    """A function called from a pipeline or the background in its own body."""
    return "|" in stmt or "&" in stmt


def _ansi_c(body: str) -> str:
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body
