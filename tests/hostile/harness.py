"""Shared machinery of the hostile-input suite: run the installed ``qconsole`` in a subprocess
(never importing qconsole's internals, so the suite survives refactors), snapshot trees
without following links, build small VSQS and ddmq roots, and the checks every case makes."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

#: a hostile case that takes longer than this has hung
TIMEOUT_S = 20.0
#: address-space cap for every qconsole run: a YAML bomb must fail, not take the machine down
MEM_LIMIT = 2 << 30

QC = ".qconsole-"
HOST = hashlib.sha1(socket.gethostname().encode()).hexdigest()[:6]
DEAD_PID = 4194303  # above any pid in use here (pid_max is at most 4194304)
NOW_S = int(time.time())


def qconsole_bin() -> str:
    here = os.path.join(os.path.dirname(sys.executable), "qconsole")
    return here if os.path.exists(here) else (shutil.which("qconsole") or "qconsole")


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))
    os.setsid()  # a hung run is killed with its whole group


@dataclass
class Result:
    argv: list[str]
    code: int | None  # None: killed after TIMEOUT_S
    stdout: str
    stderr: str
    seconds: float

    @property
    def hung(self) -> bool:
        return self.code is None


def run(argv: list[str], *, env: dict[str, str] | None = None, stdin: bytes | None = None,
        timeout: float = TIMEOUT_S, cwd: str | None = None) -> Result:
    """``qconsole ARGV`` with a timeout; output decoded with surrogateescape (raw bytes kept)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("QCONSOLE_")}
    full_env.update(COLUMNS="200", PYTHONWARNINGS="ignore", TERM="dumb")
    full_env.update(env or {})
    started = time.monotonic()
    proc = subprocess.Popen([qconsole_bin(), *argv], stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env, cwd=cwd,
                            preexec_fn=_limits)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        code = None
    return Result(argv, code, out.decode("utf-8", "surrogateescape"), err.decode("utf-8", "surrogateescape"),
                  time.monotonic() - started)


# --------------------------------------------------------------------------- snapshots


def snapshot(top: str) -> dict[str, tuple]:
    """Every entry under ``top`` (links never followed): type, mode and content (or target)."""
    out: dict[str, tuple] = {}
    if not os.path.lexists(top):
        return out
    for dirpath, dirs, files in os.walk(top, followlinks=False):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, top)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", mode)
            elif stat.S_ISREG(st.st_mode):
                if st.st_size > 1 << 20:
                    h = hashlib.sha256()
                    with open(p, "rb") as fh:
                        for chunk in iter(lambda: fh.read(1 << 20), b""):
                            h.update(chunk)
                    out[rel] = ("file", mode, st.st_size, h.hexdigest())
                else:
                    with open(p, "rb") as fh:
                        out[rel] = ("file", mode, fh.read())
            else:
                out[rel] = ("special", stat.S_IFMT(st.st_mode), mode)
    return out


def diff(before: dict[str, tuple], after: dict[str, tuple]) -> list[str]:
    lines = []
    for k in sorted(set(before) | set(after)):
        if before.get(k) != after.get(k):
            lines.append(f"{k}: {str(before.get(k))[:80]} -> {str(after.get(k))[:80]}")
    return lines


# --------------------------------------------------------------------------- message inventory


def _is_vsqs(name: str) -> bool:
    head, dot, tail = name.partition(".")
    return head.isascii() and head.isdigit() and (not dot or (tail.isascii() and tail.isdigit()))


def _is_ddmq(name: str) -> bool:
    parts = name.split(".")
    if len(parts) not in (3, 4) or not parts[-1].startswith("ddmq"):
        return False
    uid = parts[-1][4:]
    return bool(uid) and uid.isascii() and uid.isalnum() and all(p.isascii() and p.isdigit() for p in parts[:-1])


def payload_of(path: str, layout: str) -> str:
    with open(path, "rb") as fh:
        data = fh.read()
    if layout == "ddmq":
        try:
            doc = json.loads(data)
            if isinstance(doc, dict) and "message" in doc:
                return str(doc["message"])
        except ValueError:
            pass
    return data.decode("utf-8", "replace")


def live_messages(root: str, layout: str) -> Counter:
    """payload -> number of live message files (regular files named as the layout names messages)."""
    found: Counter = Counter()
    try:
        queues = [e for e in os.scandir(root) if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
    except OSError:
        return found
    for q in queues:
        dirs = [q.path] + ([os.path.join(q.path, "work")] if layout == "ddmq" else [])
        for d in dirs:
            if os.path.islink(d) or not os.path.isdir(d):
                continue
            for e in os.scandir(d):
                ok = _is_ddmq(e.name) if layout == "ddmq" else _is_vsqs(e.name)
                if ok and e.is_file(follow_symlinks=False):
                    found[payload_of(e.path, layout)] += 1
    return found


def _msg_id(name: str, layout: str) -> str | None:
    if layout == "ddmq":
        return name.rsplit(".ddmq", 1)[1] if _is_ddmq(name) else None
    return name.partition(".")[0] if _is_vsqs(name) else None


def live_ids(root: str, layout: str, snap: dict | None = None) -> Counter:
    """id -> live files carrying it (from a snapshot when given, else from the disk)."""
    found: Counter = Counter()
    if snap is None:
        snap = {}
        for dirpath, dirs, files in os.walk(root, followlinks=False):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for f in files:
                p = os.path.join(dirpath, f)
                snap[os.path.relpath(p, root)] = ("link",) if os.path.islink(p) else ("file",)
    for rel, entry in snap.items():
        parts = rel.split(os.sep)
        if parts[0].startswith(".") or entry[0] != "file":
            continue
        if not (len(parts) == 2 or (layout == "ddmq" and len(parts) == 3 and parts[1] == "work")):
            continue
        mid = _msg_id(parts[-1], layout)
        if mid is not None:
            found[(parts[0], mid)] += 1
    return found


def trashed_messages(root: str, layout: str) -> Counter:
    found: Counter = Counter()
    top = os.path.join(root, ".qconsole", "trash")
    if os.path.islink(os.path.join(root, ".qconsole")) or os.path.islink(top) or not os.path.isdir(top):
        return found
    for dirpath, dirs, files in os.walk(top, followlinks=False):
        for f in files:
            p = os.path.join(dirpath, f)
            ok = _is_ddmq(f) if layout == "ddmq" else _is_vsqs(f)
            if ok and os.path.isfile(p) and not os.path.islink(p):
                found[payload_of(p, layout)] += 1
    return found


def qc_leftovers(root: str) -> set[str]:
    """qconsole temp/claim/journal names in the queue directories (and their work/)."""
    out = set()
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d != ".qconsole"]
        for f in files + dirs:
            if f.startswith(QC):
                out.add(os.path.relpath(os.path.join(dirpath, f), root))
    return out


# --------------------------------------------------------------------------- worlds


@dataclass
class World:
    """tmp/root (the queue root), tmp/outside (must never change), tmp/state (audit fallback)."""

    base: str
    layout: str
    root: str = ""
    outside: str = ""
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = os.path.join(self.base, "root")
        self.outside = os.path.join(self.base, "outside")
        state = os.path.join(self.base, "state")
        os.makedirs(state, exist_ok=True)
        self.env = {"HOME": state, "XDG_STATE_HOME": state}

    def p(self, *parts: str) -> str:
        return os.path.join(self.root, *parts)

    def o(self, *parts: str) -> str:
        return os.path.join(self.outside, *parts)

    def write(self, rel: str, data: bytes | str, mode: int | None = None) -> str:
        path = self.p(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(data.encode() if isinstance(data, str) else data)
        if mode is not None:
            os.chmod(path, mode)
        return path

    def link(self, rel: str, target: str) -> str:
        path = self.p(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.lexists(path):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        os.symlink(target, path)
        return path

    def fifo(self, rel: str) -> str:
        path = self.p(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.lexists(path):
            os.unlink(path)
        os.mkfifo(path)
        return path

    def run(self, *argv: str, **kw: Any) -> Result:
        env = dict(self.env)
        env.update(kw.pop("env", {}) or {})
        return run(list(argv), env=env, **kw)


SECRET = "TOPSECRET-outside-content"


def make_outside(w: World) -> None:
    """A sibling of the root with ordinary files, a 0600 file, a sub-directory, and files named
    like messages of both layouts (so a followed link would find something to act on)."""
    os.makedirs(w.o("sub"), exist_ok=True)
    files = {
        "notes.txt": (SECRET + "\n", 0o644),
        "secret.key": ("PRIVATE " + SECRET + "\n", 0o600),
        "sub/data.bin": ("\x00\x01binary " + SECRET, 0o640),
        "1700000000000000": ("outside-vsqs-" + SECRET, 0o644),
        "1700000000000001.1700000000000009": ("outside-vsqs-held-" + SECRET, 0o644),
        "999.17000000000000.ddmqdeadbeef": (json.dumps({"message": "outside-ddmq-" + SECRET}), 0o644),
        "1700000000.999.17000000000000.ddmqabad1dea": (json.dumps({"message": "outside-work-" + SECRET}), 0o644),
        "ddmq.yaml": (f"priority: 7\nsecret: {SECRET}\n", 0o644),
        "audit.log": ('{"action": "outside", "secret": "' + SECRET + '"}\n', 0o600),
    }
    for rel, (text, mode) in files.items():
        path = w.o(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text)
        os.chmod(path, mode)
    # a trash-shaped tree outside: what a symlinked .qconsole would lead to
    t = w.o("qc", "trash", "20200101T000000-abcdef", "files", "jobs")
    os.makedirs(os.path.join(t, "work"), exist_ok=True)
    for name in ("1700000000000002", "999.17000000000000.ddmqfeedface"):
        with open(os.path.join(t, name), "w") as fh:
            fh.write(json.dumps({"message": "outside-trash-" + SECRET}) if "ddmq" in name else "outside-trash-" + SECRET)
        os.chmod(os.path.join(t, name), 0o600)
    with open(w.o("qc", "trash", "20200101T000000-abcdef", "manifest.json"), "w") as fh:
        json.dump({"batch": "20200101T000000-abcdef", "created_at": 1.0, "action": "purge", "queue": "jobs",
                   "layout": "vsqs", "user": "x", "complete": True, "items": []}, fh)
    with open(w.o("qc", "audit.log"), "w") as fh:
        fh.write('{"action": "outside-audit", "secret": "' + SECRET + '"}\n')


def vsqs_id(i: int) -> str:
    return str(1_700_000_000_000_000 + i)


def ddmq_body(queue: str, text: str, prio: int, qn: str, uid: str, **extra: Any) -> bytes:
    doc = {"message": text, "queue": queue, "timeout": None, "id": uid, "priority": prio, "queue_number": qn,
           "filename": f"{prio}.{qn}.ddmq{uid}", "requeue": True, "requeue_counter": 0, "requeue_limit": None}
    doc.update(extra)
    return json.dumps(doc).encode()


def make_root(w: World) -> None:
    """Queues ``jobs`` and ``other``: in each one ready, one in flight (far future) and one
    expired message (VSQS and ddmq alike); payloads are unique strings."""
    os.makedirs(w.root, exist_ok=True)
    if w.layout == "vsqs":
        for q, base in (("jobs", 10), ("other", 20)):
            os.makedirs(w.p(q), exist_ok=True)
            w.write(f"{q}/{vsqs_id(base)}", f"{q}-ready")
            w.write(f"{q}/{vsqs_id(base + 1)}.{(NOW_S + 86400) * 1_000_000}", f"{q}-inflight")
            w.write(f"{q}/{vsqs_id(base + 2)}.{(NOW_S - 3600) * 1_000_000}", f"{q}-expired")
        return
    w.write("ddmq.yaml", "")
    for q, base in (("jobs", 10), ("other", 20)):
        os.makedirs(w.p(q, "work"), exist_ok=True)
        w.write(f"{q}/ddmq.yaml", "cleaned: 0\nmessage_timeout: 600\npriority: 999\nrequeue: true\nrequeue_prio: 0\n")
        qn = f"{NOW_S - 100}123456"
        w.write(f"{q}/999.{qn}.ddmq{base:032x}", ddmq_body(q, f"{q}-ready", 999, qn, f"{base:032x}"))
        u1, u2 = f"{base + 1:032x}", f"{base + 2:032x}"
        w.write(f"{q}/work/{NOW_S + 86400}.999.{qn}.ddmq{u1}", ddmq_body(q, f"{q}-inflight", 999, qn, u1))
        w.write(f"{q}/work/{NOW_S - 3600}.999.{qn}.ddmq{u2}", ddmq_body(q, f"{q}-expired", 999, qn, u2))


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    """One hostile situation: plant it, run one command, judge the outcome.

    ``codes``: acceptable exit codes. ``keep``: root-relative paths that must be exactly as
    planted afterwards (``"*"``: the whole root). ``conserve``: no payload lost (live or in the
    trash) and none live twice. ``forbid``: strings never printed. ``check``: anything else.
    """

    id: str
    layout: str
    argv: Callable[[World], list[str]] | list[str]
    plant: Callable[[World], None] | None = None
    codes: tuple[int, ...] = (2,)
    keep: tuple[str, ...] = ()
    conserve: bool = True
    forbid: tuple[str, ...] = (SECRET,)
    check: Callable[[World, Result, dict, dict], None] | None = None
    stdin: bytes | None = None
    timeout: float = TIMEOUT_S
    cls: str = ""
    #: lines stderr may hold: one, or a note per planted entry a listing leaves out (ls)
    stderr_lines: int = 1


def judge(case: Case, w: World, res: Result, before_root: dict, after_root: dict,
          before_out: dict, after_out: dict, before_live: Counter, before_trash: Counter) -> None:
    out = res.stdout + res.stderr
    assert not res.hung, f"hung: {res.argv} still running after {case.timeout} s"
    assert "Traceback" not in out, out[-2000:]
    assert "internal error" not in res.stderr, res.stderr
    assert res.code in case.codes, f"exit {res.code}, wanted {case.codes}\nstdout: {res.stdout[-800:]}\nstderr: {res.stderr[-800:]}"
    err_lines = res.stderr.count("\n")
    assert err_lines <= case.stderr_lines, f"{err_lines} lines on stderr:\n{res.stderr[-1500:]}"
    if res.code == 2:
        assert err_lines == 1 and res.stderr.startswith("qconsole: "), res.stderr
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, repr(out[-500:])
    for s in case.forbid:
        assert s not in out, f"printed {s!r}: {out[-500:]!r}"
    changed_outside = diff(before_out, after_out)
    assert not changed_outside, "outside the root changed:\n" + "\n".join(changed_outside[:20])
    if "*" in case.keep:
        ignore = (".qconsole", os.path.join(".qconsole", "audit.log"))
        d = diff({k: v for k, v in before_root.items() if k not in ignore},
                 {k: v for k, v in after_root.items() if k not in ignore})
        assert not d, "root changed:\n" + "\n".join(d[:20])
    else:
        for rel in case.keep:
            assert before_root.get(rel) == after_root.get(rel), (
                f"{rel} not left alone: {str(before_root.get(rel))[:100]} -> {str(after_root.get(rel))[:100]}")
    if case.conserve:
        live = live_messages(w.root, w.layout)
        trash = trashed_messages(w.root, w.layout)
        had = set(before_live) | set(before_trash)
        now = set(live) | set(trash)
        lost = had - now
        assert not lost, f"lost payloads: {sorted(lost)}"
        dup = {k: n for k, n in live.items() if n > 1 and before_live.get(k, 0) <= 1}
        assert not dup, f"payloads live twice: {dup}"
        new = {k for k in live if SECRET in k or k.startswith("outside")}
        assert not new, f"outside content became a message: {new}"
        ids_before, ids_after = live_ids(w.root, w.layout, before_root), live_ids(w.root, w.layout)
        twice = {i: n for i, n in ids_after.items() if n > 1 and ids_before.get(i, 0) <= 1}
        assert not twice, f"one message id live under two names: {twice}"
    new_left = qc_leftovers(w.root) - {k for k in before_root if os.path.basename(k).startswith(QC)}
    assert not new_left, f"qconsole leftovers: {sorted(new_left)}"
    if case.check:
        case.check(w, res, before_root, after_root)
