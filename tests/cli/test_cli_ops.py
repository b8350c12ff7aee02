"""The ops commands through the CLI: bad input gets one line and exit 2, nothing changes;
read-only refuses everything; confirmations; trash, audit and config output."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from qconsole.cli import app
from ops_inventory import tree

runner = CliRunner()


def run(*args: str, env: dict | None = None):
    return runner.invoke(app, list(args), env=env)


@pytest.fixture
def droot(ddmq_root):
    root, broker = ddmq_root
    broker.create_queue("dlq")
    for i in range(3):
        broker.publish("jobs", f"m{i}")
    broker.consume("jobs")
    return root


MUTATIONS = [
    ["publish", "jobs", "x"],
    ["requeue", "jobs", "--all"],
    ["delete", "jobs", "deadbeef", "--yes"],
    ["purge", "jobs", "--yes"],
    ["move", "jobs", "dlq", "--all"],
    ["config", "jobs", "priority=5"],
    ["create", "newq"],
    ["trash", "restore"],
    ["trash", "empty", "--yes"],
    ["recover"],
]


@pytest.mark.parametrize("cmd", MUTATIONS, ids=lambda c: " ".join(c[:2]))
def test_read_only_refuses_every_mutation(droot, cmd):
    before = tree(droot)
    res = run(*cmd, "-r", droot, "--read-only")
    assert res.exit_code == 2
    assert "read-only" in res.output
    res = run(*cmd, "-r", droot, env={"QCONSOLE_READ_ONLY": "1"})
    assert res.exit_code == 2 and "read-only" in res.output
    assert tree(droot) == before
    assert not os.path.exists(os.path.join(droot, ".qconsole", "audit.log"))


@pytest.mark.parametrize("cmd, needle", [
    (["publish", "nosuch", "x"], "no queue"),
    (["publish", "../etc", "x"], "bad queue name"),
    (["publish", "a/b", "x"], "bad queue name"),
    (["publish", "jobs", "x", "--priority", "-1"], "negative"),
    (["publish", "jobs", "x", "--vsqs-clock", "ms"], "VSQS"),
    (["requeue", "jobs", "nosuchid"], "no message"),
    (["requeue", "jobs"], "requeue what"),
    (["delete", "jobs", "nosuchid", "--yes"], "no message"),
    (["delete", "nosuch", "x", "--yes"], "no queue"),
    (["delete", "nosuch", "x"], "no queue"),  # said before asking for --yes
    (["move", "jobs", "jobs", "--all"], "same queue"),
    (["move", "jobs", "nosuch", "--all"], "no queue"),
    (["move", "jobs", "dlq"], "move what"),
    (["purge", "jobs", "--state", "writing", "--yes"], "purge --state"),
    (["config", "jobs", "priority=abc"], "non-negative integer"),
    (["config", "jobs", "requeue=maybe"], "true or false"),
    (["config", "jobs", "message_timeout=-5"], "non-negative integer"),
    (["create", "jobs"], "already exists"),
    (["create", ".hidden"], "bad queue name"),
    (["trash", "restore", "nosuch"], "trash is empty"),
    (["trash", "empty", "--older-than", "soon", "--yes"], "bad duration"),
])
def test_bad_input_one_line_exit_2_nothing_changed(droot, cmd, needle):
    before = tree(droot)
    res = run(*cmd, "-r", droot)
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert "Traceback" not in res.output
    assert tree(droot) == before


def test_delete_and_purge_refuse_without_terminal_or_yes(droot):
    before = tree(droot)
    for cmd in (["purge", "jobs"], ["delete", "jobs", "x"], ["trash", "empty"]):
        res = run(*cmd, "-r", droot)
        assert res.exit_code == 2 and "--yes" in res.output
    assert tree(droot) == before


def test_purge_keeps_queue_files_and_undo(droot):
    res = run("purge", "jobs", "--yes", "-r", droot)
    assert res.exit_code == 0, res.output
    assert "3 done" in res.output
    assert sorted(os.listdir(os.path.join(droot, "jobs"))) == ["ddmq.yaml", "work"]
    listing = run("trash", "list", "--json", "-r", droot)
    (batch,) = json.loads(listing.output)
    assert batch["count"] == 3 and batch["action"] == "purge" and batch["queue"] == "jobs"
    res = run("trash", "restore", batch["batch"], "-r", droot)
    assert res.exit_code == 0 and "3 done" in res.output
    assert len([n for n in os.listdir(os.path.join(droot, "jobs")) if ".ddmq" in n]) == 3
    assert os.listdir(os.path.join(droot, "jobs", "work")) == []  # in-flight came back ready


def test_purge_with_yes_lists_the_queue_once(droot, monkeypatch):
    """Nothing to confirm, nothing to count first: a purge of 100k messages lists them once."""
    from qconsole.backends.fs.root import FileBackend

    calls = []
    real = FileBackend.scan_queue
    monkeypatch.setattr(FileBackend, "scan_queue", lambda self, *a, **k: calls.append(a) or real(self, *a, **k))
    res = run("purge", "jobs", "--yes", "-r", droot)
    assert res.exit_code == 0 and "3 done" in res.output
    assert len(calls) == 1


def test_no_trash_really_unlinks_and_trash_empty(droot):
    assert run("purge", "jobs", "--state", "ready", "--yes", "-r", droot).exit_code == 0
    assert run("purge", "jobs", "--no-trash", "--yes", "-r", droot).exit_code == 0
    assert len(json.loads(run("trash", "list", "--json", "-r", droot).output)) == 1
    assert run("trash", "empty", "--older-than", "1d", "--yes", "-r", droot).exit_code == 0
    assert len(json.loads(run("trash", "list", "--json", "-r", droot).output)) == 1
    assert run("trash", "empty", "--yes", "-r", droot).exit_code == 0
    assert "empty" in run("trash", "list", "-r", droot).output


def test_audit_log_records_every_mutation(droot, tmp_path):
    run("publish", "jobs", "hello", "-r", droot)
    run("requeue", "jobs", "--all", "-r", droot)
    run("publish", "nosuch", "x", "-r", droot)  # refused before the audit: validation error
    res = run("audit", "--json", "-r", droot)
    lines = [json.loads(x) for x in res.output.splitlines()]
    assert [r["action"] for r in lines] == ["publish", "requeue"]
    for r in lines:
        assert {"time", "user", "host", "pid", "root", "queue", "action", "outcome", "count"} <= set(r)
        assert r["time"].endswith("Z") and r["root"] == droot
    assert lines[1]["count"] == 1 and lines[1]["outcome"] == "ok"
    assert "requeue jobs" in run("audit", "--tail", "1", "-r", droot).output
    other = str(tmp_path / "elsewhere.log")
    run("publish", "jobs", "x", "-r", droot, "--audit-log", other)
    assert json.loads(open(other).read())["action"] == "publish"


def test_audit_falls_back_to_state_dir_when_root_not_writable(droot, tmp_path, monkeypatch):
    from qconsole.ops import audit

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setattr(audit, "_writable_dir", lambda p: False)
    assert audit.default_path(droot) == str(tmp_path / "state" / "qconsole" / "audit.log")


def test_a_huge_audit_log_is_read_from_its_end_only(droot, tmp_path, monkeypatch):
    """A log larger than the read window (a planted sparse file of gigabytes): its last entries
    come back, the cut is said, and no more than the window is read."""
    from qconsole.ops import audit

    run("publish", "jobs", "first", "-r", droot)
    log = os.path.join(droot, ".qconsole", "audit.log")
    with open(log, "r+b") as fh:
        fh.truncate(3 << 30)  # 3 GiB of nothing after the first entry: sparse, costs no disk
        fh.seek(0, os.SEEK_END)
        fh.write(b"\n")
    run("publish", "jobs", "last", "-r", droot)
    monkeypatch.setattr(audit, "READ_WINDOW", 1 << 20)
    records = audit.read(log, tail=2, root=droot)
    assert len(records) == 2 and records[-1]["action"] == "publish"
    records = audit.read(log, root=droot)
    assert "earlier entries not read" in records[0]["raw"] and records[-1]["action"] == "publish"
    assert sum(len(r.get("raw", "")) for r in records) < 2 << 20


@pytest.mark.parametrize("args", [("publish", "jobs", "x", "--count", "9" * 23), ("audit", "--tail", "9" * 23)])
def test_absurd_counts_are_refused_in_one_line(droot, args):
    res = run(*args, "-r", droot)
    assert res.exit_code == 2 and "internal error" not in res.output, res.output


def test_publish_refuses_a_payload_past_its_cap_from_stdin_and_from_a_file(droot, tmp_path, monkeypatch):
    """`cat /dev/zero | qconsole publish q --file -` read without end (MemoryError)."""
    from qconsole.cli import ops as cli_ops

    monkeypatch.setattr(cli_ops, "MAX_PUBLISH_BYTES", 1000)
    before = sorted(os.listdir(os.path.join(droot, "jobs")))
    res = runner.invoke(app, ["publish", "jobs", "--file", "-", "-r", droot], input=b"x" * 5000)
    assert res.exit_code == 2 and "more than" in res.output
    big = tmp_path / "big"
    big.write_bytes(b"y" * 5000)
    res = run("publish", "jobs", "--file", str(big), "-r", droot)
    assert res.exit_code == 2 and "5000 bytes" in res.output
    assert sorted(os.listdir(os.path.join(droot, "jobs"))) == before


def test_config_shows_sources_and_sets(droot):
    res = run("config", "-r", droot)
    assert res.exit_code == 0 and "priority" in res.output and "(default)" in res.output
    assert run("config", "jobs", "priority=7", "extra=hello", "-r", droot).exit_code == 0
    doc = json.loads(run("config", "jobs", "--json", "-r", droot).output)
    assert doc["priority"] == {"value": 7, "source": "queue"}
    assert doc["extra"]["value"] == "hello"
    assert run("config", "requeue_prio=3", "-r", droot).exit_code == 0  # no QUEUE: the root's file
    doc = json.loads(run("config", "dlq", "--json", "-r", droot).output)
    assert doc["requeue_prio"]["source"] == "queue"  # ddmq wrote defaults into the queue file
    assert "requeue_prio: 3" in open(os.path.join(droot, "ddmq.yaml")).read()


def test_config_keeps_values_in_view_beside_a_very_long_key(droot):
    """One 5,000-character key (config accepts it) padded every line to its width: all the
    values sat 5,000 columns to the right. The usual keys stay aligned, the long one runs on."""
    long_key = "k" * 5000
    assert run("config", "jobs", f"{long_key}=1", "-r", droot).exit_code == 0
    res = run("config", "jobs", "-r", droot)
    assert res.exit_code == 0
    lines = {line.split()[0]: line for line in res.output.splitlines()}
    assert len(lines["priority"]) < 80 and lines["priority"].split()[1:] == lines["priority"][24:].split()
    assert lines[long_key].startswith(long_key + "  1")


def test_vsqs_config_says_no_settings(vsqs_root):
    root, manager = vsqs_root
    manager.get_queue("jobs")
    res = run("config", "jobs", "priority=1", "-r", root)
    assert res.exit_code == 2 and "no settings" in res.output
    res = run("publish", "jobs", "x", "--priority", "3", "-r", root)
    assert res.exit_code == 2 and "ddmq option" in res.output


def test_publish_from_stdin_and_count(vsqs_root):
    root, manager = vsqs_root
    manager.get_queue("jobs")
    res = runner.invoke(app, ["publish", "jobs", "--file", "-", "--count", "3", "-r", root], input=b"payload")
    assert res.exit_code == 0, res.output
    files = sorted(os.listdir(os.path.join(root, "jobs")))
    assert len(files) == 3 and all(len(f) == 16 for f in files)
    assert open(os.path.join(root, "jobs", files[0]), "rb").read() == b"payload"


def test_permission_denied_is_one_line(droot, tmp_path):
    from unprivileged import MISSING, run_qconsole

    if MISSING:
        pytest.skip(MISSING)
    qdir = os.path.join(droot, "jobs")
    before = tree(droot)
    os.chmod(qdir, 0o555)
    try:
        res = run_qconsole("publish", "jobs", "x", "-r", droot, "--audit-log", str(tmp_path / "audit.log"))
    finally:
        os.chmod(qdir, 0o755)
    assert res.returncode == 2 and "ermission denied" in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr
    assert tree(droot) == before


def test_permission_denied_simulated_is_one_line(droot, monkeypatch):
    """As root the bits above are ignored: simulate EACCES on create (a sticky/group dir)."""
    from qconsole.backends.fs import safety

    def denied(self, path, gid=None, mode=0o666):
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(safety.Confined, "create_exclusive", denied)
    monkeypatch.setattr(safety.InDir, "create", lambda self, name, _data: denied(self, name))  # (bulk writes)
    before = tree(droot)
    for cmd in (["publish", "jobs", "x"], ["config", "jobs", "priority=3"], ["requeue", "jobs", "--all"]):
        res = run(*cmd, "-r", droot)
        assert res.exit_code == 2 and "permission denied" in res.output.lower(), res.output
        assert "Traceback" not in res.output
        assert tree(droot) == before  # requeue put its claim back


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_create_with_explicit_layout_makes_a_new_root_the_real_client_reads(tmp_path, layout):
    from peers import ddmq_module, vsqs_manager

    root = str(tmp_path / "fresh")
    res = run("create", "jobs", "--layout", layout, "-r", root)
    assert res.exit_code == 0, res.output
    assert run("publish", "jobs", "hi", "-r", root).exit_code == 0
    if layout == "ddmq":
        msg = ddmq_module().broker(root).consume("jobs")
        assert msg.message == "hi"
    else:
        manager = vsqs_manager(root)
        try:
            _mid, body = manager.get_queue("jobs").receive(timeout=2)
        finally:
            manager.close()
        assert body == b"hi"


@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_create_never_turns_a_root_of_the_other_layout(tmp_path, layout):
    """`create newq --layout ddmq` in a VSQS root wrote a root ddmq.yaml: the root then read as
    ddmq, its VSQS queues vanished from stats and check, and changes to them failed."""
    from peers import ddmq_broker, vsqs_manager

    root = str(tmp_path / "r")
    other = "vsqs" if layout == "ddmq" else "ddmq"
    if other == "ddmq":
        ddmq_broker(root, "jobs").publish("jobs", "kept", clean=False)
    else:
        manager = vsqs_manager(root)
        try:
            manager.get_queue("jobs").publish(b"kept")
        finally:
            manager.close()
    before = tree(root)
    res = run("create", "newq", "--layout", layout, "-r", root)
    assert res.exit_code == 2 and f"is a {other} root" in res.output, res.output
    assert tree(root) == before
    stats = json.loads(run("stats", root, "--json").output)
    assert stats["layout"] == other and [q["name"] for q in stats["queues"]] == ["jobs"]
    assert run("create", "newq", "-r", root).exit_code == 0  # in the root's own layout


def test_create_refuses_to_make_a_root_in_read_only_mode(tmp_path):
    root = str(tmp_path / "fresh")
    res = run("create", "jobs", "--layout", "ddmq", "-r", root, "--read-only")
    assert res.exit_code == 2
    assert not os.path.exists(root)


def test_an_explicit_audit_log_in_a_missing_directory_makes_no_directories(droot, tmp_path):
    """``--audit-log /nonexist/x/y`` made /nonexist/x (mkdir -p) outside any root (review): only
    the operator's own state directory is made; a mistyped one gets the warning instead."""
    log = tmp_path / "nonexist" / "x" / "y"
    res = run("publish", "jobs", "x", "-r", droot, "--audit-log", str(log))
    assert res.exit_code == 0 and "audit log" in res.output and "No such file or directory" in res.output
    assert not (tmp_path / "nonexist").exists()


def test_audit_shows_a_head_of_an_unparsable_line_not_the_whole_megabyte(droot):
    run("publish", "jobs", "x", "-r", droot)
    with open(os.path.join(droot, ".qconsole", "audit.log"), "a") as fh:
        fh.write("[" * 500_000 + "\n")
    out = run("audit", "-r", droot).output
    line = next(x for x in out.splitlines() if x.startswith("(unparsable)"))
    assert len(line) < 300 and "500000 characters" in line, line[:400]
    assert any("publish" in x for x in out.splitlines())


@pytest.mark.parametrize("name", ["ddmq.yaml", "notes"])
def test_create_over_something_that_is_no_queue_says_so(droot, name):
    """`create ddmq.yaml` said only 'ddmq.yaml: File exists' (review)."""
    if name == "notes":
        os.makedirs(os.path.join(droot, name))
    before = tree(droot)
    res = run("create", name, "-r", droot)
    assert res.exit_code == 2 and f"'{name}' is in {droot} already, and is not a ddmq queue" in res.output, res.output
    assert tree(droot) == before


@pytest.mark.parametrize("name", ["a\nb", "a\x1bb", "a\tb", "a\x7fb", "\u200b", "a\u202eb", " ", " a", "a "],
                         ids=["newline", "esc", "tab", "del", "zwsp", "bidi", "blank", "lead", "trail"])
@pytest.mark.parametrize("layout", ["ddmq", "vsqs"])
def test_create_refuses_a_name_that_would_not_show_as_itself(tmp_path, droot, name, layout):
    """`create $'a\\nb'` (or ESC, a tab, a zero-width space, a bidi override, ' ', 'a ') made the
    queue: a name ls --ids cannot give back, that tables and logs show escaped, or that reads
    as another queue ('a ' as 'a'). Refused in one line, nothing made, in an existing root or a
    new one; a directory already named so is still a queue every command reaches."""
    root = droot if layout == "ddmq" else str(tmp_path / "v")
    if layout == "vsqs":
        os.makedirs(os.path.join(root, "jobs"))
    before = tree(root)
    res = run("create", name, "-r", root)
    assert res.exit_code == 2 and "bad queue name" in res.output and len(res.output.splitlines()) == 1, res.output
    assert tree(root) == before
    newroot = str(tmp_path / "new")
    res = run("create", name, "-r", newroot, "--layout", layout)
    assert res.exit_code == 2 and "bad queue name" in res.output and not os.path.exists(newroot), res.output
    os.makedirs(os.path.join(root, name, "work"))  # made by someone else: still a queue
    if layout == "ddmq":
        with open(os.path.join(root, name, "ddmq.yaml"), "w") as fh:
            fh.write("priority: 5\n")
    assert run("publish", name, "x", "-r", root).exit_code == 0
    assert run("stats", "-r", root, "--json").exit_code == 0


@pytest.fixture
def asked(monkeypatch):
    """The questions a command asks (each answered yes), as a terminal would show them."""
    from qconsole.cli import ops as cli_ops

    questions: list[str] = []
    monkeypatch.setattr(cli_ops, "_confirm", lambda question, yes: None if yes or question is None else questions.append(question))
    return questions


def test_delete_checks_its_ids_before_asking(droot, asked):
    """`delete jobs nosuchid` asked 'Delete 1 message(s) from jobs to the trash?' and only after
    a yes said 'no message'; a repeated id was counted twice in the question."""
    before = tree(droot)
    res = run("delete", "jobs", "nosuchid", "-r", droot)
    assert res.exit_code == 2 and "no message 'nosuchid'" in res.output
    assert asked == [] and tree(droot) == before
    ready = next(n for n in os.listdir(os.path.join(droot, "jobs")) if ".ddmq" in n)
    mid = ready.rpartition(".ddmq")[2]
    res = run("delete", "jobs", mid, mid, "-r", droot)
    assert res.exit_code == 0 and "delete jobs: 1 done" in res.output, res.output
    assert asked == ["Delete 1 message(s) from jobs to the trash?"]


def test_delete_queue_refuses_before_asking_where_it_cannot_delete(droot, asked):
    """On a ddmq root `delete-queue dlq` asked 'Delete queue dlq?', then said deleting queues is
    not supported."""
    before = tree(droot)
    res = run("delete-queue", "dlq", "-r", droot)
    assert res.exit_code == 2 and "not supported" in res.output and "RSMQ" in res.output
    assert asked == [] and tree(droot) == before


def test_audit_counts_what_each_change_counted(droot):
    """`qconsole audit` showed 'trash empty -  2 msg' after emptying two batches of 4 messages,
    and 'create newq  1 msg' for a queue made: the count is of batches there, of no message here."""
    assert run("create", "newq", "-r", droot).exit_code == 0
    assert run("purge", "jobs", "--state", "ready", "--yes", "-r", droot).exit_code == 0
    assert run("purge", "jobs", "--yes", "-r", droot).exit_code == 0
    assert run("trash", "empty", "--yes", "-r", droot).exit_code == 0
    lines = run("audit", "-r", droot).output.splitlines()
    create = next(x for x in lines if " create newq" in x)
    assert "msg" not in create, create
    empty = next(x for x in lines if " trash empty" in x)
    assert "2 batch(es)" in empty and "msg" not in empty, empty
    purge = next(x for x in lines if " purge jobs" in x)
    assert "2 msg" in purge, purge


def test_help_says_where_purged_messages_go_and_which_states_move_takes():
    """`purge --help` said only 'Remove every message of a queue' (delete's said 'into the trash
    unless --no-trash; undo with qconsole trash restore'); `move --help` named no state."""
    purge = " ".join(run("purge", "--help").output.split())
    assert "into the trash unless --no-trash" in purge and "qconsole trash restore" in purge
    move = " ".join(run("move", "--help").output.split())
    assert "(ready, inflight, expired, delayed)" in move


def test_trash_empty_says_what_goes_and_asks_nothing_of_an_empty_trash(droot, asked):
    """`trash empty` asked 'Empty the trash?' of an empty trash, and of a full one without
    saying how much would go for good."""
    assert run("trash", "empty", "-r", droot).exit_code == 0
    assert asked == []
    assert run("purge", "jobs", "--state", "ready", "--yes", "-r", droot).exit_code == 0
    held = json.loads(run("trash", "list", "--json", "-r", droot).output)
    assert len(held) == 1
    assert run("trash", "empty", "--older-than", "1d", "-r", droot).exit_code == 0
    assert asked == []  # nothing that old
    assert run("trash", "empty", "-r", droot).exit_code == 0
    assert asked == [f"Empty the trash: 1 batch(es), {held[0]['count']} message(s), gone for good?"]
    assert json.loads(run("trash", "list", "--json", "-r", droot).output) == []


def test_recover_takes_the_root_as_stats_does(tmp_path):
    """`qconsole recover ROOT` (what an operator types after `stats ROOT`) was refused with
    'unexpected extra argument'; it takes the root positionally or with --root, not both."""
    root = tmp_path / "v"
    (root / "jobs").mkdir(parents=True)
    (root / "jobs" / "1795713694746677").write_bytes(b"x")
    res = run("recover", str(root))
    assert res.exit_code == 0 and "recover: 0 put back" in res.output, res.output
    res = run("recover", str(root), "-r", str(tmp_path / "other"))
    assert res.exit_code == 2 and "two roots given" in res.output
