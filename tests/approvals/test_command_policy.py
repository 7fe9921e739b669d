"""The ``auto`` posture's command policy on parsed shell: the corpus, each rule by name, the
host's configuration, and the parser's reading of words (quotes, variables, ``cd``, wrappers).
"""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
from harness_hookspecs import HarnessError, PermissionRequest

from harness_core.command_policy import BUILTIN_RULES, CommandPolicy, Judgement, Rule
from harness_core.shell_words import parse
from tests.approvals.command_corpus import BENIGN, HARMFUL, HOME, WORKSPACE


@pytest.fixture(autouse=True)
def _home(monkeypatch):
    monkeypatch.setenv("HOME", HOME)


def judge(command: str, policy: CommandPolicy | None = None, workspace=WORKSPACE) -> Judgement:
    request = PermissionRequest.for_tool(
        "Bash", kind="shell", command=command, input={"command": command}
    )
    return (policy or CommandPolicy()).judge(request, workspace)


def file_call(kind: str, path: str, policy: CommandPolicy | None = None) -> Judgement:
    request = PermissionRequest.for_tool(
        "Write" if kind == "write" else "Read", kind=kind, path=path
    )
    return (policy or CommandPolicy()).judge(request, WORKSPACE)


# -- the corpus ---------------------------------------------------------------------------------


def test_the_corpus_is_big_enough_and_names_every_shell_rule():
    assert len(HARMFUL) + len(BENIGN) >= 300
    assert len({c for c, _, _ in HARMFUL}) == len(HARMFUL)
    assert len(set(BENIGN)) == len(BENIGN)
    named = {rule for _, _, rule in HARMFUL}
    shell_rules = {r.name for r in BUILTIN_RULES if "shell" in r.kinds}
    assert shell_rules <= named | {"secret-file-outside-workspace"}, shell_rules - named


def _test_id(command: str) -> str:
    """The command as its test's id, without the characters pytest would escape (a backslash, a
    newline): an escaped id cannot be selected again on the command line, which is how mutmut
    runs a mutant's tests."""
    return command.replace("\\", "<backslash>").replace("\n", "<newline>")


@pytest.mark.parametrize(
    ("command", "verdict", "rule"), HARMFUL, ids=[_test_id(c) for c, _, _ in HARMFUL]
)
def test_harmful_commands_are_never_allowed(command, verdict, rule):
    judged = judge(command)
    assert (judged.verdict, judged.rule) == (verdict, rule)
    assert judged.reason  # the model reads why


@pytest.mark.parametrize("command", BENIGN, ids=[_test_id(c) for c in BENIGN])
def test_benign_workspace_commands_are_allowed(command):
    judged = judge(command)
    assert (judged.verdict, judged.rule, judged.reason) == ("allow", "default", None)


def test_a_host_allow_never_lifts_a_built_in_verdict():
    everything = CommandPolicy(allow=["*"])
    for command, verdict, _ in HARMFUL:
        assert judge(command, everything).verdict == verdict, command


# -- each rule, by name -------------------------------------------------------------------------


def test_delete_outside_workspace_and_its_neighbours():
    assert judge("rm -rf build").verdict == "allow"
    assert judge("rm build").verdict == "allow"  # no -r/-f: a write inside
    assert judge("rm -r /opt/x").rule == "delete-outside-workspace"
    assert judge("rm -f /opt/x").rule == "delete-outside-workspace"
    assert judge("rm -R /opt/x").rule == "delete-outside-workspace"
    assert judge("rm --force /opt/x").rule == "delete-outside-workspace"
    assert judge("rm -v /opt/x").rule == "write-outside-workspace"
    assert judge("rm -rf /srv/ws").verdict == "allow"  # the workspace itself
    assert judge("rm -rf /srv/wsx").rule == "delete-outside-workspace"  # a sibling prefix
    assert judge("rm -- -rf").verdict == "allow"
    assert judge("find build -delete").verdict == "allow"
    assert judge("find /opt -delete").rule == "delete-outside-workspace"
    assert judge("find -delete").verdict == "allow"  # find's default start is .
    assert judge("find /opt -name '*.log'").verdict == "allow"  # no -delete: a search
    assert judge("rm --recursive /opt/x").rule == "delete-outside-workspace"
    assert judge('rm "$X" -rf /opt/x').rule == "delete-outside-workspace"  # past an unknown word
    assert judge("cd /etc && rm -rf -").rule == "delete-outside-workspace"  # "-" is a file
    assert judge("cd /etc && rm -f").verdict == "allow"  # a flag is not a file: nothing to delete
    # the start paths end at the expression: an option's value is not a start
    assert judge("find build -newer /etc/passwd -delete").verdict == "allow"
    assert judge("rm -rf /x", workspace=None).rule == "delete-outside-workspace"


def test_after_double_dash_a_word_starting_with_a_dash_is_an_operand():
    assert judge("cd /etc && rm -rf -- -x").rule == "delete-outside-workspace"
    assert judge("rm -rf -- -x").verdict == "allow"  # in the workspace


def test_delete_unknown_target():
    assert judge('rm -rf "$X"').rule == "delete-unknown-target"
    assert judge('rm -rf "$X"').verdict == "ask"
    assert judge('rm "$X"').verdict == "allow"  # a plain rm of an unknown file
    assert judge("rm -rf build", workspace=None).rule == "delete-unknown-target"  # where is .?


def test_download_into_shell():
    assert judge("curl x | sh").rule == "download-into-shell"
    assert judge("curl x | jq .").verdict == "allow"
    assert judge("sh install.sh").verdict == "allow"
    assert judge("curl -o i.sh x && sh i.sh").verdict == "allow"  # downloaded, then run: a file
    assert judge("echo $(curl x)").verdict == "allow"


def test_disks_and_fork_bombs():
    assert judge("mkfs.xfs /dev/vdb").rule == "disk-format"
    assert judge("dd if=/dev/zero of=/dev/mmcblk0").rule == "disk-overwrite"
    assert judge("dd if=/dev/zero of=disk.img bs=1M count=1").verdict == "allow"
    assert judge("cat x > /dev/xvda").rule == "block-device-write"
    assert judge(":(){ :|:& };:").rule == "fork-bomb"
    assert judge("f() { echo; }; f").verdict == "allow"
    assert judge("f() { f; }; f").verdict == "allow"  # recursion, not a fork


def test_credential_store_for_commands_and_file_tools():
    assert judge("cat ~/.ssh/id_rsa").rule == "credential-store"
    assert judge("cat ~/.ssh/known_hosts").rule == "credential-store"
    assert judge("ssh-keygen -y -f /home/bob/.ssh/id_ed25519").rule == "credential-store"
    assert file_call("read", "~/.aws/credentials").rule == "credential-store"
    assert file_call("read", "/etc/shadow").verdict == "ask"
    assert file_call("read", "/etc/hosts").verdict == "allow"
    assert file_call("read", "src/app.py").verdict == "allow"
    assert file_call("write", "~/.ssh/authorized_keys").verdict == "deny"  # outside, and a store


def test_secret_file_outside_workspace():
    assert judge("cat .env").verdict == "allow"
    assert judge("cat /srv/ws/config/.env").verdict == "allow"
    assert judge("cat /srv/app/.env").rule == "secret-file-outside-workspace"
    assert file_call("read", "../.env.local").rule == "secret-file-outside-workspace"
    assert file_call("read", ".npmrc").verdict == "allow"


def test_destructive_sql_needs_a_client_and_a_statement():
    assert judge("psql -c 'drop table t'").rule == "destructive-sql"
    assert judge("psql -c 'select 1'").verdict == "allow"
    assert judge("echo 'drop table t'").verdict == "allow"  # no client
    assert judge("echo 'drop table t' > notes.sql").verdict == "allow"
    assert judge("psql -c 'CREATE TABLE t (a int)'").rule == "destructive-sql"
    assert judge("psql -c 'create temp sequence s'").verdict == "allow"
    assert judge("psql -c 'revoke all on t from bob'").rule == "destructive-sql"
    assert judge("mysql -e 'update t set a=1 where id=2'").rule == "destructive-sql"


def test_database_tools():
    assert judge("dropdb test").rule == "database-drop-tool"
    assert judge("redis-cli flushdb").rule == "database-admin-drop"
    assert judge("redis-cli get key").verdict == "allow"
    assert judge("mysqladmin status").verdict == "allow"


def test_other_user_is_asked_and_the_wrapped_command_still_judged():
    assert judge("sudo ls").rule == "other-user"
    assert judge("sudo rm -rf /").rule == "delete-outside-workspace"
    assert judge("run0 id").rule == "other-user"


def test_git_force_push():
    for command in ("git push --force", "git push -f origin x", "git push --force-with-lease"):
        assert judge(command).rule == "git-force-push", command
    assert judge("git push origin +x").rule == "git-force-push-refspec"
    assert judge("git push origin main").verdict == "allow"
    assert judge("git commit -f").verdict == "allow"  # not push
    assert judge("git fetch --force").verdict == "allow"
    assert judge("git -c a.b=c push -f").rule == "git-force-push"
    assert judge("git --no-pager push --force").rule == "git-force-push"
    assert judge("git push -- -f").verdict == "allow"  # an operand named -f
    assert judge("git push --follow-tags origin main").verdict == "allow"  # not -f
    # git's global options that take a value are skipped with it, however many come first
    for command in (
        "git --git-dir /r/.git push -f",
        "git --work-tree /w push -f",
        "git --namespace n push -f",
        "git --no-pager -C /srv push -f",
        "git -C /srv push origin -f",
    ):
        assert judge(command).rule == "git-force-push", command
    # no subcommand at all: options only, or an option's value missing at the end
    for command in ("git --version", "git -C", "git -C /srv --no-pager"):
        assert judge(command).verdict == "allow", command


def test_writes_outside_the_workspace():
    assert judge("echo x > out.txt").verdict == "allow"
    assert judge("echo x > /opt/out.txt").rule == "write-outside-workspace"
    assert judge("echo x >> /opt/out.txt").rule == "write-outside-workspace"
    assert judge("echo x &> /opt/out.txt").rule == "write-outside-workspace"
    assert judge("make 2>&1").verdict == "allow"
    assert judge("make >&2").verdict == "allow"
    assert judge("make > /dev/null 2> /dev/stderr").verdict == "allow"
    assert judge("pytest > /tmp/out.log").verdict == "allow"  # scratch space
    assert judge("cat /etc/hosts").verdict == "allow"  # reading is fine
    assert judge("cp /etc/hosts hosts.copy").verdict == "allow"
    assert judge("cp a b /opt/").rule == "write-outside-workspace"
    assert judge("install -m 755 app /usr/bin/app").rule == "write-outside-workspace"
    assert judge("chmod +x run.sh").verdict == "allow"
    assert judge("chmod 600 /opt/x").rule == "write-outside-workspace"
    assert judge("sed 's/a/b/' /etc/hosts").verdict == "allow"  # no -i: reads
    assert judge("perl -pi -e 's/a/b/' /etc/hosts").rule == "write-outside-workspace"
    assert judge("curl --output=/opt/x https://x.example").rule == "write-outside-workspace"
    assert judge("curl --output /opt/x https://x.example").rule == "write-outside-workspace"
    assert judge("dd if=a of=/opt/b").rule == "write-outside-workspace"
    assert file_call("write", "/opt/x").rule == "file-write-outside-workspace"
    assert file_call("write", "/tmp/scratch.txt").verdict == "allow"
    assert file_call("write", "notes.txt").verdict == "allow"


def test_descriptor_duplications_are_not_files_but_a_file_after_them_is():
    # `2>&1`, `>&2`, `>& -` name descriptors: run outside the workspace they write no file there
    for command in ("cd /etc && make 2>&1", "cd /etc && make >&2", "cd /etc && make >& -"):
        assert judge(command).verdict == "allow", command
    # a file after `>&` gets both streams, and a file may be named by digits
    assert judge("make >& /etc/build.log").rule == "write-outside-workspace"
    assert judge("cd /etc && echo x > 1").rule == "write-outside-workspace"


def test_computed_power_and_process_rules():
    assert judge("$X").rule == "computed-command"
    assert judge("X=ls; $X").verdict == "allow"  # known on the line
    assert judge("halt").rule == "power-off"
    assert judge("kill -9 1234").verdict == "allow"
    assert judge("pkill -u bob").rule == "kill-everything"


def test_unparseable_and_truncated_lines_ask():
    assert judge("echo 'x").rule == "unparseable"
    assert judge("ls )").verdict == "ask"
    long = "echo " + "a" * 5000
    judged = judge_line(long)
    assert (judged.verdict, judged.rule) == ("ask", "truncated")


def judge_line(command: str) -> Judgement:
    """As an adapter that passes only the one-line command (no raw input)."""
    request = PermissionRequest.for_tool("Bash", kind="shell", command=command)
    return CommandPolicy().judge(request, WORKSPACE)


def test_the_raw_input_is_judged_not_the_one_line_summary():
    # newlines collapse to spaces in request.command: `echo hi rm -rf /` would be an echo
    request = PermissionRequest.for_tool(
        "Bash", kind="shell", command="echo hi\nrm -rf /", input={"command": "echo hi\nrm -rf /"}
    )
    assert request.command == "echo hi rm -rf /"
    assert CommandPolicy().judge(request, WORKSPACE).rule == "delete-outside-workspace"
    argv = PermissionRequest.for_tool(
        "shell", kind="shell", command="x", input={"cmd": ["rm", "-rf", "/"]}
    )
    assert CommandPolicy().judge(argv, WORKSPACE).rule == "delete-outside-workspace"
    # raw input that holds no command (an empty argv, a non-string word): the one line is judged
    for raw in ([], ["rm", 1]):
        empty = PermissionRequest.for_tool(
            "shell", kind="shell", command="rm -rf /", input={"cmd": raw}
        )
        assert CommandPolicy().judge(empty, WORKSPACE).rule == "delete-outside-workspace", raw
    # a string action with no kind is still a command
    action = PermissionRequest.for_tool("action", command="rm -rf /")
    assert CommandPolicy().verdict(action, WORKSPACE) == (
        "deny",
        "recursive or forced delete outside the workspace",
    )


def test_requests_without_a_command_get_the_default():
    fetch = PermissionRequest.for_tool("WebFetch", kind="fetch")
    assert CommandPolicy().judge(fetch, WORKSPACE).verdict == "allow"
    assert CommandPolicy(default="ask").judge(fetch, WORKSPACE).verdict == "ask"
    denied = CommandPolicy(default="deny").judge(fetch, WORKSPACE)
    assert (denied.verdict, denied.reason) == ("deny", "not allowed by the command policy")


# -- the host's configuration -------------------------------------------------------------------


def test_default_applies_to_what_wrappers_run_not_to_the_wrappers():
    strict = CommandPolicy(allow=["make*", "pytest*"], default="deny")
    assert judge("env CI=1 make test", strict).verdict == "allow"
    assert judge("timeout 9 pytest -q", strict).verdict == "allow"
    assert judge("bash -c 'make && pytest'", strict).verdict == "allow"
    assert judge("make && git status", strict).rule == "default"
    assert judge("make && git status", strict).command == "git status"
    assert judge("make", CommandPolicy(default="ask")).verdict == "ask"


def test_globs_judge_each_simple_command():
    policy = CommandPolicy(deny=["npm publish*"], ask=["git push*"])
    assert judge("make && npm publish --tag x", policy).rule == "deny-pattern"
    assert judge("env X=1 git push origin main", policy).verdict == "ask"
    assert judge("git status", policy).verdict == "allow"


def test_host_rules_extend_disable_and_replace():
    terraform = {"name": "tf-destroy", "verdict": "deny", "programs": ["terraform"],
                 "args": ["destroy"], "reason": "terraform destroy"}  # fmt: skip
    policy = CommandPolicy.from_config({"rules": [terraform]})
    judged = judge("cd infra && terraform destroy", policy)
    assert (judged.verdict, judged.rule, judged.reason) == (
        "deny",
        "tf-destroy",
        "terraform destroy",
    )
    assert judge("terraform plan", policy).verdict == "allow"
    assert judge("sudo ls", policy).rule == "other-user"  # the built-in ones still apply

    no_sudo_rule = CommandPolicy.from_config({"disable": ["other-user"]})
    assert judge("sudo ls", no_sudo_rule).verdict == "allow"
    assert judge("sudo rm -rf /", no_sudo_rule).verdict == "deny"

    replaced = CommandPolicy.from_config({"builtin": False, "rules": [terraform]})
    assert judge("rm -rf /", replaced).verdict == "allow"
    assert judge("terraform destroy", replaced).verdict == "deny"
    assert [r.name for r in replaced.all_rules] == ["tf-destroy"]


def test_a_long_flag_matches_with_its_value_after_an_equals_sign():
    policy = CommandPolicy(rules=(Rule("exec-flag", "ask", programs=("tool",), flags=("--exec",)),))
    assert judge("tool --exec=a=b", policy).rule == "exec-flag"
    assert judge("tool --exec", policy).rule == "exec-flag"
    assert judge("tool --execute=a", policy).verdict == "allow"
    assert judge("tool -- --exec=a", policy).verdict == "allow"  # an operand after --


def test_a_rule_without_reason_says_its_name():
    rule = Rule("mine", "ask", programs=("x",))
    assert rule.why == "ask by the command policy rule mine"


@pytest.mark.parametrize(
    ("config", "hint"),
    [
        (["x"], "command_policy must be a mapping"),
        ({"bogus": 1}, "unknown command_policy key 'bogus'"),
        ({"ask": "x*"}, "command_policy: expected a list of strings, not one string"),
        ({"deny": [1]}, "command_policy: expected a list of strings"),
        ({"default": "maybe"}, "command_policy: 'default' must be in"),
        ({"builtin": "no"}, "command_policy builtin must be true or false"),
        ({"disable": ["nope"]}, "command_policy: no built-in rule named 'nope'"),
        ({"rules": "x"}, "command_policy rules must be a list"),
        ({"rules": {"name": "x"}}, "command_policy rules must be a list"),
        ({"rules": [1]}, "a command_policy rule must be a mapping"),
        ({"rules": [{"name": "x", "verdict": "ask", "colour": 1}]}, "unknown command_policy rule key 'colour'"),
        ({"rules": [{"name": "x", "verdict": "maybe"}]}, "command_policy rule 'x': 'verdict' must be in"),
        ({"rules": [{"name": "x", "verdict": "ask", "text": "("}]}, "command_policy rule 'x': "),
        ({"rules": [{"name": "x", "verdict": "ask", "target": "moon"}]}, "command_policy rule 'x': 'target'"),
        ({"rules": [{"name": "x", "verdict": "ask", "where": "moon"}]}, "command_policy rule 'x': 'where'"),
        ({"rules": [{"name": "", "verdict": "ask"}]}, "command_policy rule '': "),
        ({"rules": [{"verdict": "ask"}]}, "command_policy rule '?': "),
        ({"rules": [{"name": "x", "verdict": "ask", "programs": "git"}]}, "command_policy rule 'x': expected a list"),
    ],
)  # fmt: skip
def test_bad_configuration_is_invalid_request(config, hint):
    with pytest.raises(HarnessError) as info:
        CommandPolicy.from_config(config)
    assert info.value.reason == "invalid-request"
    assert info.value.hint.startswith(hint), info.value.hint


def test_empty_configuration_is_the_built_in_policy():
    assert CommandPolicy.from_config(None) == CommandPolicy()
    assert CommandPolicy.from_config({}) == CommandPolicy()
    assert CommandPolicy.from_config({"default": "ask"}).default == "ask"


def test_every_configuration_key_reaches_the_policy():
    rule = {"name": "tf", "verdict": "deny", "programs": ["terraform"]}
    config = {
        "allow": ["make*"],
        "ask": ["git push*"],
        "deny": ["npm publish*"],
        "default": "ask",
        "rules": [rule],
        "builtin": False,
        "disable": ["other-user"],
    }
    assert CommandPolicy.from_config(config) == CommandPolicy(
        allow=("make*",),
        ask=("git push*",),
        deny=("npm publish*",),
        default="ask",
        rules=(Rule(**rule),),
        builtin=False,
        disable=("other-user",),
    )


# -- the parser's reading -----------------------------------------------------------------------


def programs(
    command: str, cwd: str | None = WORKSPACE
) -> list[tuple[str | None, tuple, str | None]]:
    return [(i.program, i.args, i.cwd) for i in parse(command, cwd=cwd, home=HOME).invocations]


def test_words_are_read_as_the_shell_reads_them():
    assert programs("r\\m 'a b' \"c $HOME\" $'\\x41' ~ ~/x ~bob") == [
        ("rm", ("a b", f"c {HOME}", "A", HOME, f"{HOME}/x", None), WORKSPACE)
    ]
    assert programs('echo "a\\"b" x\\ y') == [("echo", ('a"b', "x y"), WORKSPACE)]
    assert programs("echo ${HOME} ${HOME:-x} $UNSET $PWD") == [
        ("echo", (HOME, None, None, WORKSPACE), WORKSPACE)
    ]
    assert programs("A=1; B=$A; echo $B") == [("echo", ("1",), WORKSPACE)]
    assert programs("A=1 echo $A; echo $A") == [
        ("echo", ("1",), WORKSPACE),
        ("echo", (None,), WORKSPACE),
    ]
    assert programs("echo a~ ~/'x'") == [("echo", ("a~", f"{HOME}/x"), WORKSPACE)]


def test_cd_is_followed_and_stays_in_its_subshell():
    assert programs("cd src && make; (cd /x; a); b") == [
        ("cd", ("src",), WORKSPACE),
        ("make", (), f"{WORKSPACE}/src"),
        ("cd", ("/x",), f"{WORKSPACE}/src"),
        ("a", (), "/x"),
        ("b", (), f"{WORKSPACE}/src"),
    ]
    assert programs("cd; a")[-1] == ("a", (), HOME)
    assert programs("cd $X; a")[-1] == ("a", (), None)
    assert programs("cd -P ..; a")[-1] == ("a", (), "/srv")
    assert programs("cd x; a", cwd=None)[-1] == ("a", (), None)
    assert programs("cd /x; a", cwd=None)[-1] == ("a", (), "/x")


def test_wrappers_are_unwrapped():
    cases = {
        "env -u A -i B=1 -- make x": ("make", ("x",)),
        "nice -n 5 make": ("make", ()),
        "nohup make": ("make", ()),
        "time -p make": ("make", ()),
        "exec -a name make": ("make", ()),
        "sudo -u bob -E make": ("make", ()),
        "doas -u bob make": ("make", ()),
        "timeout -k 5 10 make": ("make", ()),
        "timeout --signal=KILL 10 make": ("make", ()),
        "xargs -n 1 -I {} make": ("make", (None,)),
        "xargs": ("echo", (None,)),
        "stdbuf -o L make": ("make", ()),
        "ionice -c 3 make": ("make", ()),
        "find . -exec make {} ;": ("make", (None,)),
        "find . -execdir make x +": ("make", ("x",)),
        "watch -n 1 make": ("make", ()),
        "eval make x": ("make", ("x",)),
        "su -c make": ("make", ()),
        "su --command=make": ("make", ()),
        "env -S 'make x'": ("make", ("x",)),
        "env --split-string=make": ("make", ()),
        "bash -o pipefail -c make": ("make", ()),
        "bash --norc -c make": ("make", ()),
    }
    for command, expected in cases.items():
        found = parse(command, cwd=WORKSPACE, home=HOME).invocations
        assert found[0].wrapper, command
        assert (found[-1].program, found[-1].args) == expected, (command, found)
        assert not found[-1].wrapper, command
    for plain in ("bash script.sh", "command -v make", "env", "sudo -l", "bash", "env A=1"):
        found = parse(plain, cwd=WORKSPACE, home=HOME).invocations
        assert len(found) == 1 and not found[0].wrapper, plain
    moved = parse("env -C sub make", cwd=WORKSPACE, home=HOME).invocations[-1]
    assert (moved.program, moved.cwd) == ("make", f"{WORKSPACE}/sub")


def test_pipelines_and_substitutions_feed():
    found = parse("a | b | c", cwd=WORKSPACE, home=HOME).invocations
    assert [sorted(i.feeders) for i in found] == [[], ["a"], ["a", "b"]]
    found = parse("x $(y) <(z)", cwd=WORKSPACE, home=HOME).invocations
    assert {i.program: sorted(i.feeders) for i in found} == {"x": ["y", "z"], "y": [], "z": []}
    found = parse("a; b", cwd=WORKSPACE, home=HOME).invocations
    assert [i.feeders for i in found] == [frozenset(), frozenset()]


def test_redirects_are_kept_on_the_command_and_a_group():
    found = parse("make > out 2>&1 < in", cwd=WORKSPACE, home=HOME).invocations
    assert found[0].redirects == ((">", "out"), (">&", "1"), ("<", "in"))
    found = parse("{ a; b; } >> log", cwd=WORKSPACE, home=HOME).invocations
    assert [i.redirects for i in found] == [((">>", "log"),), ((">>", "log"),)]


def test_nesting_has_a_limit():
    command = "make"
    for _ in range(8):
        command = f"bash -c {shlex.quote(command)}"
    parsed = parse(command, cwd=WORKSPACE, home=HOME)
    assert parsed.problems == ("commands nested too deep to read",)
    assert judge(command).rule == "unparseable"


def test_the_parser_is_imported_only_when_a_command_is_judged():
    code = (
        "import sys, harness_core.command_policy as p, harness_core.controller; "
        "print('tree_sitter' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- what each survivor of the mutation run showed untested (tools/mutation.py command_policy) --


def test_a_host_glob_and_rule_name_a_tool_without_a_command():
    mcp = PermissionRequest.for_tool("mcp__github__create_issue", kind="mcp")
    judged = CommandPolicy(deny=["mcp__github__*"]).judge(mcp, WORKSPACE)
    assert (judged.verdict, judged.command) == ("deny", "mcp__github__create_issue")
    # a rule about paths on a kind without any: no words, nothing to match, no error
    paths = CommandPolicy(rules=(Rule("etc", "ask", paths=("/etc/*",), kinds=("mcp",)),))
    assert paths.judge(mcp, WORKSPACE).verdict == "allow"
    # a file tool's name is the program a host rule can name
    no_write_tool = CommandPolicy(rules=(Rule("w", "deny", programs=("Write",), kinds=("write",)),))
    assert file_call("write", "notes.md", no_write_tool).rule == "w"


def test_a_file_read_is_not_a_write():
    writes_outside = Rule("writes", "ask", target="write", where="outside", kinds=("read", "write"))
    policy = CommandPolicy(rules=(writes_outside,), builtin=False)
    assert file_call("read", "/etc/hosts", policy).verdict == "allow"
    assert file_call("write", "/etc/hosts", policy).rule == "writes"


def test_a_shell_request_is_judged_by_its_command_even_with_a_path():
    request = PermissionRequest.for_tool(
        "Bash", kind="shell", command="rm -rf /", path="notes.md", input={"command": "rm -rf /"}
    )
    assert CommandPolicy().judge(request, WORKSPACE).rule == "delete-outside-workspace"


def test_the_home_directory_alone():
    assert file_call("write", "~").rule == "file-write-outside-workspace"
    home_itself = CommandPolicy(rules=(Rule("home", "ask", paths=("~",)),))
    assert judge("ls ~", home_itself).rule == "home"
    assert judge("ls ~/src", home_itself).verdict == "allow"


def test_a_workspace_at_the_root_or_named_with_a_trailing_letter():
    assert judge("rm -rf /srv/build", workspace="/").verdict == "allow"
    # /srv/wsX/* is inside /srv/wsX, and /srv/wsX/build too: nothing cut from the name
    for command in ("rm -rf *", "rm -rf build", "rm -rf /srv/wsX/build/*"):
        assert judge(command, workspace="/srv/wsX").verdict == "allow", command
    assert judge("rm -rf /srv/ws/build", workspace="/srv/wsX").verdict == "deny"


def test_the_root_glob_is_outside_a_workspace_that_is_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert judge("rm -rf /*", workspace=str(tmp_path)).rule == "delete-outside-workspace"


def test_a_single_dash_word_flag_of_a_host_rule():
    policy = CommandPolicy(
        rules=(Rule("find-delete", "ask", programs=("find",), flags=("-delete",)),)
    )
    assert judge("find . -name x -delete", policy).rule == "find-delete"
    assert judge("find . -name x", policy).verdict == "allow"


def test_options_are_not_operands_and_an_option_value_is_read_whole():
    # cp's last operand is the destination, not a trailing option
    assert judge("cp notes.txt /etc/motd -v").rule == "write-outside-workspace"
    # --name=value: the value is everything after the first "="
    assert judge("tool --secret=~/.aws/credentials=default").rule == "credential-store"
    assert judge("curl --output=/etc/cron.d/a=b https://x").rule == "write-outside-workspace"
    assert judge("wget https://x -O /etc/cron.d/job").rule == "write-outside-workspace"
    # an output option with nothing after it names no file
    assert judge("curl https://x -o").verdict == "allow"
    assert judge("curl -o").verdict == "allow"
    # dd writes its of= only; reading a disk into the workspace writes no device
    assert judge("dd if=/dev/sda of=disk.img bs=1M").verdict == "allow"


def test_a_rule_text_sees_the_command_words_without_their_quotes():
    policy = CommandPolicy(rules=(Rule("drop-c", "ask", programs=("psql",), text=r"-c\s+drop"),))
    assert judge("psql -c 'drop table t'", policy).rule == "drop-c"


def test_a_program_rule_judges_only_a_program_known_at_run_time():
    # a program's name is not a path: `where` on target program is about computed commands
    policy = CommandPolicy(rules=(Rule("prog", "ask", target="program", where="outside"),))
    assert judge("ls -la", policy).verdict == "allow"
    assert judge("$TOOL -x").rule == "computed-command"


def test_a_known_delete_target_is_not_unknown():
    # with the outside rule off, a delete of a known path outside is not "known at run time"
    policy = CommandPolicy(disable=("delete-outside-workspace",))
    assert judge("rm -rf /etc", policy).rule == "write-outside-workspace"
    assert judge('rm -rf "$X"', policy).rule == "delete-unknown-target"


def test_an_allow_has_no_reason_and_every_verdict_names_its_command():
    allowed = judge("make test", CommandPolicy(allow=["make *"]))
    assert (allowed.verdict, allowed.rule, allowed.reason) == ("allow", "allow-pattern", None)
    denied = judge("cd x && rm -rf /")
    assert (denied.rule, denied.command) == ("delete-outside-workspace", "rm -rf /")


def test_a_line_without_any_command_gets_the_default_with_its_reason():
    for line in ("# just a note", "X=1"):
        assert judge(line).verdict == "allow"
        judged = judge(line, CommandPolicy(default="deny"))
        assert (judged.verdict, judged.rule, judged.reason) == (
            "deny",
            "default",
            "not allowed by the command policy",
        )


def test_a_line_cut_short_says_so_first_even_when_what_is_left_does_not_parse():
    judged = judge_line("echo '" + "a" * 5000)
    assert (judged.verdict, judged.rule) == ("ask", "truncated")
