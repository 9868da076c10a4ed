"""The plain-language number helpers of report/formatting.py (used by the gate's PR comment)."""

from __future__ import annotations

import pytest

from evalframe.report.formatting import decimal, percent, points, signed_decimal


@pytest.mark.parametrize(("value", "places", "text"), [
    (0.8650, 0, "87%"),     # half up on the printed decimal, not on the binary 0.86499999...
    (0.8649, 0, "86%"),
    (0.815, 0, "82%"),
    (1.0, 0, "100%"),
    (0.0, 0, "0%"),
    (0.8496, 2, "84.96%"),
    (None, 0, "—"),
])
def test_percent(value, places, text):
    assert percent(value, places) == text


def test_points_and_signed_values():
    assert points(0.81 - 0.87) == "−6.0"          # a true minus sign, one decimal
    assert points(0.01) == "+1.0"
    assert points(-0.0004) == "0.0"               # no sign on a change that prints as zero
    assert points(-0.0301, 2) == "−3.01"
    assert signed_decimal(-0.05) == "−0.05"
    assert decimal(0.125) == "0.13" and decimal(0.6049) == "0.60"
