"""First-run compile time is reported on its own line, taken out of the stages it happened in."""

from __future__ import annotations

import pytest

from neardup.cli.progress import CompileClock


def test_compile_time_is_taken_out_of_its_stages():
    clock = CompileClock()
    clock.by_stage = {"read + sketch": 2.0, "verify + cluster": 0.5, None: 1.0}
    timings = {"read + sketch": 5.0, "band": 1.0, "verify + cluster": 0.75}
    clock.apart(timings)
    assert timings == {"read + sketch": 3.0, "band": 1.0, "verify + cluster": 0.25, "compile (first run)": 3.5}
    assert sum(timings.values()) == pytest.approx(5.0 + 1.0 + 0.75 + 1.0)


def test_a_warm_cache_adds_no_line():
    clock = CompileClock()
    timings = {"read + sketch": 1.0}
    clock.apart(timings)
    assert timings == {"read + sketch": 1.0}
