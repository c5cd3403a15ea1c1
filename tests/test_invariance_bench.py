"""benchmarks/invariance.py: record comparison, normalization, and one tiny two-tree run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "invariance.py"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("invariance")


def _record(**changes):
    record = {
        "episode": 0,
        "success": False,
        "q": [1, 1],
        "s": [0.1, 0.2],
        "transcript": [{"role": "system", "text": "Hi"}, {"role": "user", "text": "Hello"}],
    }
    return {**record, **changes}


def test_identical_records_compare_identical(bench):
    cell = {"records": [_record(), _record(episode=1)]}
    assert bench.compare_cell(cell, {"records": [_record(), _record(episode=1)]}) == "identical"


def test_first_difference_names_episode_field_and_values(bench):
    before = {"records": [_record(), _record(episode=1)]}
    changed = _record(episode=1, transcript=[{"role": "system", "text": "Hi"}, {"role": "user"}])
    verdict = bench.compare_cell(before, {"records": [_record(), changed]})
    assert verdict == "DIFFERS: episode 1 transcript[1].text: only before"
    verdict = bench.compare_cell(before, {"records": [_record(), _record(episode=1, s=[0.1])]})
    assert verdict == "DIFFERS: episode 1 s: 2 items before, 1 after"
    # The record's own field order decides which difference is "first".
    verdict = bench.compare_cell(
        {"records": [_record()]}, {"records": [_record(success=True, q=[1, -1])]}
    )
    assert verdict == "DIFFERS: episode 0 success: false != true"


def test_int_and_float_of_equal_value_differ(bench):
    assert bench.first_difference({"x": 1}, {"x": 1.0}) == ".x: 1 != 1.0"


def test_errors_and_missing_cells(bench):
    failing = {"error": "ValueError: no"}
    assert bench.compare_cell(failing, dict(failing)).startswith("identical (both fail")
    assert bench.compare_cell(failing, {"records": []}).startswith("DIFFERS: error")
    assert bench.compare_cell(None, {"records": []}) == "DIFFERS: missing before"
    assert bench.compare_cell({"records": [_record()]}, {"records": []}) == (
        "DIFFERS: 1 episodes before, 0 after"
    )


def test_normalize_drops_timing_fields_and_marks_the_tree(bench):
    record = {
        "duration_s": 1.5,
        "usage": {"calls": 2, "time": 9.0},
        "traceback": "File /tmp/tree/dialogue_gym/env.py",
        "q": (1, -1),
    }
    assert bench.normalize(record, "/tmp/tree") == {
        "usage": {"calls": 2},
        "traceback": "File <tree>/dialogue_gym/env.py",
        "q": [1, -1],
    }


def test_table_lists_every_cell(bench):
    text = bench.table([("P4G-hard-v0", "random", "vector", 3, "identical")])
    assert text.splitlines()[0].split() == ["env", "agent", "mode", "eps", "result"]
    assert text.splitlines()[2].split() == ["P4G-hard-v0", "random", "vector", "3", "identical"]


def test_needs_both_trees(bench):
    with pytest.raises(SystemExit):
        bench.parse_args(["--before", "x"])


def test_this_tree_against_itself(tmp_path):
    """Two subprocesses on this checkout: every cell identical, every module from the tree."""
    command = [
        sys.executable,
        str(SCRIPT),
        "--before",
        str(ROOT),
        "--after",
        str(ROOT),
        "--envs",
        "CB-hard-v0",
        "--agents",
        "bad",
        "inject",
        "--modes",
        "lone",
        "vector",
        "strategy",
        "--episodes",
        "1",
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "dialogue_gym_agents.dispatch:lowball" in done.stdout
    assert "StrategyActions(random strategies)" in done.stdout
    assert "5/5 cells identical" in done.stdout
