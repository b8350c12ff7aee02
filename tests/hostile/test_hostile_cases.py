"""The hostile-input suite (issue 9): planted files, symlinks, FIFOs, absurd numbers and YAML.

Every case builds a small root (VSQS or ddmq, queues ``jobs`` and ``other`` with a ready, an
in-flight and an expired message each) beside ``outside/`` (ordinary files, a 0600 file,
files named like messages, a trash-shaped tree), plants one hostile thing, runs ONE
``qconsole`` command in a subprocess and judges it (:func:`harness.judge`): exit code, at
most one line on stderr (exactly one on exit 2), no traceback or "internal error", no hang,
no raw escape on the output, nothing of ``outside/`` printed or changed, no payload lost
or live twice, no id live under two names, no new qconsole leftovers, and the case's own
expectations (paths left alone, extra checks).
"""

from __future__ import annotations

import json
import os

import pytest

from harness import (
    DEAD_PID, HOST, NOW_S, QC, SECRET, Case, World, ddmq_body, judge, live_messages, make_outside, make_root,
    snapshot, trashed_messages, vsqs_id,
)

CASES: list[Case] = []
BOTH = ("vsqs", "ddmq")


def case(id: str, layouts=BOTH, **kw) -> None:
    for lay in layouts:
        CASES.append(Case(id=f"{kw.get('cls', 'x')}-{id}-{lay}", layout=lay, **kw))


# --------------------------------------------------------------------------- planting helpers


def first_ready(w: World, q: str = "jobs") -> str:
    for n in sorted(os.listdir(w.p(q))):
        if n[0].isdigit() and "." not in n or (w.layout == "ddmq" and n.count(".") == 2 and ".ddmq" in n):
            return n
    raise AssertionError("no ready message")


def claim_name(token: str, encoded_rel: str, pid: int = DEAD_PID, host: str = HOST) -> str:
    return f"{QC}claim-{host}-{pid}-{token}-{encoded_rel}"


def journal_name(token: str, pid: int = DEAD_PID, host: str = HOST) -> str:
    return f"{QC}journal-{host}-{pid}-{token}"


def enc(rel: str) -> str:
    return rel.replace("/", "+").replace(".", ",")


def plant_claimed_message(w: World, token: str, doc: dict | bytes | None, *, rel: str | None = None,
                          claim_rel: str | None = None) -> tuple[str, str]:
    """A message of jobs taken into a claim (as a killed qconsole leaves it) with a journal ``doc``."""
    name = first_ready(w)
    rel = rel or name
    src = w.p("jobs", name)
    cname = claim_name(token, enc(claim_rel if claim_rel is not None else rel))
    os.rename(src, w.p("jobs", cname))
    jname = journal_name(token)
    if doc is not None:
        w.write(f"jobs/{jname}", doc if isinstance(doc, bytes) else json.dumps(doc))
    return f"jobs/{cname}", f"jobs/{jname}"


def journal_case(id: str, doc, **kw) -> None:
    """recover --force with a planted journal that does not validate: reported, left alone."""
    def plant(w: World) -> None:
        d = doc(w) if callable(doc) else doc
        plant_claimed_message(w, "a0b3c001", d)

    def still_there(w, res, before, after) -> None:
        claims = [k for k in before if "claim-" in k]
        # the message is back (live) or still held in its claim: never dropped
        assert "jobs-ready" in live_messages(w.root, w.layout) or all(after.get(k) == before[k] for k in claims), claims

    case(id, cls="state", plant=plant, argv=["recover", "--force"], codes=(0, 1), check=still_there,
         keep=kw.pop("keep", ()), **kw)


def planted_batch(w: World, batch: str = "20200101T000000-aaaaaa", *, files: dict[str, bytes] | None = None,
                  manifest: object = None, queue: str = "jobs") -> str:
    top = f".qconsole/trash/{batch}"
    os.makedirs(w.p(top, "files", queue, "work"), exist_ok=True)
    if files is None:
        if w.layout == "vsqs":
            files = {vsqs_id(500): b"trashed-one"}
        else:
            qn = f"{NOW_S - 50}000001"
            files = {f"999.{qn}.ddmq{500:032x}": ddmq_body(queue, "trashed-one", 999, qn, f"{500:032x}")}
    for rel, data in files.items():
        w.write(f"{top}/files/{queue}/{rel}", data)
    if manifest is None:
        manifest = {"batch": batch, "created_at": NOW_S - 10, "action": "purge", "queue": queue,
                    "layout": w.layout, "user": "x", "complete": True, "items": []}
    if manifest is not False:
        w.write(f"{top}/manifest.json", manifest if isinstance(manifest, bytes) else json.dumps(manifest))
    return top


# =========================================================================== 1. qconsole's own state


journal_case("journal-dest-dotdot", lambda w: {"token": "a0b3c001", "src": "x", "dest": "../outside",
                                               "commit_from": "notes.txt", "final": "x", "tmp": None})
journal_case("journal-dest-dotdot-deep", lambda w: {"token": "a0b3c001", "src": "x", "dest": "jobs/../../outside",
                                                    "commit_from": "secret.key", "final": "x", "tmp": None})
journal_case("journal-dest-absolute", lambda w: {"token": "a0b3c001", "src": "x", "dest": w.outside,
                                                 "commit_from": "notes.txt", "final": "x", "tmp": None})
journal_case("journal-commit-from-traversal", lambda w: {"token": "a0b3c001", "src": "x", "dest": "jobs",
                                                         "commit_from": "../../outside/notes.txt", "final": "x"})
journal_case("journal-commit-from-absolute", lambda w: {"token": "a0b3c001", "src": "x", "dest": "jobs",
                                                        "commit_from": w.o("notes.txt"), "final": "x"})
journal_case("journal-dest-nul", {"token": "a0b3c001", "src": "x", "dest": "jo\u0000bs", "commit_from": "a", "final": "b"})
journal_case("journal-commit-from-nul", {"token": "a0b3c001", "src": "x", "dest": "jobs", "commit_from": "a\u0000b"})
journal_case("journal-fields-wrong-types", {"token": 5, "src": [], "dest": ["jobs"], "commit_from": {"a": 1}, "final": 7})
journal_case("journal-not-an-object", b"[1, 2, 3]")
journal_case("journal-torn", b'{"token": "a0b3c001", "dest": "jo')
journal_case("journal-committed-claim-no-final",
             {"token": "a0b3c001", "src": "x", "dest": "other", "commit_from": "does-not-exist", "final": "nor-this"})
journal_case("journal-dest-is-root", {"token": "a0b3c001", "src": "x", "dest": "", "commit_from": "ddmq.yaml",
                                      "final": "x"}, keep=("ddmq.yaml",))
journal_case("journal-dest-dot-qconsole", {"token": "a0b3c001", "src": "x", "dest": ".qconsole",
                                           "commit_from": "audit.log", "final": "x"})


# a journal of a dead process naming another queue's .new (a producer's half-written message)
# or another, live qconsole's temp file as its copy: neither is the journal's own, neither goes
PRODUCERS_NEW = f"other/{vsqs_id(777)}.new"
LIVE_TMP = f"other/{QC}tmp-{HOST}-{os.getpid()}-0000abcd"


def plant_foreign_copies(w: World) -> None:
    w.write(PRODUCERS_NEW, "half-written-by-a-producer")
    w.write(LIVE_TMP, "another-qconsoles-copy")
    final = first_ready(w)
    for tok, cf in (("a0b3c001", os.path.basename(PRODUCERS_NEW)), ("a0b3c002", os.path.basename(LIVE_TMP))):
        w.write(f"jobs/{journal_name(tok)}", json.dumps({"token": tok, "src": "x", "dest": "other", "commit_from": cf,
                                                        "final": final, "tmp": None}))


for argv in (["recover"], ["recover", "--force"]):
    case(f"journal-names-foreign-copies{'-force' if len(argv) > 1 else ''}", cls="state", plant=plant_foreign_copies,
         argv=argv, codes=(0, 1), keep=(PRODUCERS_NEW,) + ((LIVE_TMP,) if len(argv) == 1 else ()))


def plant_bad_claim(encoded: str | callable, where: str = "jobs"):
    def plant(w: World) -> None:
        e = encoded(w) if callable(encoded) else encoded
        w.write(f"{where}/{claim_name('c1a1d001', e)}", "claimed-" + SECRET[:3] + "-payload")
    return plant


for cid, encoded in [
    ("claim-rel-dotdot", ",,+outside+evil"),
    ("claim-rel-dotdot-deep", ",,+,,+,,+outside+evil"),
    ("claim-rel-absolute", lambda w: enc(w.o("evil"))),
    ("claim-rel-work-dotdot", "work+,,+,,+outside+evil"),
    ("claim-rel-into-other-queue", ",,+other+" + "1700000000000777"),
    ("claim-rel-into-qconsole", ",,+,qconsole+audit,log"),
    ("claim-rel-empty", ""),
    ("claim-rel-dot", ","),
]:
    case(cid, cls="state", plant=plant_bad_claim(encoded), argv=["recover", "--force"], codes=(0, 1),
         keep=(f"jobs/{claim_name('c1a1d001', encoded if isinstance(encoded, str) else 'x')}",) if isinstance(encoded, str) else ())

case("claim-in-root-dir-dotdot", cls="state", plant=plant_bad_claim(",,+outside+evil", where=""),
     argv=["recover", "--force"], codes=(0, 1))
case("claim-in-trash-batch-dotdot", cls="state",
     plant=lambda w: (planted_batch(w), w.write(f".qconsole/trash/20200101T000000-aaaaaa/{claim_name('c1a1d002', ',,+,,+,,+,,+outside+evil')}", "x")),
     argv=["recover", "--force"], codes=(0, 1))
case("claim-dead-pid-no-force-dotdot", cls="state", plant=plant_bad_claim(",,+outside+evil"),
     argv=["recover"], codes=(0, 1))


def plant_claim_link(target_rel: str, kind: str = "link"):
    def plant(w: World) -> None:
        name = first_ready(w)
        p = w.p("jobs", claim_name("11bc0001", enc(name)))
        if kind == "link":
            os.symlink(w.o(target_rel), p)
        else:
            os.mkfifo(p)
    return plant


def no_irregular_messages(w, res, before, after) -> None:
    """No link, FIFO or other non-file named like a message appeared in a queue (planted ones may stay)."""
    for rel, entry in after.items():
        parts = rel.split(os.sep)
        if parts[0].startswith(".") or len(parts) not in (2, 3) or (len(parts) == 3 and parts[1] != "work"):
            continue
        if parts[-1][:1].isdigit() and entry[0] not in ("file", "dir") and before.get(rel) != entry:
            raise AssertionError(f"{rel} appeared as a {entry[0]}, not a regular file: {entry}")


case("claim-is-symlink-to-outside-0600", cls="state", plant=plant_claim_link("secret.key"),
     argv=["recover", "--force"], codes=(0, 1), check=no_irregular_messages)
case("claim-is-fifo", cls="state", plant=plant_claim_link("", "fifo"), argv=["recover", "--force"], codes=(0, 1),
     check=no_irregular_messages)
case("tmp-is-symlink-to-outside", cls="state",
     plant=lambda w: os.symlink(w.o("notes.txt"), w.p("jobs", f"{QC}tmp-{HOST}-{DEAD_PID}-e3bc0d3e")),
     argv=["recover", "--force"], codes=(0, 1), keep=(f"jobs/{QC}tmp-{HOST}-{DEAD_PID}-e3bc0d3e",))
case("journal-is-fifo", cls="state",
     plant=lambda w: (plant_claimed_message(w, "f1f0c0d3", None), os.mkfifo(w.p("jobs", journal_name("f1f0c0d3")))),
     argv=["recover", "--force"], codes=(0, 1))
case("journal-is-symlink-to-outside", cls="state",
     plant=lambda w: (plant_claimed_message(w, "11bcc0d3", None), os.symlink(w.o("notes.txt"), w.p("jobs", journal_name("11bcc0d3")))),
     argv=["recover", "--force"], codes=(0, 1))

# ---- batch journals (one per batch of requeued/moved messages; see fs/batches.py)


def batch_name(token: str, pid: int = DEAD_PID, host: str = HOST) -> str:
    return f"{QC}batch-{host}-{pid}-{token}"


def tmp_name(token: str, pid: int = DEAD_PID) -> str:
    return f"{QC}tmp-{HOST}-{pid}-{token}"


def batch_doc(w: World, src: str, pid: int = DEAD_PID, **over) -> dict:
    """A journal of one entry (claim token c1a1b001, its tmp of process ``pid``) moving ``src``
    of jobs into other."""
    final = vsqs_id(900) if w.layout == "vsqs" else f"999.{NOW_S}000001.ddmq{900:032x}"
    entry = {"token": "c1a1b001", "src": src, "commit_from": tmp_name("c1a1b001", pid), "final": final,
             "tmp": tmp_name("c1a1b001", pid)}
    entry.update(over.pop("entry", {}))
    doc = {"schema": "qconsole.batch/1", "token": "b0b0b001", "dest": "other", "entries": [entry]}
    doc.update(over)
    return doc


def plant_batch(doc, *, claim: bool = True, where: str = "jobs", pid: int = DEAD_PID, extra=None):
    """A claimed ready message of jobs (token c1a1b001) and a batch journal ``doc`` beside it."""
    def plant(w: World) -> None:
        name = first_ready(w)
        if claim:
            os.rename(w.p("jobs", name), w.p("jobs", claim_name("c1a1b001", enc(name), pid)))
        d = doc(w, name) if callable(doc) else doc
        w.write(f"{where}/{batch_name('b0b0b001', pid)}".lstrip("/"),
                d if isinstance(d, bytes) else json.dumps(d))
        if extra:
            extra(w, name)
    return plant


def batch_case(id: str, doc, *, claim: bool = True, where: str = "jobs", keep_all: bool = False, extra=None,
               argv=("recover", "--force"), codes=(1,), layouts=BOTH, **kw) -> None:
    """recover with a planted batch journal: one problem line, the journal left byte for byte
    (``keep_all``: the whole root), no message lost or live twice (the harness's checks)."""
    pid = kw.pop("pid", DEAD_PID)
    jrel = f"{where}/{batch_name('b0b0b001', pid)}".lstrip("/")
    keep = ("*",) if keep_all else (jrel, *kw.pop("keep", ()))

    def one_problem(w, res, before, after) -> None:
        if 1 in codes and res.code == 1:
            assert res.stdout.count("batch journal") >= 1 or "left alone" in res.stdout, res.stdout
    case(id, layouts=layouts, cls="state", plant=plant_batch(doc, claim=claim, where=where, extra=extra, pid=pid),
         argv=list(argv), codes=codes, keep=keep, check=one_problem, **kw)


batch_case("batch-torn", b'{"schema": "qconsole.batch/1", "token": "b0b0b0', claim=False, keep_all=True)
batch_case("batch-not-an-object", b"[1, 2, 3]", claim=False, keep_all=True)
batch_case("batch-binary", b"\x00\xff\x1b[31m" * 50, claim=False, keep_all=True)
batch_case("batch-too-big", b"[" + b"1," * (1 << 20) + b"1]", claim=False, keep_all=True)
batch_case("batch-deep", b"[" * 100_000 + b"]" * 100_000, claim=False, keep_all=True)
batch_case("batch-wrong-schema", lambda w, n: batch_doc(w, n, schema="qconsole.batch/9"), claim=False, keep_all=True)
batch_case("batch-token-not-its-name", lambda w, n: batch_doc(w, n, token="b0b0b002"), claim=False, keep_all=True)
batch_case("batch-no-entries", lambda w, n: batch_doc(w, n, entries=[]), claim=False, keep_all=True)
batch_case("batch-entries-not-list", lambda w, n: batch_doc(w, n, entries={"a": 1}), claim=False, keep_all=True)
batch_case("batch-too-many-entries", lambda w, n: batch_doc(w, n, entries=[batch_doc(w, n)["entries"][0]] * 5000),
           claim=False, keep_all=True)
batch_case("batch-dest-dotdot", lambda w, n: batch_doc(w, n, dest="../outside"))
batch_case("batch-dest-absolute", lambda w, n: batch_doc(w, n, dest=w.outside))
batch_case("batch-dest-dot-qconsole", lambda w, n: batch_doc(w, n, dest=".qconsole"))
batch_case("batch-dest-missing", lambda w, n: batch_doc(w, n, dest="nope"))
batch_case("batch-src-traversal", lambda w, n: batch_doc(w, n, entry={"src": "../../outside/notes.txt"}))
batch_case("batch-src-absolute", lambda w, n: batch_doc(w, n, entry={"src": w.o("notes.txt")}))
batch_case("batch-commit-from-traversal", lambda w, n: batch_doc(w, n, entry={"commit_from": "../../outside/notes.txt"}))
batch_case("batch-commit-from-audit-log", lambda w, n: batch_doc(w, n, entry={"commit_from": "audit.log"}))
batch_case("batch-final-traversal", lambda w, n: batch_doc(w, n, entry={"final": "../../outside/x"}))
batch_case("batch-final-not-a-message", lambda w, n: batch_doc(w, n, entry={"final": "ddmq.yaml"}))
batch_case("batch-tmp-other-token", lambda w, n: batch_doc(w, n, entry={"tmp": tmp_name("c1a1b002"),
                                                                       "commit_from": tmp_name("c1a1b002")}))
batch_case("batch-token-not-hex", lambda w, n: batch_doc(w, n, entry={"token": "../../x"}))
batch_case("batch-duplicate-token", lambda w, n: batch_doc(w, n, entries=[batch_doc(w, n)["entries"][0]] * 2))
batch_case("batch-entry-not-object", lambda w, n: batch_doc(w, n, entries=["x"]))
batch_case("batch-in-root-dir", lambda w, n: batch_doc(w, n), where="", claim=False)
batch_case("batch-is-symlink-to-outside", None, claim=False, keep_all=True,
           extra=lambda w, n: w.link(f"jobs/{batch_name('b0b0b001')}", w.o("notes.txt")))
batch_case("batch-is-fifo", None, claim=False, keep_all=True,
           extra=lambda w, n: w.fifo(f"jobs/{batch_name('b0b0b001')}"))
# a valid journal whose entry is "committed" only by its say-so: the claim is never dropped
batch_case("batch-claims-commit-onto-another-live-message",
           lambda w, n: batch_doc(w, n, entry={"final": first_ready(w, "other")}))
# ... nor does a VSQS entry's commit_from name a client's <id>.new being written
batch_case("batch-commit-from-a-clients-new", lambda w, n: batch_doc(w, n, entry={"commit_from": vsqs_id(901) + ".new",
                                                                                 "final": vsqs_id(901)}),
           layouts=("vsqs",), keep=(f"other/{vsqs_id(901)}.new",),
           extra=lambda w, n: (w.write(f"other/{vsqs_id(901)}.new", "being-written"),
                               w.write(f"other/{tmp_name('c1a1b001')}", "our-copy")))
# a live operator's batch: recover without --force touches nothing
batch_case("batch-live-owner", lambda w, n: batch_doc(w, n, pid=1), pid=1, argv=("recover",), codes=(0,), keep_all=True)
# a dead process's journal naming another (live) process's tmp: refused, the tmp left alone
batch_case("batch-names-another-process-tmp", lambda w, n: batch_doc(w, n, pid=1), keep_all=True, argv=("recover",),
           extra=lambda w, n: w.write(f"other/{tmp_name('c1a1b001', 1)}", "a live operator's copy"))


# ---- the trash and its manifests


def dot_qconsole_link(w: World) -> None:
    w.link(".qconsole", w.o("qc"))


def trash_link(w: World) -> None:
    os.makedirs(w.p(".qconsole"), exist_ok=True)
    w.link(".qconsole/trash", w.o("qc", "trash"))


def batch_link(w: World) -> None:
    os.makedirs(w.p(".qconsole", "trash"), exist_ok=True)
    w.link(".qconsole/trash/20200101T000000-abcdef", w.o("qc", "trash", "20200101T000000-abcdef"))


for pid_, plant in (("dot-qconsole-symlink", dot_qconsole_link), ("trash-symlink", trash_link),
                    ("batch-symlink", batch_link)):
    case(f"{pid_}-trash-empty", cls="symlink", plant=plant, argv=["trash", "empty", "--yes"], codes=(0, 2))
    case(f"{pid_}-trash-restore", cls="symlink", plant=plant, argv=["trash", "restore"], codes=(0, 2),
         check=no_irregular_messages)
    case(f"{pid_}-trash-restore-named", cls="symlink", plant=plant,
         argv=["trash", "restore", "20200101T000000-abcdef"], codes=(0, 2))
    case(f"{pid_}-trash-empty-older", cls="symlink", plant=plant,
         argv=["trash", "empty", "--older-than", "1d", "--yes"], codes=(0, 2))
for pid_, plant in (("dot-qconsole-symlink", dot_qconsole_link), ("trash-symlink", trash_link)):
    case(f"{pid_}-purge", cls="symlink", plant=plant, argv=["purge", "jobs", "--yes"], codes=(0, 2))
    case(f"{pid_}-delete", cls="symlink", plant=plant,
         argv=lambda w: ["delete", "jobs", first_ready(w), "--yes"], codes=(0, 2))
case("dot-qconsole-symlink-publish", cls="symlink", plant=dot_qconsole_link, argv=["publish", "jobs", "hello"],
     codes=(0, 2))
case("dot-qconsole-symlink-audit", cls="symlink", plant=dot_qconsole_link, argv=["audit"], codes=(0, 2))
case("dot-qconsole-symlink-recover", cls="symlink", plant=dot_qconsole_link, argv=["recover", "--force"], codes=(0, 1, 2))
case("dot-qconsole-is-a-file-purge", cls="state", plant=lambda w: w.write(".qconsole", "x"),
     argv=["purge", "jobs", "--yes"], codes=(2,), keep=("*",))
case("dot-qconsole-is-a-file-publish", cls="state", plant=lambda w: w.write(".qconsole", "x"),
     argv=["publish", "jobs", "hello"], codes=(0, 2), keep=(".qconsole",))


def batch_queue_dir_link(w: World) -> None:
    top = planted_batch(w, files={})
    w.link(f"{top}/files/jobs", w.outside)


def batch_work_dir_link(w: World) -> None:
    top = planted_batch(w, files={})
    w.link(f"{top}/files/jobs/work", w.outside)


def batch_file_link(w: World) -> None:
    top = planted_batch(w, files={})
    name = vsqs_id(600) if w.layout == "vsqs" else f"999.{NOW_S}000001.ddmq{600:032x}"
    w.link(f"{top}/files/jobs/{name}", w.o("secret.key"))


def batch_file_hardlink(w: World) -> None:
    top = planted_batch(w, files={})
    name = vsqs_id(601) if w.layout == "vsqs" else f"999.{NOW_S}000001.ddmq{601:032x}"
    os.link(w.o("secret.key"), w.p(top, "files", "jobs", name))


def batch_file_fifo(w: World) -> None:
    top = planted_batch(w, files={})
    name = vsqs_id(602) if w.layout == "vsqs" else f"999.{NOW_S}000001.ddmq{602:032x}"
    os.mkfifo(w.p(top, "files", "jobs", name))


for pid_, plant in (("batch-queue-dir-symlink", batch_queue_dir_link), ("batch-work-dir-symlink", batch_work_dir_link),
                    ("batch-file-symlink", batch_file_link), ("batch-file-hardlink-outside", batch_file_hardlink),
                    ("batch-file-fifo", batch_file_fifo)):
    case(f"{pid_}-restore", cls="symlink", plant=plant, argv=["trash", "restore"], codes=(0, 1, 2),
         check=no_irregular_messages)
case("batch-queue-dir-symlink-empty", cls="symlink", plant=batch_queue_dir_link, argv=["trash", "empty", "--yes"],
     codes=(0, 2))
case("batch-file-symlink-recover", cls="symlink", plant=batch_file_link, argv=["recover", "--force"], codes=(0, 1))
case("batch-queue-dir-symlink-list", cls="symlink", plant=batch_queue_dir_link, argv=["trash", "list"], codes=(0, 2))



# a batch's lock that is no file qconsole writes (a link, to outside or nowhere, a FIFO): no one
# holds it, it is broken (the link itself removed) and the batch restored or emptied; it held the
# batch for good ("being restored or emptied by another qconsole"). A directory there cannot be
# broken: one line that says so
def batch_lock(kind: str):
    def plant(w: World) -> None:
        lock = w.p(planted_batch(w), ".lock")
        if kind == "link-outside":
            os.symlink(w.o("notes.txt"), lock)
        elif kind == "link-dangling":
            os.symlink(w.o("nothing-here"), lock)
        elif kind == "fifo":
            os.mkfifo(lock)
        else:
            os.mkdir(lock)
    return plant


def batch_restored(w, res, before, after) -> None:
    assert res.stdout.startswith("trash restore jobs: 1 done"), res.stdout
    assert not os.path.lexists(w.p(".qconsole/trash/20200101T000000-aaaaaa")), sorted(after)


def batch_emptied(w, res, before, after) -> None:
    assert res.stdout.startswith("trash empty: 1 done"), res.stdout
    assert not os.path.lexists(w.p(".qconsole/trash/20200101T000000-aaaaaa")), sorted(after)


for kind in ("link-outside", "link-dangling", "fifo"):
    case(f"batch-lock-{kind}-restore", cls="symlink", plant=batch_lock(kind), argv=["trash", "restore"], codes=(0,),
         check=batch_restored)
    case(f"batch-lock-{kind}-empty", cls="symlink", plant=batch_lock(kind), argv=["trash", "empty", "--yes"],
         codes=(0,), check=batch_emptied, conserve=False)  # (emptying loses the batch's message)
case("batch-lock-dir-restore", cls="symlink", plant=batch_lock("dir"), argv=["trash", "restore"], codes=(2,),
     keep=("*",), check=lambda w, res, before, after: "cannot be removed" in res.stderr or pytest.fail(res.stderr))

case("manifest-fifo-list", cls="absurd", plant=lambda w: (planted_batch(w, manifest=False),
                                                            os.mkfifo(w.p(".qconsole/trash/20200101T000000-aaaaaa/manifest.json"))),
     argv=["trash", "list"], codes=(0, 2))
case("manifest-fifo-restore", cls="absurd", plant=lambda w: (planted_batch(w, manifest=False),
                                                               os.mkfifo(w.p(".qconsole/trash/20200101T000000-aaaaaa/manifest.json"))),
     argv=["trash", "restore"], codes=(0, 1, 2))


def manifest_outside(w: World) -> None:
    with open(w.o("fake-manifest.json"), "w") as fh:
        json.dump({"batch": "x", "created_at": 1, "action": SECRET, "queue": SECRET, "user": SECRET}, fh)
    planted_batch(w, manifest=False)
    w.link(".qconsole/trash/20200101T000000-aaaaaa/manifest.json", w.o("fake-manifest.json"))


case("manifest-symlink-outside-list", cls="symlink", plant=manifest_outside, argv=["trash", "list"], codes=(0, 2))
case("manifest-symlink-outside-list-json", cls="symlink", plant=manifest_outside, argv=["trash", "list", "--json"],
     codes=(0, 2))

for label, created in (("nan", b"NaN"), ("inf", b"Infinity"), ("minus-inf", b"-Infinity"), ("huge", b"1e400"),
                       ("string", b'"yesterday"'), ("epoch-zero", b"0"), ("negative", b"-5")):
    def _plant(w: World, created=created) -> None:
        planted_batch(w, batch=f"{__import__('time').strftime('%Y%m%dT%H%M%S', __import__('time').gmtime())}-bbbbbb",
                      manifest=b'{"batch": "b", "created_at": ' + created + b', "action": "purge", "queue": "jobs", '
                               b'"layout": "vsqs", "user": "x", "complete": true, "items": []}')
    # the batch was made a second ago: --older-than 1d must keep it whatever its manifest claims
    case(f"manifest-created-{label}-empty-older", cls="state", plant=_plant,
         argv=["trash", "empty", "--older-than", "1d", "--yes"], codes=(0,), keep=("*",))

# a directory named like a batch whose name is no time (month 13, hour 25): not a batch, left
# alone; the real batches beside it are listed, restored and emptied as ever (such a name made
# every command that reads the batches' times fail with an internal error)
IMPOSSIBLE = "20261399T256199-abcdef"


def plant_impossible_batch(w: World) -> None:
    planted_batch(w)
    planted_batch(w, IMPOSSIBLE, files={(vsqs_id(501) if w.layout == "vsqs" else
                                         f"999.{NOW_S - 50}000001.ddmq{501:032x}"): b"impossible"})


def impossible_kept(*texts: str):
    def check(w, res, before, after) -> None:
        left = {k: v for k, v in before.items() if IMPOSSIBLE in k}
        assert left and all(after.get(k) == v for k, v in left.items()), "the impossible batch was touched"
        assert all(t in res.stdout for t in texts), res.stdout
    return check


for label, argv, text in (("list", ["trash", "list"], "20200101T000000-aaaaaa"),
                          ("restore", ["trash", "restore"], "1 done"),
                          ("empty-older", ["trash", "empty", "--older-than", "1d", "--yes"], "1 done")):
    case(f"batch-name-impossible-time-{label}", cls="absurd", plant=plant_impossible_batch, argv=argv, codes=(0,),
         check=impossible_kept(text), conserve=label != "empty-older")  # (emptying loses the real batch's)
case("manifest-queue-traversal-restore", cls="state",
     plant=lambda w: planted_batch(w, manifest={"batch": "b", "created_at": NOW_S, "action": "purge",
                                                "queue": "../outside", "complete": True, "items": [
                                                    {"queue": "../outside", "relpath": "../../outside/notes.txt"}]}),
     argv=["trash", "restore"], codes=(0, 1, 2))
case("batch-name-escape-list", cls="terminal",
     plant=lambda w: planted_batch(w, batch="2020\x1b]0;pwned\x07-cc"), argv=["trash", "list"], codes=(0,))
for label, arg in (("dotdot", "../outside"), ("dot", ".."), ("absolute", "/etc"), ("empty", ""),
                   ("escape", "\x1b]52;c;cHduZWQ=\x07")):
    case(f"trash-restore-arg-{label}", cls="absurd", plant=lambda w: planted_batch(w),
         argv=["trash", "restore", arg], codes=(2,), keep=("*",))

# ---- the audit log


def audit_fifo(w: World) -> None:
    os.makedirs(w.p(".qconsole"), exist_ok=True)
    os.mkfifo(w.p(".qconsole", "audit.log"))


def audit_link(w: World) -> None:
    os.makedirs(w.p(".qconsole"), exist_ok=True)
    os.symlink(w.o("audit.log"), w.p(".qconsole", "audit.log"))


case("audit-log-fifo-publish", cls="absurd", plant=audit_fifo, argv=["publish", "jobs", "hello"], codes=(0, 2))
case("audit-log-fifo-audit", cls="absurd", plant=audit_fifo, argv=["audit"], codes=(0, 2))
case("audit-log-fifo-purge", cls="absurd", plant=audit_fifo, argv=["purge", "jobs", "--yes"], codes=(0, 2))
case("audit-log-symlink-publish", cls="symlink", plant=audit_link, argv=["publish", "jobs", "hello"], codes=(0, 2))
case("audit-log-symlink-audit", cls="symlink", plant=audit_link, argv=["audit"], codes=(0, 2))
case("audit-log-symlink-audit-json", cls="symlink", plant=audit_link, argv=["audit", "--json"], codes=(0, 2))
case("audit-log-option-fifo-publish", cls="absurd", plant=lambda w: os.mkfifo(w.p("..", "afifo")),
     argv=lambda w: ["publish", "jobs", "hello", "--audit-log", os.path.join(w.base, "afifo")], codes=(0, 2))
case("audit-log-option-fifo-audit", cls="absurd", plant=lambda w: os.mkfifo(w.p("..", "afifo")),
     argv=lambda w: ["audit", "--audit-log", os.path.join(w.base, "afifo")], codes=(0, 2))
case("audit-log-escapes", cls="terminal",
     plant=lambda w: w.write(".qconsole/audit.log", '{"action": "\\u001b]0;pwned\\u0007", "queue": "\\u009b31m"}\n'
                                                    '\x1b]52;c;cHduZWQ=\x07 raw line\n'),
     argv=["audit"], codes=(0,))



def strict_json(w: World, res, before, after) -> None:
    """--json output is JSON a strict parser (Node's JSON.parse, jq) reads: no NaN/Infinity."""
    def refuse(name):
        raise AssertionError(f"{name} in --json output: {res.stdout[:300]}")
    for line in res.stdout.splitlines() if res.stdout.startswith("{\"") and "\n{" in res.stdout else [res.stdout]:
        if line.strip():
            json.loads(line, parse_constant=refuse)


case("audit-log-infinite-figure-json", cls="absurd",
     plant=lambda w: w.write(".qconsole/audit.log", '{"action": "purge", "queue": "jobs", "count": 1e999, '
                                                    '"at": NaN}\n'),
     argv=["audit", "--json"], codes=(0,), check=strict_json)
case("yaml-nan-timeout-config-json", layouts=("ddmq",), cls="absurd",
     plant=lambda w: w.write("jobs/ddmq.yaml", "message_timeout: .nan\npriority: .inf\n"),
     argv=["config", "jobs", "--json"], codes=(0, 2), check=strict_json)

# =========================================================================== 2. symlinks in the store


def work_link(w: World) -> None:
    w.link("jobs/work", w.outside)


for cmd in (["purge", "jobs", "--yes"], ["requeue", "jobs", "--all"], ["move", "jobs", "other", "--all"],
            ["ls", "jobs"], ["peek", "jobs"], ["delete", "jobs", "1700000000.999.17000000000000.ddmqabad1dea", "--yes"]):
    case(f"work-symlink-{cmd[0]}", layouts=("ddmq",), cls="symlink", plant=work_link, argv=cmd, codes=(0, 2))


def yaml_link(where: str):
    def plant(w: World) -> None:
        w.link(f"{where}ddmq.yaml", w.o("ddmq.yaml"))
    return plant


for where in ("", "jobs/"):
    tag = "root" if not where else "queue"
    case(f"{tag}-yaml-symlink-config", layouts=("ddmq",), cls="symlink", plant=yaml_link(where),
         argv=["config"] + (["jobs"] if where else []), codes=(0, 2))
    case(f"{tag}-yaml-symlink-config-json", layouts=("ddmq",), cls="symlink", plant=yaml_link(where),
         argv=["config"] + (["jobs"] if where else []) + ["--json"], codes=(0, 2))
    case(f"{tag}-yaml-symlink-publish", layouts=("ddmq",), cls="symlink", plant=yaml_link(where),
         argv=["publish", "jobs", "hello"], codes=(2,), keep=("*",))
    case(f"{tag}-yaml-symlink-set", layouts=("ddmq",), cls="symlink", plant=yaml_link(where),
         argv=["config"] + (["jobs"] if where else []) + ["priority=5"], codes=(0, 2))
case("dest-yaml-symlink-move", layouts=("ddmq",), cls="symlink", plant=yaml_link("other/"),
     argv=["move", "jobs", "other", "--all"], codes=(2,), keep=("*",))


def msg_link(w: World) -> None:
    if w.layout == "vsqs":
        w.link(f"jobs/{vsqs_id(99)}", w.o("secret.key"))
        w.link(f"jobs/{vsqs_id(98)}.{(NOW_S - 10) * 1_000_000}", w.o("notes.txt"))
    else:
        w.link(f"jobs/1.{NOW_S}000000.ddmq{99:032x}", w.o("secret.key"))
        w.link(f"jobs/work/{NOW_S - 10}.1.{NOW_S}000000.ddmq{98:032x}", w.o("notes.txt"))


for cmd in (["peek", "jobs"], ["ls", "jobs", "--json"], ["requeue", "jobs", "--all"], ["move", "jobs", "other", "--all"],
            ["purge", "jobs", "--yes"], ["stats", "--check-types"]):
    case(f"message-symlink-{cmd[0]}", cls="symlink", plant=msg_link, argv=cmd, codes=(0,), check=no_irregular_messages,
         keep=())
case("message-symlink-peek-by-id", cls="symlink", plant=msg_link,
     argv=lambda w: ["peek", "jobs", vsqs_id(99) if w.layout == "vsqs" else f"{99:032x}"], codes=(2,))


def queue_link(w: World) -> None:
    os.makedirs(w.o("q", "work"), exist_ok=True)
    with open(w.o("q", "ddmq.yaml"), "w") as fh:
        fh.write("priority: 1\n")
    w.link("linked", w.o("q"))


for cmd in (["purge", "linked", "--yes"], ["publish", "linked", "x"], ["move", "jobs", "linked", "--all"],
            ["config", "linked", "priority=3"], ["requeue", "linked", "--all"]):
    case(f"queue-symlink-{cmd[0]}", cls="symlink", plant=queue_link, argv=cmd, codes=(2,), keep=("*",))

# =========================================================================== 4. one live file per message


def restore_onto_held(w: World) -> None:
    """The trash holds a ready copy of an id that is in flight in the queue."""
    if w.layout == "vsqs":
        held = next(n for n in os.listdir(w.p("jobs")) if "." in n and n.split(".")[1] > str(NOW_S * 1_000_000))
        mid = held.split(".")[0]
        planted_batch(w, files={mid: b"trashed-twin"})
    else:
        held = next(n for n in os.listdir(w.p("jobs", "work")) if int(n.split(".")[0]) > NOW_S)
        _dl, prio, qn, tail = held.split(".")
        planted_batch(w, files={f"{prio}.{qn}.{tail}": ddmq_body("jobs", "trashed-twin", int(prio), qn, tail[4:])})


def restore_partial(w: World) -> None:
    """A restore killed between its link and unlink, then a consumer took the restored message."""
    name = first_ready(w)
    top = planted_batch(w, files={})
    os.link(w.p("jobs", name), w.p(top, "files", "jobs", name))
    if w.layout == "vsqs":
        os.rename(w.p("jobs", name), w.p("jobs", f"{name}.{(NOW_S + 999) * 1_000_000}"))
    else:
        os.rename(w.p("jobs", name), w.p("jobs", "work", f"{NOW_S + 999}.{name}"))


def restore_onto_ready(w: World) -> None:
    name = first_ready(w)
    planted_batch(w, files={(name if w.layout == "vsqs" else "work/" + f"{NOW_S - 5}.{name}"): b"trashed-other"})


case("restore-id-in-flight", cls="one-live", plant=restore_onto_held, argv=["trash", "restore"], codes=(0, 1, 2))
case("restore-after-partial-then-consumed", cls="one-live", plant=restore_partial, argv=["trash", "restore"],
     codes=(0, 1, 2))
case("restore-id-ready", cls="one-live", plant=restore_onto_ready, argv=["trash", "restore"], codes=(0, 1, 2))


def vsqs_twin(w: World) -> None:
    w.write(f"jobs/{vsqs_id(700)}", "twin-ready")
    w.write(f"jobs/{vsqs_id(700)}.{(NOW_S - 10) * 1_000_000}", "twin-expired")


case("requeue-id-also-ready", layouts=("vsqs",), cls="one-live", plant=vsqs_twin, argv=["requeue", "jobs", "--all"],
     codes=(0, 1))
case("requeue-id-also-ready-by-id", layouts=("vsqs",), cls="one-live", plant=vsqs_twin,
     argv=["requeue", "jobs", f"{vsqs_id(700)}.{(NOW_S - 10) * 1_000_000}"], codes=(0, 1, 2))

# =========================================================================== 5. message contents never name a file


def body_case(cid: str, cmd: list[str], **fields) -> None:
    def plant(w: World) -> None:
        held = sorted(os.listdir(w.p("jobs", "work")))[0]
        p = w.p("jobs", "work", held)
        with open(p) as fh:
            doc = json.load(fh)
        doc.update(fields)
        with open(p, "w") as fh:
            json.dump(doc, fh)

    def requeued_by_file_id(w, res, before, after) -> None:
        held = sorted(k for k in before if k.startswith("jobs/work/") and ".ddmq" in k)[0]
        uid = held.rsplit(".ddmq", 1)[1]
        anywhere = [k for k in after if k.endswith(".ddmq" + uid) and not k.startswith(".qconsole")]
        assert len(anywhere) == 1, anywhere  # exactly one live file, named by the id in its file name

    case(cid, layouts=("ddmq",), cls="contents", plant=plant, argv=cmd, codes=(0,), check=requeued_by_file_id)


for label, value in (("traversal", "../../outside/evil"), ("slash", "a/b"), ("long", "x" * 300), ("dot", "a.b"),
                     ("newline", "a\nb"), ("empty", ""), ("int", 12345), ("null", None), ("escape", "\x1b]0;x\x07")):
    body_case(f"body-id-{label}-requeue", ["requeue", "jobs", "--all"], id=value)
    body_case(f"body-id-{label}-move", ["move", "jobs", "other", "--all"], id=value)
for label, value in (("huge", 10 ** 300), ("negative", -1), ("text", "abc"), ("bool", True), ("float", 1.5)):
    body_case(f"body-priority-{label}-move", ["move", "jobs", "other", "--all"], priority=value)
    body_case(f"body-requeue-{label}-requeue", ["requeue", "jobs", "--all"], requeue=value)


def dest_yaml(text: str):
    def plant(w: World) -> None:
        w.write("other/ddmq.yaml", text)
    return plant


for label, text in (("text", "priority: abc\n"), ("negative", "priority: -1\n"), ("inf", "priority: .inf\n"),
                    ("huge", f"priority: {10 ** 40}\n"), ("bool", "priority: true\n"), ("float", "priority: 1.5\n"),
                    ("list", "priority: [1]\n")):
    case(f"dest-priority-{label}-move", layouts=("ddmq",), cls="contents", plant=dest_yaml(text),
         argv=["move", "jobs", "other", "--all"], codes=(2,), keep=("*",))
    case(f"queue-priority-{label}-publish", layouts=("ddmq",), cls="contents", plant=dest_yaml(text),
         argv=["publish", "other", "x"], codes=(2,), keep=("*",))
for label, text in (("text", "requeue_prio: abc\n"), ("huge", f"requeue_prio: {10 ** 40}\n")):
    case(f"queue-requeue-prio-{label}-requeue", layouts=("ddmq",), cls="contents",
         plant=lambda w, text=text: w.write("jobs/ddmq.yaml", text), argv=["requeue", "jobs", "--all"], codes=(0, 2))

# =========================================================================== 6. absurd input


def with_batch(w: World) -> None:
    planted_batch(w)


for label, text in (("nan", "nan"), ("NaN-days", "NaNd"), ("empty", ""), ("blank", " "), ("inf", "inf"),
                    ("minus-inf", "-inf"), ("negative", "-1"), ("huge-exp", "1e400"), ("zero", "0"),
                    ("minus-zero", "-0"), ("unit-only", "d"), ("bad-unit", "7x"), ("hex", "0x10"),
                    ("underscore", "1_0d"), ("tiny", "1e-400")):
    case(f"older-than-{label}", layouts=("vsqs",), cls="absurd", plant=with_batch,
         argv=["trash", "empty", "--older-than", text, "--yes"], codes=(2,), keep=("*",))


ABSURD_VSQS = ("jobs/" + "9" * 25, "jobs/" + "1" * 25 + "." + "9" * 30, f"jobs/{vsqs_id(800)}." + "9" * 30,
               "jobs/" + "7" * 250)


def long_ids(w: World) -> None:
    w.write("jobs/" + "9" * 25, "long-id-ready")
    w.write("jobs/" + "1" * 25 + "." + "9" * 30, "long-id-held")
    w.write(f"jobs/{vsqs_id(800)}." + "9" * 30, "long-deadline")
    w.write("jobs/" + "7" * 250, "absurd-id")


for cmd in (["ls", "jobs"], ["ls", "jobs", "--json"], ["peek", "jobs"], ["stats"], ["stats", "--json"],
            ["requeue", "jobs", "--all"], ["purge", "jobs", "--yes"], ["move", "jobs", "other", "--all"],
            ["check"]):
    case(f"vsqs-absurd-ids-{cmd[0]}{'-json' if '--json' in cmd else ''}", layouts=("vsqs",), cls="absurd",
         plant=long_ids, argv=cmd, codes=(0, 1) if cmd[0] == "check" else (0,),
         keep=ABSURD_VSQS if cmd[0] in ("purge", "move", "requeue") else (),
         stderr_lines=4 if cmd == ["ls", "jobs"] else 1)  # (ls names each name it leaves out)
case("vsqs-absurd-id-peek-by-id", layouts=("vsqs",), cls="absurd", plant=long_ids, argv=["peek", "jobs", "9" * 25],
     codes=(0, 2))


def ddmq_long(w: World) -> None:
    u = f"{900:032x}"
    w.write(f"jobs/work/{'9' * 30}.999.{NOW_S}000000.ddmq{u}", ddmq_body("jobs", "long-deadline", 999, f"{NOW_S}000000", u))
    u = f"{901:032x}"
    w.write(f"jobs/{'1' * 150}.{NOW_S}000000.ddmq{u}", ddmq_body("jobs", "long-prio", 999, f"{NOW_S}000000", u))
    u = f"{902:032x}"
    w.write(f"jobs/5.{'9' * 40}.ddmq{u}", ddmq_body("jobs", "long-qn", 5, "9" * 40, u))


for cmd in (["ls", "jobs"], ["ls", "jobs", "--json"], ["peek", "jobs"], ["stats", "--json"], ["requeue", "jobs", "--all"],
            ["move", "jobs", "other", "--all"]):
    case(f"ddmq-absurd-numbers-{cmd[0]}{'-json' if '--json' in cmd else ''}", layouts=("ddmq",), cls="absurd",
         plant=ddmq_long, argv=cmd, codes=(0,), stderr_lines=3 if cmd == ["ls", "jobs"] else 1)

BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")) + "priority: 5\n"
DEEP = "priority: " + "[" * 5000 + "]" * 5000 + "\n"
HUGE_INT = "priority: " + "1" * 5000 + "\n"
HUGE_KEY = "x" * 100 + ": 1\n"
HUGE_HEX = "extra: 0x" + "f" * 5000 + "\n"
#: an alias inside the value it names: a list that holds itself (config --json recursed without end;
#: a save wrote it back, then its audit line failed: exit 70 after the change)
RECURSIVE = "priority: 5\nextra: &r [1, *r]\nmore: &m {k: *m}\n"


def yaml_plant(text_or_size, where: str = ""):
    def plant(w: World) -> None:
        path = w.p(where, "ddmq.yaml")
        if isinstance(text_or_size, int):
            with open(path, "w") as fh:
                fh.write("priority: 5\n")
                line = "# " + "x" * 1000 + "\n"
                for _ in range(text_or_size // len(line)):
                    fh.write(line)
        else:
            with open(path, "w") as fh:
                fh.write(text_or_size)
    return plant


for label, body in (("billion-laughs", BOMB), ("deep-nesting", DEEP), ("huge-int", HUGE_INT),
                    ("huge-hex-int", HUGE_HEX), ("50MB", 50 << 20), ("recursive", RECURSIVE)):
    for cmd in (["config"], ["config", "--json"], ["publish", "jobs", "x"], ["move", "other", "jobs", "--all"]):
        case(f"yaml-{label}-{cmd[0]}{'-json' if '--json' in cmd else ''}", layouts=("ddmq",), cls="absurd",
             plant=yaml_plant(body), argv=cmd, codes=(2,), keep=("*",) if cmd[0] != "config" else (),
             timeout=20)
case("yaml-billion-laughs-queue-config", layouts=("ddmq",), cls="absurd", plant=yaml_plant(BOMB, "jobs"),
     argv=["config", "jobs"], codes=(2,))
case("yaml-recursive-queue-config-set", layouts=("ddmq",), cls="absurd", plant=yaml_plant(RECURSIVE, "jobs"),
     argv=["config", "jobs", "priority=3"], codes=(2,), keep=("jobs/ddmq.yaml",))
# a value qconsole would refuse to read back is refused before it is written (the file stays)
for key in ("message_timeout", "priority"):
    case(f"config-set-{key}-70-digits", layouts=("ddmq",), cls="absurd", argv=["config", "jobs", f"{key}={'9' * 70}"],
         codes=(2,), keep=("jobs/ddmq.yaml",))
case("config-set-unknown-key-huge-hex", layouts=("ddmq",), cls="absurd",
     argv=["config", "jobs", "extra=0x" + "f" * 4000], codes=(0, 2))


# an unknown key set to NaN: saved, and said to be saved (the read-back compared it with itself,
# NaN != NaN, and said another writer had set it: exit 2 after the change was made)
def yaml_says(line: str):
    def check(w, res, before, after) -> None:
        text = after["jobs/ddmq.yaml"][2].decode()
        assert line in text.splitlines(), text
        assert res.stdout.startswith("config jobs: 1 done"), res.stdout
    return check


case("config-set-unknown-key-nan", layouts=("ddmq",), cls="absurd", argv=["config", "jobs", "extra=.nan"], codes=(0,),
     check=yaml_says("extra: .nan"))

case("yaml-50MB-stats", layouts=("ddmq",), cls="absurd", plant=yaml_plant(50 << 20), argv=["stats", "--json"], codes=(0,))


def yaml_fifo(where: str):
    def plant(w: World) -> None:
        p = w.p(where, "ddmq.yaml")
        os.unlink(p)
        os.mkfifo(p)
    return plant


for where in ("", "jobs"):
    for cmd in (["config"] + ([where] if where else []), ["publish", "jobs", "x"], ["requeue", "jobs", "--all"],
                ["config"] + ([where] if where else []) + ["priority=4"]):
        case(f"yaml-fifo-{where or 'root'}-{cmd[0]}{'-set' if any('=' in c for c in cmd) else ''}", layouts=("ddmq",),
             cls="absurd", plant=yaml_fifo(where), argv=cmd, codes=(0, 2))


def fifo_messages(w: World) -> None:
    if w.layout == "vsqs":
        w.fifo(f"jobs/{vsqs_id(50)}")
        w.fifo(f"jobs/{vsqs_id(51)}.{(NOW_S - 5) * 1_000_000}")
    else:
        w.fifo(f"jobs/1.{NOW_S}000000.ddmq{50:032x}")
        w.fifo(f"jobs/work/{NOW_S - 5}.1.{NOW_S}000000.ddmq{51:032x}")


for cmd in (["peek", "jobs"], ["requeue", "jobs", "--all"], ["move", "jobs", "other", "--all"], ["purge", "jobs", "--yes"],
            ["ls", "jobs"]):
    # (ls names each FIFO it leaves out, on a line of its own)
    case(f"fifo-messages-{cmd[0]}", cls="absurd", plant=fifo_messages, argv=cmd, codes=(0,),
         stderr_lines=2 if cmd[0] == "ls" else 1)


def input_fifo(w: World) -> None:
    os.mkfifo(os.path.join(w.base, "in.fifo"))


case("publish-file-fifo", cls="absurd", plant=input_fifo,
     argv=lambda w: ["publish", "jobs", "--file", os.path.join(w.base, "in.fifo")], codes=(2,), keep=("*",))
case("publish-file-dev-zero", layouts=("vsqs",), cls="absurd", argv=["publish", "jobs", "--file", "/dev/zero"],
     codes=(2,), keep=("*",))
case("publish-file-directory", layouts=("vsqs",), cls="absurd", argv=lambda w: ["publish", "jobs", "--file", w.base],
     codes=(2,), keep=("*",))
case("publish-priority-huge", layouts=("ddmq",), cls="absurd", argv=["publish", "jobs", "x", "--priority", "1" + "0" * 300],
     codes=(2,), keep=("*",))
case("stats-watch-nan", layouts=("vsqs",), cls="absurd", argv=["stats", "--watch", "nan"], codes=(2,))
case("stats-watch-inf", layouts=("vsqs",), cls="absurd", argv=["stats", "--watch", "inf", "--json"], codes=(2,))


def check_one_line(w, res, before, after) -> None:
    assert res.stdout.count("\n") == 1 and res.stdout.count("|") <= 1, res.stdout


case("check-warn-age-nan", layouts=("vsqs",), cls="absurd", argv=["check", "--warn-age", "nan"], codes=(2, 3))

# =========================================================================== 7/8. terminal, perfdata, create

ESC_YAML = ('title: "\\e]0;pwned\\a"\n"\\e]52;c;cHduZWQ=\\a": 1\nnote: "\\x9b31mred"\n'
            'priority: 5\n')
for cmd in (["config"], ["config", "--json"], ["config", "-", "title"]):
    case(f"yaml-escapes-{'-'.join(cmd)}", layouts=("ddmq",), cls="terminal", plant=yaml_plant(ESC_YAML), argv=cmd,
         codes=(0,))
case("yaml-escape-priority-publish", layouts=("ddmq",), cls="terminal",
     plant=yaml_plant('priority: "\\e]0;pwned\\a"\n', "jobs"), argv=["publish", "jobs", "x"], codes=(2,), keep=("*",))


def odd_queue(name: str):
    def plant(w: World) -> None:
        os.makedirs(w.p(name), exist_ok=True)
        if w.layout == "ddmq":
            os.makedirs(w.p(name, "work"), exist_ok=True)
            w.write(f"{name}/ddmq.yaml", "{}\n")
        else:
            w.write(f"{name}/{vsqs_id(1)}", "odd-queue-msg")
    return plant


for label, name in (("pipe", "evil|x_ready=0;1;2;0; other"), ("newline", "ev\nil"), ("escape", "q\x1b]0;pwn\x07")):
    case(f"queue-name-{label}-check", cls="perfdata", plant=odd_queue(name), argv=["check", "--warn-ready", "0"],
         codes=(1,), check=check_one_line)
    case(f"queue-name-{label}-stats", cls="terminal", plant=odd_queue(name), argv=["stats"], codes=(0,))
    case(f"queue-name-{label}-prometheus", cls="terminal", plant=odd_queue(name), argv=["stats", "--format", "prometheus"],
         codes=(0,))


def newroot_absent(w, res, before, after) -> None:
    assert not os.path.lexists(os.path.join(w.base, "NEWROOT")), "NEWROOT created before the name was refused"


for label, name in (("dotdot-x", "../x"), ("slash", "a/b"), ("empty", ""), ("dot", "."), ("hidden", ".h")):
    case(f"create-{label}-newroot", layouts=("vsqs", "ddmq"), cls="small",
         argv=lambda w, name=name: ["create", name, "-r", os.path.join(w.base, "NEWROOT"), "--layout", w.layout],
         codes=(2,), check=newroot_absent, keep=("*",))
for label, ident in (("traversal", "../../outside/notes.txt"), ("absolute", "/etc/passwd"), ("dotdot", "..")):
    for cmd in ("peek", "requeue", "delete"):
        case(f"id-{label}-{cmd}", layouts=("vsqs",), cls="small",
             argv=[cmd, "jobs", ident] + (["--yes"] if cmd == "delete" else []), codes=(2,), keep=("*",))

# ids on stdin ('-'): what is not a list of ids is one error line; a path is no id, even one naming
# a message of another queue or outside: it is skipped as not in the queue (ids on stdin are a
# selection listed earlier, some of it consumed since), never followed; the good ids beside it
# are done (a typed one fails the command: the `id-*` cases above)
def said(*texts: str, stream: str = "stderr"):
    def check(w, res, before, after) -> None:
        out = getattr(res, stream)
        assert all(t in out for t in texts), out
    return check


STDIN_CMDS = {"requeue": ["requeue", "jobs", "-"], "delete": ["delete", "jobs", "-", "--yes"],
              "move": ["move", "jobs", "other", "-"]}
for cmd, argv in STDIN_CMDS.items():
    for label, data, why in (("nul", vsqs_id(10).encode() + b"\x00\n", "stdin line 1 holds a NUL byte"),
                             ("huge-line", b"1" * (1 << 20) + b"\n", "stdin line 1 is longer than 4096 bytes"),
                             ("not-utf8", vsqs_id(10).encode() + b"\n\xff\n", "stdin line 2 is not UTF-8")):
        case(f"stdin-{label}-{cmd}", layouts=("vsqs",), cls="small", argv=argv, stdin=data, keep=("*",), check=said(why))
    for lay, ready, other in (("vsqs", vsqs_id(10), vsqs_id(20)),
                              ("ddmq", f"{10:032x}", f"999.{NOW_S - 100}123456.ddmq{20:032x}")):
        for label, data in (("traversal", "../../outside/1700000000000000"), ("other-queue", f"../other/{other}"),
                            ("good-then-outside", f"{ready}\n../outside/notes.txt")):
            done = "1 done" if label.startswith("good") and cmd != "requeue" else "0 done"  # (ready: not requeued)
            case(f"stdin-{label}-{cmd}", layouts=(lay,), cls="small", argv=argv, stdin=f"{data}\n".encode(),
                 codes=(0,), keep=("*",) if done == "0 done" else (),
                 check=said(f"{cmd} jobs{' to other' if cmd == 'move' else ''}: {done}, ", f"\n  skipped {data.splitlines()[-1]}: not in the queue any more\n",
                            stream="stdout"))

# TEXT on the command line holding bytes that are not UTF-8 (argv is bytes; Python hands them
# over as surrogates): VSQS publishes those very bytes, as from stdin; ddmq refuses in one line
def published_bytes(data: bytes):
    def check(w, res, before, after) -> None:
        new = [k for k in after if k not in before and k.startswith("jobs" + os.sep)]
        assert len(new) == 1 and after[new[0]][2] == data, new
    return check


case("publish-text-not-utf8", layouts=("vsqs",), cls="small", argv=["publish", "jobs", "\udcff\udcfeab"],
     codes=(0,), check=published_bytes(b"\xff\xfeab"))
case("publish-text-not-utf8", layouts=("ddmq",), cls="small", argv=["publish", "jobs", "\udcff\udcfeab"],
     keep=("*",), check=said("not valid UTF-8"))

case("payload-escapes-peek", cls="terminal",
     plant=lambda w: w.write(f"jobs/{vsqs_id(1)}", "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x9b31m") if w.layout == "vsqs" else
     w.write(f"jobs/1.{NOW_S}000000.ddmq{1:032x}", ddmq_body("jobs", "\x1b]52;c;cHduZWQ=\x07\x1b[2J", 1, f"{NOW_S}000000", f"{1:032x}")),
     argv=["peek", "jobs"], codes=(0,))


# --------------------------------------------------------------------------- the test


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile(case: Case, tmp_path) -> None:
    w = World(str(tmp_path), case.layout)
    make_outside(w)
    make_root(w)
    if case.plant:
        case.plant(w)
    before_root, before_out = snapshot(w.root), snapshot(w.outside)
    before_live, before_trash = live_messages(w.root, w.layout), trashed_messages(w.root, w.layout)
    argv = case.argv(w) if callable(case.argv) else list(case.argv)
    env = {"QCONSOLE_ROOT": w.root}
    res = w.run(*argv, env=env, stdin=case.stdin, timeout=case.timeout)
    judge(case, w, res, before_root, snapshot(w.root), before_out, snapshot(w.outside), before_live, before_trash)


def test_enough_cases() -> None:
    assert len(CASES) >= 100, len(CASES)
    assert len({c.id for c in CASES}) == len(CASES)
