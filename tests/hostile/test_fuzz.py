"""Hypothesis fuzzing (issue 9) of what an operator or a planted file can feed qconsole:
durations, queue names, message file names and ids, and ddmq.yaml text. Each property is
"a sane answer or one QConsoleError", never another exception, never a hang."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from qconsole.backends import open_target
from qconsole.backends.ddmq.settings import load_config
from qconsole.backends.fs.root import validate_queue_name
from qconsole.cli import app, register_all
from qconsole.errors import QConsoleError
from qconsole.ops import parse_duration

register_all()
runner = CliRunner()
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                       HealthCheck.too_slow])

NUMBERISH = st.one_of(
    st.text(alphabet="0123456789.eE+-_ nNaAiIfFdhmswx\t", max_size=12),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-0", "0", "0d", "", " ", "7d", "1e-400",
                     "0x10", "1_000", "١٢", "+5m", "5 m", "nanh", "infd"]),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.text(max_size=8),
)


@FUZZ
@given(NUMBERISH)
def test_durations_are_finite_and_positive_or_refused(text: str) -> None:
    try:
        value = parse_duration(text)
    except QConsoleError as err:
        assert "\n" not in str(err)
        return
    assert isinstance(value, float) and math.isfinite(value) and value > 0, (text, value)


NAMES = st.one_of(
    st.text(max_size=20),
    st.text(alphabet="./\\\x00ab\n\x1b-", max_size=8),
    st.sampled_from(["..", ".", "../x", "a/..", "/abs", "a\\b", ".qconsole", "", " ", "a\x00"]),
)


@FUZZ
@given(NAMES)
def test_queue_names_stay_one_level_under_the_root(name: str) -> None:
    try:
        ok = validate_queue_name(name)
    except QConsoleError:
        return
    root = "/r/root"
    joined = os.path.normpath(os.path.join(root, ok))
    assert os.path.dirname(joined) == root and os.path.basename(joined) == ok, name
    assert not ok.startswith(".") and "/" not in ok and "\x00" not in ok


DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=60)
VSQS_NAMES = st.one_of(
    DIGITS,
    st.tuples(DIGITS, DIGITS).map(".".join),
    st.tuples(DIGITS, st.sampled_from(["new", "tmp", "", "1.2", "x"])).map(".".join),
    st.text(alphabet="0123456789.x-١", min_size=1, max_size=30),
    st.text(alphabet="9", min_size=200, max_size=250),
)


@FUZZ
@given(st.lists(VSQS_NAMES, min_size=1, max_size=6, unique=True))
def test_vsqs_scan_and_ls_never_crash_on_any_names(names: list[str]) -> None:
    base = tempfile.mkdtemp()
    try:
        q = os.path.join(base, "jobs")
        os.makedirs(q)
        for n in names:
            if n in (".", ".."):
                continue
            with open(os.path.join(q, n), "w") as fh:
                fh.write("x")
        scan = open_target(base, "vsqs").scan_queue("jobs", collect=True)
        for m in scan.messages or ():
            assert m.id.isascii() and m.id.isdigit()
            assert m.created_at is None or math.isfinite(m.created_at)
        total = sum(scan.counts.values())
        assert total <= len(names)
        res = runner.invoke(app, ["ls", "jobs", "-r", base, "--json"])
        assert res.exit_code in (0, 2) and "Traceback" not in res.output, res.output
        if res.exit_code == 0:
            json.loads(res.stdout)
    finally:
        shutil.rmtree(base)


DDMQ_NAMES = st.one_of(
    st.tuples(DIGITS, DIGITS, st.text(alphabet="abcdef0123456789", min_size=1, max_size=40)).map(
        lambda t: f"{t[0]}.{t[1]}.ddmq{t[2]}"),
    st.tuples(DIGITS, DIGITS, DIGITS, st.text(alphabet="abcdef0123456789", min_size=1, max_size=40)).map(
        lambda t: f"work/{t[0]}.{t[1]}.{t[2]}.ddmq{t[3]}"),
    st.text(alphabet="0123456789.ddmqx", min_size=1, max_size=30),
)


@FUZZ
@given(st.lists(DDMQ_NAMES, min_size=1, max_size=6, unique=True))
def test_ddmq_scan_and_ls_never_crash_on_any_names(names: list[str]) -> None:
    base = tempfile.mkdtemp()
    try:
        q = os.path.join(base, "jobs")
        os.makedirs(os.path.join(q, "work"))
        with open(os.path.join(base, "ddmq.yaml"), "w"), open(os.path.join(q, "ddmq.yaml"), "w") as fh:
            fh.write("{}\n")
        for n in names:
            if n in (".", "..", "work", "ddmq.yaml") or n.endswith("/") or len(os.path.basename(n)) > 250:
                continue
            with open(os.path.join(q, n), "w") as fh:
                fh.write(json.dumps({"message": "m", "id": "x"}))
        scan = open_target(base, "ddmq").scan_queue("jobs", collect=True)
        for m in scan.messages or ():
            assert m.id.isascii() and m.id.isalnum() and "/" not in m.id
        res = runner.invoke(app, ["ls", "jobs", "-r", base, "--json"])
        assert res.exit_code in (0, 2) and "Traceback" not in res.output, res.output
    finally:
        shutil.rmtree(base)


SCALARS = st.one_of(st.integers(), st.booleans(), st.none(), st.text(max_size=10),
                    st.floats(allow_nan=True, allow_infinity=True))
YAML_TEXT = st.one_of(
    st.text(alphabet="ab:- &*[]{}!#\n'\"0123456789.", max_size=80),
    st.recursive(SCALARS, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
                 max_leaves=10).map(lambda v: json.dumps({"priority": v}, default=str)),
    st.integers(min_value=1, max_value=10).map(
        lambda depth: "a: &a [x, x]\n" + "".join(f"l{i}: &l{i} [{'*a' if i == 0 else f'*l{i - 1}'}, "
                                                 f"{'*a' if i == 0 else f'*l{i - 1}'}]\n" for i in range(depth * 2))),
    st.integers(min_value=1, max_value=6000).map(lambda n: "priority: " + "[" * n + "]" * n),
    st.integers(min_value=1, max_value=6000).map(lambda n: "priority: " + "7" * n),
    st.sampled_from(["!!python/object/apply:os.system ['true']", "%YAML 9.9\n---\na: 1", "? [a]\n: b",
                     "a: !!binary AAAA", "a: !!timestamp 2001-12-14", "<<: {a: 1}", "\x00", "\ufeffa: 1"]),
)


@FUZZ
@given(YAML_TEXT)
def test_yaml_loads_to_a_mapping_or_one_error(text: str) -> None:
    fd, path = tempfile.mkstemp(suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogatepass") as fh:
            fh.write(text)
        try:
            doc = load_config(path)
        except QConsoleError as err:
            assert "\n" not in str(err)
            return
        assert isinstance(doc, dict)
        # what config prints stays small: aliases are never expanded into a bomb
        assert len(json.dumps(doc, default=str)) < 1_000_000
    finally:
        os.unlink(path)
