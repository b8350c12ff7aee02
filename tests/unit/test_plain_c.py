"""A hostile review of the C reader of plain small queues (backends/fs/_plain.c).

Whenever the C module answers (not None) it must give exactly what the exact Python path
gives; whatever a queue directory holds it must not leak a descriptor or a reference, nor
read anything outside the root. These tests feed it what anyone who can write a queue can
plant: odd names, FIFOs, sub-directories, symlinks, ddmq's own files as the wrong kind.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qconsole.backends.ddmq import layout as ddmq
from qconsole.backends.fs import detect, listing
from qconsole.backends.vsqs import layout as vsqs
from qconsole.errors import RootError

NOW = 1_700_000_000.0
CUTOFF = int(NOW)


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("where", ["queue", "work"])
def test_ddmq_plain_closes_both_directories_when_a_listing_stops_early(c_module, tmp_path, where):
    """A listing the reader stops (a name that is not plain, in the queue directory or in work/,
    after both were opened; or a getdents error such as NFS's ESTALE) once left work/'s
    descriptor open: one descriptor leaked per count of that queue, until a long-running
    console hit 'Too many open files'. (Session 23's reader parses as it lists, with no cap
    on the names short of 4M ids: a stop is now a name that is not plain.)"""
    q = tmp_path / "q"
    (q / "work").mkdir(parents=True)
    (q / "ddmq.yaml").write_text("")
    for i in range(300):
        (q / f"1.17000000001.ddmq{i}").write_text("")
    (q / "notes.txt" if where == "queue" else q / "work" / "notes.txt").write_text("")
    before = _open_fds()
    for _ in range(3):
        assert c_module.ddmq_plain(str(q), 10**12, 20, 64, 11, CUTOFF) is None
    assert _open_fds() == before


# -- the C reader's answers equal the exact path's, on random hostile queue directories --------

def _digits(draw, width: int, lead_zero: bool = False) -> str:
    first = "0" if lead_zero or width == 1 and draw(st.booleans()) else str(draw(st.integers(1, 9)))
    return first + "".join(str(draw(st.integers(0, 9))) for _ in range(width - 1))


@st.composite
def vsqs_entry(draw, width: int) -> tuple[bytes, str]:
    """(name, kind of entry): mostly the usual names of one id width, some just off a rule."""
    w = draw(st.sampled_from([width] * 6 + [width - 1 if width > 1 else 2, width + 1, 20, 21]))
    z = draw(st.integers(0, 15)) == 0  # a leading zero now and then
    i = _digits(draw, w, z)
    shape = draw(st.sampled_from(["ready"] * 4 + ["new", "held", "held", "held-w", "odd"]))
    if shape == "ready":
        name = i
    elif shape == "new":
        name = f"{i}.new"
    elif shape == "held":
        name = f"{i}.{_digits(draw, w, draw(st.integers(0, 15)) == 0)}"
    elif shape == "held-w":  # a deadline of another width
        name = f"{i}.{_digits(draw, draw(st.sampled_from([1, 3, w + 1, 21])))}"
    else:
        name = draw(st.sampled_from([f"{i}.", f".{i}", f"{i}.new.1", f"{i}..1", f"+{i}", f" {i}", f"{i}\n",
                                     f"{i}.NEW", "\u0661" * w, f"{i}.{i}.{i}", ".qconsole-tmp", "-1", "new"]))
    kind = draw(st.sampled_from(["file"] * 12 + ["fifo", "dir", "link-in", "link-out", "dangling"]))
    raw = name.encode()
    if draw(st.integers(0, 30)) == 0:
        raw = raw + b"\xff"  # no UTF-8
    return raw, kind


def _plant(d: bytes, name: bytes, kind: str, outside: bytes) -> None:
    path = os.path.join(d, name)
    if os.path.lexists(path):
        return
    if kind == "file":
        open(path, "w").close()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "link-in":
        os.symlink(b".", path)
    elif kind == "link-out":
        os.symlink(outside, path)
    else:
        os.symlink(b"nowhere", path)


def _both_ways(module, root: str, names: list[str]):
    """count_many with the C reader, count_many in Python, and scan_queue per queue."""
    assert listing.plain_c is not None
    with_c = module.count_many(root, names, NOW)
    real = listing.plain_c
    listing.plain_c = None
    try:
        without = module.count_many(root, names, NOW)
    finally:
        listing.plain_c = real
    exact = [module.scan_queue(root, n, NOW) for n in names]
    return with_c, without, exact


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data(), st.lists(st.sampled_from([1, 3, 13, 16, 20]), min_size=1, max_size=3))
def test_vsqs_count_many_with_c_equals_the_exact_path(c_module, data, widths):
    base = tempfile.mkdtemp(prefix="qc-plain-v-")
    try:
        root, outside = os.path.join(base, "root"), os.path.join(base, "outside").encode()
        os.makedirs(root)
        os.makedirs(os.path.join(outside, b"1700000000000009"))
        open(os.path.join(outside, b"1700000000000001"), "w").close()
        names = []
        for qi, width in enumerate(widths):
            q = os.path.join(root.encode(), b"q%d" % qi)
            os.mkdir(q)
            names.append(f"q{qi}")
            for name, kind in data.draw(st.lists(vsqs_entry(width), max_size=12)):
                _plant(q, name, kind, outside)
        with_c, without, exact = _both_ways(vsqs, root, names)
    finally:
        shutil.rmtree(base)
    assert with_c == exact
    assert without == exact


@st.composite
def ddmq_entry(draw, clean: bool = False) -> tuple[bytes, str, bool]:
    """(name, kind, in work/?): message names with every field at and just past its limit."""
    in_work = draw(st.booleans())
    if clean or draw(st.integers(0, 2)):  # mostly the usual names
        prio, qn = draw(st.sampled_from(["0", "1", "10", "007"])), draw(st.sampled_from(["17000000001", "1"]))
        uid = draw(st.text("0123456789abcdefAB", min_size=1, max_size=6))
        dl = draw(st.sampled_from(["1699999999", "1700000000", "1700000001", "9" * 11]))
        return (f"{dl}.{prio}.{qn}.ddmq{uid}" if in_work else f"{prio}.{qn}.ddmq{uid}").encode(), "file", in_work
    prio = draw(st.sampled_from(["0", "1", "10", "007", "9" * 20, "9" * 21, ""]))
    qn = draw(st.sampled_from(["1", "1700000000", "17000000001", "1699999999123", "1" * 20, "1" * 21, "x"]))
    uid = draw(st.sampled_from(["a", "ab", "AB", "abc", "a" * 64, "a" * 65, "a-b", "", "\u00e9"]))
    dl = draw(st.sampled_from(["1699999999", "1700000000", "1700000001", "0", "9" * 11, "1" + "0" * 11, ""]))
    if draw(st.integers(0, 7)) == 0:
        name = draw(st.sampled_from(["ddmq.yaml", "ddmq.yaml.intermediate", "ddmq.yaml.example", "work",
                                     "ddmq.yaml.exampl", ".qconsole-x", "notes", "1.2.ddmq", "a.1.ddmqab"]))
    elif in_work:
        name = f"{dl}.{prio}.{qn}.ddmq{uid}"
    else:
        name = f"{prio}.{qn}.ddmq{uid}"
    kind = draw(st.sampled_from(["file"] * 6 + ["fifo", "dir", "link-in", "link-out", "dangling"]))
    return name.encode(), kind, in_work


@st.composite
def ddmq_queue(draw):
    if draw(st.booleans()):  # a queue of the usual names only (plain unless an id repeats)
        return "file", "dir", draw(st.lists(ddmq_entry(clean=True), max_size=10)), False
    config = draw(st.sampled_from(["file"] * 6 + ["none", "dir", "fifo", "dangling", "link-file"]))
    work = draw(st.sampled_from(["dir"] * 6 + ["none", "file", "link-out", "link-in"]))
    entries = draw(st.lists(ddmq_entry(), max_size=10))
    # one id in the queue and in work/ (a consume during the listing), now and then
    shared = draw(st.integers(0, 5)) == 0
    return config, work, entries, shared


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(ddmq_queue(), min_size=1, max_size=3))
def test_ddmq_count_many_with_c_equals_the_exact_path(c_module, queues):
    base = tempfile.mkdtemp(prefix="qc-plain-d-")
    try:
        root, outside = os.path.join(base, "root"), os.path.join(base, "outside").encode()
        os.makedirs(os.path.join(outside, b"work"))
        open(os.path.join(outside, b"1700000005.1.17000000001.ddmqzz"), "w").close()
        open(os.path.join(outside, b"work", b"1700000005.1.17000000001.ddmqzz"), "w").close()
        os.makedirs(root)
        open(os.path.join(root, "ddmq.yaml"), "w").close()
        names = []
        for qi, (config, work, entries, shared) in enumerate(queues):
            q = os.path.join(root.encode(), b"q%d" % qi)
            os.mkdir(q)
            names.append(f"q{qi}")
            c = os.path.join(q, b"ddmq.yaml")
            if config == "file":
                open(c, "w").close()
            elif config != "none":
                _plant(q, b"ddmq.yaml", {"link-file": "link-out"}.get(config, config),
                       os.path.join(outside, b"1700000005.1.17000000001.ddmqzz"))
            w = os.path.join(q, b"work")
            if work == "dir":
                os.mkdir(w)
            elif work == "file":
                open(w, "w").close()
            elif work == "link-out":
                os.symlink(os.path.join(outside, b"work"), w)
            elif work == "link-in":
                os.mkdir(os.path.join(q, b".w"))
                os.symlink(b".w", w)
            wdir = os.path.join(q, b"work") if work == "dir" else q
            for name, kind, in_work in entries:
                _plant(wdir if in_work else q, name, kind, outside)
            if shared:
                open(os.path.join(q, b"1.17000000001.ddmqs1"), "w").close()
                open(os.path.join(wdir, b"1700000001.1.17000000001.ddmqs1"), "w").close()
        with_c, without, exact = _both_ways(ddmq, root, names)
    finally:
        shutil.rmtree(base)
    assert with_c == exact
    assert without == exact


# -- a root's listing: ddmq's queue names and layout detection, with C and without ------------

ROOT_ENTRIES = ["queue", "queue", "config-dir", "config-fifo", "config-dangling", "config-link-file",
                "config-link-outside", "work-link", "work-file", "no-work", "no-config", "link-to-queue",
                "dangling", "file", "fifo", "vsqs-queue", "empty-dir"]


def _root_entry(root: bytes, name: bytes, kind: str, outside: bytes) -> None:
    path = os.path.join(root, name)
    if kind == "file":
        open(path, "w").close()
        return
    if kind == "fifo":
        os.mkfifo(path)
        return
    if kind == "dangling":
        os.symlink(b"nowhere", path)
        return
    if kind == "link-to-queue":
        os.symlink(outside, path)
        return
    os.mkdir(path)
    if kind == "vsqs-queue":
        open(os.path.join(path, b"1700000000000001"), "w").close()
        return
    if kind == "empty-dir":
        return
    if kind != "no-work":
        if kind == "work-link":
            os.symlink(os.path.join(outside, b"work"), os.path.join(path, b"work"))
        elif kind == "work-file":
            open(os.path.join(path, b"work"), "w").close()
        else:
            os.mkdir(os.path.join(path, b"work"))
    config = os.path.join(path, b"ddmq.yaml")
    if kind in ("queue", "no-work", "work-link", "work-file"):
        open(config, "w").close()
    elif kind == "config-dir":
        os.mkdir(config)
    elif kind == "config-fifo":
        os.mkfifo(config)
    elif kind == "config-dangling":
        os.symlink(b"nowhere", config)
    elif kind == "config-link-file":
        os.symlink(os.path.join(outside, b"ddmq.yaml"), config)
    elif kind == "config-link-outside":
        os.symlink(outside, config)  # a directory


root_entry_name = st.one_of(st.sampled_from([b"a", b"b", b"lost+found", b".hidden", b"work", b"ddmq.yaml",
                                             b"q\n1", b"\xff\xfe", b"x" * 255]),
                            st.binary(min_size=1, max_size=6).filter(lambda b: b"/" not in b and b"\0" not in b
                                                                     and b not in (b".", b"..")))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.dictionaries(root_entry_name, st.sampled_from(ROOT_ENTRIES), max_size=8), st.booleans())
def test_root_listing_and_detection_with_c_equal_python(c_module, entries, config_at_root):
    base = tempfile.mkdtemp(prefix="qc-plain-r-")
    try:
        root, outside = os.path.join(base, "root"), os.path.join(base, "outside").encode()
        os.makedirs(os.path.join(outside, b"work"))
        open(os.path.join(outside, b"ddmq.yaml"), "w").close()
        os.mkdir(root)
        if config_at_root:
            open(os.path.join(root, "ddmq.yaml"), "w").close()
        for name, kind in entries.items():
            if not os.path.lexists(os.path.join(root.encode(), name)):
                _root_entry(root.encode(), name, kind, outside)
        answers = []
        for reader in (c_module, None):
            listing.plain_c = reader
            try:
                try:
                    found = detect.detect_layout(root)
                except RootError as err:
                    found = str(err)
                answers.append((ddmq.list_queue_names(root), found))
            finally:
                listing.plain_c = c_module
    finally:
        shutil.rmtree(base)
    assert answers[0] == answers[1]


# -- a stalled file system stalls the listing thread, not the whole console ---------------------

_SLOW_STAT_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static int slow(const char *p) {
    size_t n = p ? strlen(p) : 0;
    return n >= 10 && strcmp(p + n - 10, "/ddmq.yaml") == 0;
}
int fstatat64(int fd, const char *p, struct stat64 *st, int flags) {
    static int (*real)(int, const char *, struct stat64 *, int);
    if (!real) real = dlsym(RTLD_NEXT, "fstatat64");
    if (slow(p)) usleep(400000);
    return real(fd, p, st, flags);
}
int fstatat(int fd, const char *p, struct stat *st, int flags) {
    return fstatat64(fd, p, (struct stat64 *)st, flags);
}
int faccessat(int fd, const char *p, int mode, int flags) {
    static int (*real)(int, const char *, int, int);
    if (!real) real = dlsym(RTLD_NEXT, "faccessat");
    if (slow(p)) usleep(400000);
    return real(fd, p, mode, flags);
}
"""

_GAP_PROBE = r"""
import sys, threading, time
from qconsole.backends.fs import listing
fn = getattr(listing.plain_c, sys.argv[2])
state = {"stop": False, "gap": 0.0}
def spin():
    last = time.monotonic()
    while not state["stop"]:
        now = time.monotonic()
        state["gap"] = max(state["gap"], now - last)
        last = now
t = threading.Thread(target=spin)
t.start()
time.sleep(0.05)
got = fn(sys.argv[1], "ddmq.yaml") if sys.argv[2] == "config_dirs" else fn(sys.argv[1])
state["stop"] = True
t.join()
assert got is not None and got[0] == ["q"], got
print(state["gap"])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="an LD_PRELOAD shim (glibc)")
@pytest.mark.parametrize("function", ["ddmq_queue_dirs", "config_dirs"])
def test_root_listing_lets_other_threads_run_while_a_lookup_stalls(c_module, tmp_path, function):
    """The console counts in a thread worker. A root's listing in C looked into each queue
    (ddmq.yaml's stat, its access check) holding the GIL: on a stalled NFS server every
    lookup blocked the whole console -- no key, no redraw, no quit -- where Python's own
    lookups (os.stat, os.access) let the event loop run. Simulated with a shim that makes
    every lookup of a ddmq.yaml take 0.4 s: the other thread must not wait that long."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or getattr(os, "confstr", None) is None:
        pytest.skip("no C compiler for the shim")
    try:
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            pytest.skip("not glibc")
    except (ValueError, OSError):
        pytest.skip("not glibc")
    src = tmp_path / "shim.c"
    src.write_text(_SLOW_STAT_SHIM)
    shim = tmp_path / "shim.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(shim), str(src), "-ldl"], check=True)
    root = tmp_path / "root"
    (root / "q" / "work").mkdir(parents=True)
    (root / "q" / "ddmq.yaml").write_text("")
    env = dict(os.environ, LD_PRELOAD=str(shim))
    out = subprocess.run([sys.executable, "-c", _GAP_PROBE, str(root), function], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout) < 0.2  # (0.4 s and more while the GIL was held)


# -- a big queue: parsed as it is listed, whatever its size (session 23) ----------------------

@pytest.mark.parametrize("twist", ["", "dup-late", "foreign-late"])
def test_a_big_queue_read_in_c_gives_the_exact_paths_counts(c_module, tmp_path, monkeypatch, twist):
    """6,000 messages (the set of ids grows several times, the listing takes several getdents
    calls) in both layouts: the C reader's counts equal the exact path's, whole and streamed;
    an id seen twice or a foreign name near the end still sends the queue the exact way."""
    from qconsole.backends.ddmq import layout as ddmq
    from qconsole.backends.vsqs import layout as vsqs

    now = 1_700_000_000.5
    v = tmp_path / "v"
    (v / "q").mkdir(parents=True)
    base = 1_700_000_000_000_000
    names = [str(base + i) if i % 4 else f"{base + i}.{base + (i - 3000) * 1000}" for i in range(6000)]
    names += [f"{base + 7000 + i}.new" for i in range(5)]
    d = tmp_path / "d"
    (d / "q" / "work").mkdir(parents=True)
    (d / "ddmq.yaml").write_text("")
    (d / "q" / "ddmq.yaml").write_text("")
    waiting = [f"{(9, 10, 999)[i % 3]}.{17000000000000 + i}.ddmq{i:032x}" for i in range(5000)]
    work = [f"{1_700_000_000 + i - 500}.{(9, 10)[i % 2]}.{17000000000000 + i}.ddmq{'w%031x' % i}" for i in range(1000)]
    if twist == "dup-late":
        names.append(f"{base + 5999}.new")
        waiting.append(f"9.{17000000100999}.ddmq{999:032x}")  # (a copy, same priority: the exact ways keep either)
    elif twist == "foreign-late":
        names.append("zz-notes")
        work.append("notes")
    for n in names:
        (v / "q" / n).write_text("")
    for n in waiting:
        (d / "q" / n).write_text("")
    for n in work:
        (d / "q" / "work" / n).write_text("")
    got = (c_module.vsqs_plain(str(v / "q"), 1 << 62, 20, now),
           c_module.ddmq_plain(str(d / "q"), 1 << 62, 20, 64, 11, int(now)))
    if twist == "dup-late":  # (VSQS: an id under two names counts once, ready over writing, as the exact path does)
        assert got[0][:3] == (4500, str(base + 1), 5) and got[1] is None
    elif twist:
        assert got == (None, None)
    else:
        assert got[0][:3] == (4500, str(base + 1), 5) and got[0][3] + got[0][4] == 1500
        assert got[1][1] == 5000 and sum(got[1][3].values()) == 1000
    for module, root in ((vsqs, v), (ddmq, d)):
        c_way = module.count_many(str(root), ["q"], now)
        exact = [module.scan_queue(str(root), "q", now)]
        monkeypatch.setattr(module, "STREAM_BYTES", 0)  # the exact path, streamed in chunks
        streamed = [module.scan_queue(str(root), "q", now)]
        monkeypatch.undo()
        assert c_way == exact, module.__name__
        if twist != "dup-late":  # (streamed, one id in two waiting names counts twice, as ddmq delivers both)
            assert streamed == exact, module.__name__


@pytest.mark.parametrize("consumed", [0, 1, 3, 15, 16])
def test_ddmq_messages_consumed_while_listed_are_counted_by_the_c_reader_as_the_exact_path_does(
        c_module, tmp_path, consumed):
    """A consumer renames a message into work/ while the queue is listed: it shows in both
    listings. The exact path counts the consumed copy; so does the C reader (before, it gave
    up and the queue was listed again: a busy big queue read twice). The oldest ready message
    is then the next least kept one; with all 16 kept ones consumed, the exact way."""
    from qconsole.backends.ddmq import layout as ddmq

    now = 1_700_000_000.5
    (tmp_path / "ddmq.yaml").write_text("")
    q = tmp_path / "q"
    (q / "work").mkdir(parents=True)
    (q / "ddmq.yaml").write_text("")
    waiting = [(("9", "10")[i % 2], 17000000000000 + i, f"{i:032x}") for i in range(40)]
    waiting.append(("7", 17000000005000, "a" * 32))  # a priority of one message, consumed below
    for p, qn, uid in waiting:
        (q / f"{p}.{qn}.ddmq{uid}").write_text("")
    gone = waiting[:consumed] + ([waiting[-1]] if consumed else [])
    for p, qn, uid in gone:  # the consumed copies, as a listing during the renames sees them
        (q / "work" / f"{1_700_000_100}.{p}.{qn}.ddmq{uid}").write_text("")
    (q / "work" / f"{1_699_999_000}.9.17000000009999.ddmq{'b' * 32}").write_text("")
    got = c_module.ddmq_plain(str(q), 1 << 62, 20, 64, 11, int(now))
    exact = ddmq.scan_queue(str(tmp_path), "q", now)
    if consumed == 16:  # (the 16 least kept, all consumed: the reader cannot name the oldest)
        assert got is None
    else:
        assert got is not None
        assert got[1] == len(waiting) - len(gone) == exact.counts["ready"]
        assert ("7" in got[0]) is (consumed == 0)
    assert ddmq.count_many(str(tmp_path), ["q"], now) == [exact]
    assert exact.counts["inflight"] == len(gone) and exact.counts["expired"] == 1
