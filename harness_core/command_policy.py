"""The ``auto`` posture's command policy: allow / ask / deny for shell commands and file tools.

A command is parsed as shell (:mod:`.shell_words`) into the simple commands it would run,
wrappers and nesting unwrapped (``bash -c "rm -rf /"``, ``env X=1 rm -rf /``, ``$(...)``,
``xargs``, ``sudo``), and each is judged against **rules**: data (:class:`Rule`), the built-in
ones in :data:`BUILTIN_RULES` and a host's own. Every rule that matches has its say; the most
severe verdict wins (deny, then ask, then allow), so a host's ``allow`` never lifts a built-in
``ask`` or ``deny`` (a host that wants that disables the rule by name, or replaces the built-in
set). A simple command no rule matches gets the policy's ``default`` (``allow``). A line that
cannot be parsed asks.

"ask" goes to the host's approval handler (:mod:`.approvals`); with none, it is a deny whose
reason the model sees. A host configures the policy per controller (``CommandPolicy(...)``) or
per session (the config's ``command_policy``, see :meth:`CommandPolicy.from_config`);
``harness policy check 'CMD'`` prints the verdict and the rule.

This is a guardrail for an autonomous turn, not a sandbox: the sandbox provider is what
actually confines the process.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

import attrs
from attrs import field, frozen
from harness_hookspecs import HarnessError, PermissionRequest

from .shell_words import SHELLS, Invocation, parse

__all__ = [
    "BUILTIN_RULES",
    "VERDICTS",
    "CommandPolicy",
    "Judgement",
    "Rule",
]

VERDICTS = ("allow", "ask", "deny")
SEVERITY = {"allow": 0, "ask": 1, "deny": 2}
#: which of an invocation's words a rule's ``paths``/``where`` look at
TARGETS = ("any", "write", "delete", "program")
WHERE = ("outside", "unknown")

_DOWNLOADERS = ("curl", "wget", "fetch", "aria2c", "http", "https", "xh")
_INTERPRETERS = (*sorted(SHELLS), "python", "python3", "python3.*", "perl", "ruby", "node", "php")
_SQL_CLIENTS = (
    "psql", "pgcli", "mysql", "mariadb", "mycli", "mysqlsh", "sqlite3", "litecli", "duckdb",
    "sqlcmd", "usql", "clickhouse", "clickhouse-client", "cockroach", "sqlplus", "snowsql",
    "bq", "isql", "trino", "presto",
)  # fmt: skip
_DESTRUCTIVE_SQL = (
    r"\b(drop|truncate|alter)\s+\w+"
    r"|\bdelete\s+from\b|\bupdate\s+\S+\s+set\b"
    r"|\bcreate\s+(or\s+replace\s+)?(table|database|schema|index|view|user|role|function|trigger)\b"
    r"|\b(grant|revoke)\b"
)
_CREDENTIAL_STORES = (
    "~/.ssh", "~/.ssh/*", "*/.ssh/id_*", "*/.ssh/authorized_keys",
    "~/.aws", "~/.aws/*", "~/.config/gcloud", "~/.config/gcloud/*", "~/.azure", "~/.azure/*",
    "~/.netrc", "~/.docker/config.json", "~/.kube/config", "~/.gnupg", "~/.gnupg/*",
    "~/.git-credentials", "~/.config/gh/hosts.yml", "~/.pgpass", "~/.my.cnf",
    "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/sudoers", "/etc/sudoers.d/*",
    "/etc/ssh/ssh_host_*_key", "/proc/*/environ", "/root/.ssh/*",
)  # fmt: skip
_SECRET_FILES = ("*/.env", "*/.env.*", "*/.npmrc", "*/.pypirc", "*/.netrc", "*/.pgpass")
_BLOCK_DEVICES = ("/dev/sd*", "/dev/nvme*", "/dev/hd*", "/dev/vd*", "/dev/xvd*", "/dev/mmcblk*")
# writes that touch nothing: the usual sinks of a build or a test
_SINKS = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/*", "/dev/zero")


def _strings(value: Iterable[str] | str | None) -> tuple[str, ...]:
    if isinstance(value, str):
        raise ValueError("expected a list of strings, not one string")
    items = tuple(value or ())
    if not all(isinstance(v, str) for v in items):
        raise ValueError("expected a list of strings")
    return items


def _rules(value: Iterable[Rule]) -> tuple[Rule, ...]:
    return tuple(value)


def _one_of(choices: tuple[str, ...]) -> Any:
    return attrs.validators.in_(choices)


@frozen
class Rule:
    """One rule: a verdict for the simple commands (or file-tool calls) it matches.

    Every condition given must hold (an empty one always does): ``programs`` globs over the
    program name; ``subcommand``: the first operand (``git push``); ``flags``: one of these
    options is present (``-f`` also inside ``-rf``; globs for long options); ``args``: one
    argument matches one of these globs; ``text``: a regular expression (any case) found in
    the statement's source (a SQL client's ``-c``, here-document or piped ``echo``);
    ``fed_by``: a program whose output it reads (``curl x | sh``); ``paths`` and ``where``
    over the words ``target`` names: ``paths`` globs (``~`` is the home directory) and
    ``where`` ``outside`` the workspace or ``unknown`` until run time; ``command``: a glob over
    the whole simple command; ``kinds``: the request kinds it judges (``shell`` for commands,
    ``read``/``write`` for file tools with a path); ``self_call``: a function that calls itself
    in a pipeline or the background (a fork bomb).
    """

    name: str = field(validator=attrs.validators.min_len(1))
    verdict: str = field(validator=_one_of(VERDICTS))
    reason: str = ""
    programs: tuple[str, ...] = field(converter=_strings, default=())
    subcommand: tuple[str, ...] = field(converter=_strings, default=())
    flags: tuple[str, ...] = field(converter=_strings, default=())
    args: tuple[str, ...] = field(converter=_strings, default=())
    text: str | None = field(default=None)
    fed_by: tuple[str, ...] = field(converter=_strings, default=())
    target: str = field(default="any", validator=_one_of(TARGETS))
    paths: tuple[str, ...] = field(converter=_strings, default=())
    where: str | None = field(default=None, validator=attrs.validators.optional(_one_of(WHERE)))
    command: str | None = None
    kinds: tuple[str, ...] = field(converter=_strings, default=("shell",))
    self_call: bool = False

    @text.validator
    def _check_text(self, attribute: Any, value: str | None) -> None:
        if value is not None:
            re.compile(value)

    @property
    def why(self) -> str:
        """The sentence the model and the host read."""
        return self.reason or f"{self.verdict} by the command policy rule {self.name}"

    def matches(self, call: Invocation, workspace: str | None, kind: str) -> bool:
        """Whether ``call`` (a request of ``kind``) is what this rule is about."""
        if kind not in self.kinds:
            return False
        if self.self_call and not call.self_call:
            return False
        if self.programs and not _any_glob(call.program, self.programs):
            return False
        if self.subcommand and not _any_glob(_subcommand(call), self.subcommand):
            return False
        if self.flags and not any(_has_flag(call.args, flag) for flag in self.flags):
            return False
        if self.args and not any(_any_glob(arg, self.args) for arg in call.args):
            return False
        if self.fed_by and not any(_any_glob(p, self.fed_by) for p in call.feeders):
            return False
        if self.text is not None and not _text_in(self.text, call):
            return False
        if self.command is not None and not fnmatch.fnmatchcase(call.text, self.command):
            return False
        if self.paths or self.where is not None:
            return any(self._path_matches(p, workspace) for p in _targets(call, self.target))
        return True

    def _path_matches(self, path: str | None, workspace: str | None) -> bool:
        if path is None:
            return self.where == "unknown" and not self.paths
        if self.paths and not _globs_meet(path, tuple(_home(g) for g in self.paths)):
            return False
        if self.where == "unknown":
            return False
        return self.where is None or not _inside(path, workspace)

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> Rule:
        """One rule from a host's configuration; bad input is ``invalid-request``."""
        if not isinstance(data, Mapping):
            raise HarnessError("invalid-request", "a command_policy rule must be a mapping")
        known = {a.name for a in attrs.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise HarnessError("invalid-request", f"unknown command_policy rule key {unknown[0]!r}")
        try:
            return cls(**data)
        except (TypeError, ValueError, re.error) as error:
            name = data.get("name", "?")
            raise HarnessError(
                "invalid-request", f"command_policy rule {name!r}: {_message(error)}"
            ) from None


def _rm_flags() -> tuple[str, ...]:
    return ("-r", "-R", "-f", "--recursive", "--force")


#: The ``auto`` posture's rules, as the seed's auto posture describes it: what a coding agent
#: does in its workspace runs; catastrophes are denied; what touches credentials, databases,
#: other users, published history or the world outside the workspace asks.
BUILTIN_RULES: tuple[Rule, ...] = (
    Rule("delete-outside-workspace", "deny", "recursive or forced delete outside the workspace",
         target="delete", where="outside"),
    Rule("delete-unknown-target", "ask", "a recursive or forced delete whose target is known "
         "only at run time", target="delete", where="unknown"),
    Rule("download-into-shell", "deny", "piping a download into a shell",
         programs=_INTERPRETERS, fed_by=_DOWNLOADERS),
    Rule("disk-format", "deny", "destructive system command",
         programs=("mkfs", "mkfs.*", "wipefs", "mkswap", "fdisk", "sfdisk", "parted")),
    Rule("disk-overwrite", "deny", "destructive system command", programs=("dd",),
         args=tuple(f"of={d}" for d in _BLOCK_DEVICES)),
    Rule("block-device-write", "deny", "destructive system command", target="write",
         paths=_BLOCK_DEVICES),
    Rule("fork-bomb", "deny", "destructive system command", self_call=True),
    Rule("credential-store", "ask", "reads or writes a credential store",
         paths=_CREDENTIAL_STORES, kinds=("shell", "read", "write")),
    Rule("secret-file-outside-workspace", "ask", "reads or writes a secrets file outside the "
         "workspace", paths=_SECRET_FILES, where="outside", kinds=("shell", "read", "write")),
    Rule("destructive-sql", "ask", "DDL or destructive SQL through a database client",
         programs=_SQL_CLIENTS, text=_DESTRUCTIVE_SQL),
    Rule("database-drop-tool", "ask", "drops a database or its data",
         programs=("dropdb", "dropuser", "dropdb.exe")),
    Rule("database-admin-drop", "ask", "drops a database or its data",
         programs=("mysqladmin", "redis-cli", "mongosh", "mongo"),
         args=("drop", "DROP", "flushall", "FLUSHALL", "flushdb", "FLUSHDB", "*dropDatabase*",
               "*.drop()*")),
    Rule("other-user", "ask", "runs a command as another user",
         programs=("sudo", "doas", "su", "pkexec", "run0")),
    Rule("git-force-push", "ask", "force-pushes published history", programs=("git",),
         subcommand=("push",), flags=("-f", "--force", "--force-with-lease*",
                                      "--force-if-includes", "--mirror", "--delete", "-d")),
    Rule("git-force-push-refspec", "ask", "force-pushes published history", programs=("git",),
         subcommand=("push",), args=("+*", ":*")),
    Rule("write-outside-workspace", "ask", "writes outside the workspace", target="write",
         where="outside"),
    Rule("file-write-outside-workspace", "deny", "file write outside the workspace",
         target="write", where="outside", kinds=("write",)),
    Rule("computed-command", "ask", "runs a command known only at run time",
         target="program", where="unknown"),
    Rule("power-off", "ask", "stops or restarts the machine",
         programs=("shutdown", "reboot", "halt", "poweroff")),
    Rule("kill-everything", "ask", "signals every process", programs=("kill", "pkill"),
         args=("-1", "-u*")),
)  # fmt: skip

UNPARSEABLE = Rule("unparseable", "ask", "the command could not be read as shell")
TRUNCATED = Rule("truncated", "ask", "the command is too long to judge")
DEFAULT_RULE_NAME = "default"


@frozen
class Judgement:
    """A verdict, the rule that gave it and its reason (``None`` for an allow)."""

    verdict: str
    rule: str
    reason: str | None
    command: str | None = None


@frozen
class CommandPolicy:
    """The rules, a host's globs and the ``default`` verdict for what no rule matches.

    ``allow``/``ask``/``deny`` are globs over each simple command (``"git push*"``), kept for
    hosts that configure them that way; ``rules`` are a host's own :class:`Rule` s, judged with
    the built-in ones unless ``builtin`` is false; ``disable`` names built-in rules to drop.
    """

    allow: tuple[str, ...] = field(converter=_strings, factory=tuple)
    ask: tuple[str, ...] = field(converter=_strings, factory=tuple)
    deny: tuple[str, ...] = field(converter=_strings, factory=tuple)
    default: str = field(default="allow", validator=_one_of(VERDICTS))
    rules: tuple[Rule, ...] = field(converter=_rules, factory=tuple)
    builtin: bool = True
    disable: tuple[str, ...] = field(converter=_strings, factory=tuple)

    @disable.validator
    def _check_disable(self, attribute: Any, value: tuple[str, ...]) -> None:
        names = {rule.name for rule in BUILTIN_RULES}
        for name in value:
            if name not in names:
                raise ValueError(f"no built-in rule named {name!r}")

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> CommandPolicy:
        """From a session config's ``command_policy`` mapping: ``allow``/``ask``/``deny``
        (globs), ``default``, ``rules`` (a list of :class:`Rule` mappings), ``builtin``
        (false: the host's rules replace the built-in ones), ``disable`` (built-in rule names).
        Bad input is ``invalid-request``."""
        if not config:
            return cls()
        if not isinstance(config, Mapping):
            raise HarnessError("invalid-request", "command_policy must be a mapping")
        keys = ("allow", "ask", "deny", "default", "rules", "builtin", "disable")
        unknown = sorted(set(config) - set(keys))
        if unknown:
            raise HarnessError("invalid-request", f"unknown command_policy key {unknown[0]!r}")
        rules = config.get("rules", ())
        if isinstance(rules, str | Mapping) or not isinstance(rules, Iterable):
            raise HarnessError("invalid-request", "command_policy rules must be a list")
        parsed = tuple(Rule.from_config(rule) for rule in rules)
        if not isinstance(config.get("builtin", True), bool):
            raise HarnessError("invalid-request", "command_policy builtin must be true or false")
        try:
            return cls(
                allow=config.get("allow", ()),
                ask=config.get("ask", ()),
                deny=config.get("deny", ()),
                default=config.get("default", "allow"),
                rules=parsed,
                builtin=config.get("builtin", True),
                disable=config.get("disable", ()),
            )
        except (TypeError, ValueError) as error:
            raise HarnessError("invalid-request", f"command_policy: {_message(error)}") from None

    @property
    def all_rules(self) -> tuple[Rule, ...]:
        """The rules judged, in order: the host's globs and rules, then the built-in ones."""
        globs = tuple(
            Rule(f"{verdict}-pattern", verdict, _GLOB_REASONS[verdict], command=pattern,
                 kinds=("shell", "read", "write", "fetch", "mcp", "other"))
            for verdict, patterns in (("deny", self.deny), ("ask", self.ask), ("allow", self.allow))
            for pattern in patterns
        )  # fmt: skip
        builtin = tuple(r for r in BUILTIN_RULES if r.name not in self.disable)
        return (*globs, *self.rules, *(builtin if self.builtin else ()))

    def verdict(self, request: PermissionRequest, workspace: str | None) -> tuple[str, str | None]:
        """``(verdict, reason)`` for one request; the reason is a fixed, safe sentence."""
        judged = self.judge(request, workspace)
        return judged.verdict, judged.reason

    def judge(self, request: PermissionRequest, workspace: str | None) -> Judgement:
        """The verdict for one request, with the rule that gave it."""
        calls, problems, kind = self._calls(request, workspace)
        rules = self.all_rules
        worst: Judgement | None = None
        for problem in problems:
            worst = _worse(worst, Judgement(problem.verdict, problem.name, problem.why))
        for call in calls:
            matched = [r for r in rules if r.matches(call, workspace, kind)]
            if not matched and call.wrapper:
                continue  # `env X=1 make`: the default is for what the wrapper runs
            if not matched:
                reason = None if self.default == "allow" else "not allowed by the command policy"
                judged = Judgement(self.default, DEFAULT_RULE_NAME, reason, call.text)
            else:
                rule = max(matched, key=lambda r: SEVERITY[r.verdict])
                reason = None if rule.verdict == "allow" else rule.why
                judged = Judgement(rule.verdict, rule.name, reason, call.text)
            worst = _worse(worst, judged)
        if worst is None:
            reason = None if self.default == "allow" else "not allowed by the command policy"
            return Judgement(self.default, DEFAULT_RULE_NAME, reason)
        return worst

    def _calls(
        self, request: PermissionRequest, workspace: str | None
    ) -> tuple[list[Invocation], list[Rule], str]:
        """The simple commands to judge, what could not be read, and the kind judged as (a
        request with a command is a shell command whatever its tool's kind)."""
        cwd = os.path.realpath(workspace) if workspace else None
        if request.kind in ("read", "write") and request.path is not None:
            target = _resolve(request.path, cwd)
            redirect = ">" if request.kind == "write" else "<"
            return [Invocation(request.tool, (), ((redirect, target),), cwd)], [], request.kind
        lines = _command_lines(request)
        if not lines:
            return [Invocation(request.tool, (), (), cwd)], [], request.kind
        calls: list[Invocation] = []
        problems: list[Rule] = []
        for line in lines:
            if line.endswith("\u2026") and len(line) >= _COMMAND_MAX - 1:
                problems.append(TRUNCATED)
            parsed = parse(line, cwd=cwd)
            calls.extend(parsed.invocations)
            if parsed.problems:
                problems.append(UNPARSEABLE)
        return calls, problems, "shell"


_GLOB_REASONS = {
    "deny": "denied by the command policy",
    "ask": "the command policy asks the host",
    "allow": "",
}
_COMMAND_MAX = 4096


def _message(error: BaseException) -> str:
    """A validator's own sentence (attrs puts it first among the error's arguments)."""
    first = error.args[0] if error.args else error
    return str(first)[:160]


def _worse(current: Judgement | None, new: Judgement) -> Judgement:
    if current is None or SEVERITY[new.verdict] > SEVERITY[current.verdict]:
        return new
    return current


def _command_lines(request: PermissionRequest) -> list[str]:
    """The command as the harness will run it: the tool's raw input (it keeps the newlines
    that the request's one-line ``command`` turned into spaces), else that one line."""
    lines: list[str] = []
    for key in ("command", "cmd"):
        raw = request.input.get(key)
        if isinstance(raw, str) and raw.strip():
            lines.append(raw)
        elif isinstance(raw, list | tuple) and raw and all(isinstance(w, str) for w in raw):
            lines.append(shlex.join(raw))
        if lines:
            break
    if not lines and request.command is not None:
        lines.append(request.command)
    return lines


# -- words a rule looks at ------------------------------------------------------------------

_DELETERS = ("rm", "unlink", "shred")
_ALL_OPERANDS_WRITE = (
    "tee", "touch", "mkdir", "rmdir", "truncate", "mv", "unlink", "rm", "shred", "mkfifo",
)  # fmt: skip
_LAST_OPERAND_WRITE = ("cp", "install", "ln", "rsync", "scp")
_MODE_FIRST_WRITE = ("chmod", "chown", "chgrp", "setfacl")
_OUTPUT_OPTIONS = ("-o", "--output", "-O", "--output-document", "--target-directory", "-t")


def _targets(call: Invocation, target: str) -> list[str | None]:
    """The paths (absolute, ``None`` when unknown) a rule's ``target`` names in ``call``."""
    if target == "program":
        return [call.program] if call.program is None else []
    if target == "delete":
        return [_resolve(p, call.cwd) for p in _deleted(call)]
    if target == "write":
        written = [_resolve(p, call.cwd) for p in _written(call)]
        return [p for p in written if p is None or not _scratch(p)]
    words = [*_operands(call.args), *(t for _, t in call.redirects)]
    values = [w.partition("=")[2] if w and w.startswith("-") else w for w in call.args]
    words.extend(v for v in values if v)
    words.extend(w[1:] for w in call.args if w and w.startswith("@"))  # curl -d @file
    return [_resolve(w, call.cwd) for w in words]


def _operands(args: tuple[str | None, ...]) -> list[str | None]:
    operands: list[str | None] = []
    options_done = False
    for word in args:
        if word == "--" and not options_done:
            options_done = True
        elif options_done or word is None or not word.startswith("-") or word == "-":
            operands.append(word)
    return operands


def _deleted(call: Invocation) -> list[str | None]:
    program = call.program
    if program == "rm" and any(_has_flag(call.args, f) for f in _rm_flags()):
        return _operands(call.args)
    if program == "find" and "-delete" in call.args:
        starts: list[str | None] = []
        for word in call.args:
            if word is None or word.startswith(("-", "(", "!")):
                break
            starts.append(word)
        return starts or ["."]
    return []


def _written(call: Invocation) -> list[str | None]:
    written: list[str | None] = [t for op, t in call.redirects if ">" in op and not _fd(op, t)]
    program = call.program
    operands = _operands(call.args)
    if program in _ALL_OPERANDS_WRITE:
        written.extend(operands)
    elif program in _LAST_OPERAND_WRITE and len(operands) >= 2:
        written.append(operands[-1])
    elif program in _MODE_FIRST_WRITE or (
        program in ("sed", "perl") and _has_flag(call.args, "-i")
    ):
        written.extend(operands[1:])
    elif program == "dd":
        written.extend(w[3:] for w in call.args if w is not None and w.startswith("of="))
    for index, word in enumerate(call.args):
        if word in _OUTPUT_OPTIONS and index + 1 < len(call.args):
            written.append(call.args[index + 1])
        elif word is not None and word.startswith(tuple(f"{o}=" for o in _OUTPUT_OPTIONS)):
            written.append(word.partition("=")[2])
    return written


def _fd(operator: str, target: str | None) -> bool:
    """``2>&1``, ``>&2``: a duplicated descriptor, not a file."""
    return operator.endswith("&") and target is not None and (target.isdigit() or target == "-")


def _scratch(path: str) -> bool:
    return _any_glob(path, _SINKS) or any(path.startswith(base + "/") for base in _temp_dirs())


@cache
def _temp_dirs() -> tuple[str, ...]:
    import tempfile  # ~10 ms (random, hashlib): only once a command writes a file

    return tuple({os.path.realpath(tempfile.gettempdir()), "/tmp", "/var/tmp"})


def _subcommand(call: Invocation) -> str | None:
    """The first operand after the program's global options (``git -C x push`` -> push)."""
    args = call.args
    index = 0
    while index < len(args):
        word = args[index]
        if word is None:
            return None
        if not word.startswith("-"):
            return word
        index += 2 if word in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    return None


def _has_flag(args: tuple[str | None, ...], flag: str) -> bool:
    for word in args:
        if word == "--":
            return False  # operands from here on
        if word is None:
            continue
        if flag.startswith("--"):
            if fnmatch.fnmatchcase(word, flag) or word.partition("=")[0] == flag:
                return True
        elif word.startswith("-") and not word.startswith("--") and len(flag) == 2:
            if flag[1] in word[1:]:
                return True
        elif word == flag:
            return True
    return False


def _text_in(pattern: str, call: Invocation) -> bool:
    haystack = " ".join([call.statement, *(a for a in call.args if a is not None)])
    return re.search(pattern, haystack, re.IGNORECASE) is not None


def _any_glob(value: str | None, patterns: tuple[str, ...]) -> bool:
    return value is not None and any(fnmatch.fnmatchcase(value, p) for p in patterns)


def _globs_meet(path: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``path`` matches one of ``patterns``, or, itself a shell glob
    (``/proc/*/environ``, ``/etc/*``, ``~/.ss?/id_rsa``), could expand to a name one of them
    matches."""
    if _any_glob(path, patterns):
        return True
    return _has_glob(path) and any(_could_match(path, p) for p in patterns)


def _could_match(glob: str, pattern: str) -> bool:
    """Component by component, each side read as a glob of the other; a pattern's leading
    ``*/`` (``*/.ssh/id_*``) stands for any directories."""
    words, names = glob.split("/"), pattern.split("/")
    if names[0] == "*" and len(words) >= len(names):
        words, names = words[len(words) - len(names) + 1 :], names[1:]
    return len(words) == len(names) and all(map(_names_meet, words, names))


def _names_meet(word: str, name: str) -> bool:
    # the shell's glob matches a leading dot only when it starts with one (`~/*` is not `~/.ssh`)
    if name.startswith(".") and not word.startswith(".") and _has_glob(word):
        return False
    return fnmatch.fnmatchcase(word, name) or fnmatch.fnmatchcase(name, word)


def _has_glob(path: str) -> bool:
    return any(c in path for c in "*?[")


def _home(pattern: str) -> str:
    if pattern == "~" or pattern.startswith("~/"):
        return os.path.expanduser("~") + pattern[1:]
    return pattern


def _resolve(path: str | None, cwd: str | None) -> str | None:
    """``path`` made absolute from ``cwd`` (symlinks followed); ``None`` when unknowable."""
    if path is None:
        return None
    if path == "~" or path.startswith("~/"):
        path = os.path.expanduser("~") + path[1:]
    if not path.startswith("/"):
        if cwd is None:
            return None
        path = posixpath.join(cwd, path)
    if _climbs_out_of_glob(path):
        return None
    # a glob stays in the path (``/srv/*`` is under ``/srv``; ``/*`` under ``/``): the rules'
    # ``paths`` see all of it (``/proc/*/environ``), not only the directory before it
    return os.path.realpath(path)


def _climbs_out_of_glob(path: str) -> bool:
    """``./*/../../etc``: where a ``..`` after a glob leads depends on what the glob matches
    (a symlink among the matches climbs elsewhere), so it is known only at run time."""
    globbed = False
    for part in path.split("/"):
        if part == ".." and globbed:
            return True
        globbed = globbed or _has_glob(part)
    return False


def _inside(path: str, workspace: str | None) -> bool:
    if workspace is None:
        return False
    base = os.path.realpath(workspace)
    return path == base or path.startswith(base.rstrip("/") + "/")
