"""humanize.fit: a count in a fixed-width column is shortened, never cut."""

from __future__ import annotations

import math

from hypothesis import given, strategies as st

from qconsole.output.humanize import fit

SCALE = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


@given(st.integers(min_value=-10 ** 20, max_value=10 ** 20), st.integers(min_value=3, max_value=8))
def test_a_count_fits_and_reads_back_close(n: int, width: int) -> None:
    text = fit(n, width)
    assert len(text) <= width
    if len(str(n)) <= width:
        assert text == str(n)  # exact while it fits
        return
    if width == 3 and n < 0 or abs(n) >= 10 ** 19:
        return  # no room for a sign, a digit and a unit; or past what a unit of E holds (∞)
    assert float(text[:-1]) != 0, text  # never "0M" for 100k
    value = float(text[:-1]) * SCALE[text[-1]]
    decimals = len(text[:-1].partition(".")[2])
    assert math.isclose(value, n, abs_tol=0.5 * 10 ** -decimals * SCALE[text[-1]] + 1e-9 * n)


def test_examples() -> None:
    assert fit(1_000_000, 6) == "1.00M"
    assert fit(999_999, 6) == "999999"
    assert fit(12_345, 4) == "12k"
    assert fit(99_999, 4) == "100k"
    assert fit(999_999, 5) == "1.00M"  # not "1000k"
    assert fit(123.4, 4) == "123"
    assert fit(float("nan"), 4) == "?"
    assert fit(250_000, 3) == ".2M" and fit(99_999, 3) == ".1M"  # the 3-cell column (wr, dl)
    assert fit(-126_293, 4) == "-.1M"
