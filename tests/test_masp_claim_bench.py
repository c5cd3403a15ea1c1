"""benchmarks/masp_claim.py (issue 15 item 3): the claim's statistics over training seeds."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from typing import Any

import numpy as np
import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench() -> Any:
    return load_benchmark("masp_claim")


def _row(seed: int, system: str, user: str, episode: int, success_turn: int | None) -> dict:
    return {
        "task": "P4G",
        "seed": seed,
        "system": system,
        "condition": "raw",
        "user": user,
        "episode": episode,
        "success": success_turn is not None,
        "success_turn": success_turn,
        "q": [1.0] * 8,
        "turns": 8,
        "T": 8,
        "errored": False,
    }


def _rows(bench: Any, better: str, seeds: range) -> list[dict]:
    """Every system succeeds on soft users; on hard ones ``better`` wins two more episodes."""
    rows = []
    for seed in seeds:
        for system in [*bench.SYSTEMS, *bench.ABLATIONS]:
            for user in bench.USERS:
                for episode in range(10):
                    wins = 1 + seed % 3 + (2 if system == better else 0)
                    won = user == "soft" or episode < wins
                    rows.append(_row(seed, system, user, episode, 3 if won else None))
    return rows


def test_per_seed_values_are_one_number_per_training_seed(bench: Any) -> None:
    rows = _rows(bench, "MASP", range(5))
    values = bench.per_seed(rows, "rcsr", [0, 1, 2, 3, 4], system="MASP", user="hard")
    assert values.tolist() == pytest.approx([0.3, 0.4, 0.5, 0.3, 0.4])
    missing = bench.per_seed(rows, "rcsr", [0, 9], system="MASP", user="hard")
    assert np.isnan(missing[1])


def test_a_seed_level_verdict_needs_the_interval_to_exclude_zero(bench: Any) -> None:
    rows = _rows(bench, "MASP", range(5))
    seeds = [0, 1, 2, 3, 4]
    masp = bench.per_seed(rows, "rcsr", seeds, system="MASP", user="hard")
    planner = bench.per_seed(rows, "rcsr", seeds, system="planner-only", user="hard")
    diff, word = bench.verdict(masp, planner)
    assert word == "holds" and diff.mean == pytest.approx(0.2) and diff.n == 5
    assert bench.verdict(planner, masp)[1] == "reversed"
    noisy_a, noisy_b = np.asarray([0.1, 0.5, 0.2, 0.4, 0.3]), np.asarray([0.3, 0.2, 0.4, 0.1, 0.5])
    assert bench.verdict(noisy_a, noisy_b)[1] == "inconclusive"


def test_soft_hard_drops_pair_episodes_by_id(bench: Any) -> None:
    rows = _rows(bench, "MASP", range(2))
    # Drop hard episode 0 of seed 0: its soft twin must leave the pairing too.
    rows = [
        r
        for r in rows
        if not (r["seed"] == 0 and r["user"] == "hard" and r["episode"] == 0)
        or r["system"] != "SFT"
    ]
    drop = bench.soft_hard_drop(rows, "sr", [0, 1], system="SFT", task="P4G", condition="raw")
    # Seed 0: hard wins episode 0 only, which is gone: 9 pairs, all soft 1 - hard 0.
    assert drop[0] == pytest.approx(1.0)
    assert drop[1] == pytest.approx(0.8)  # seed 1: hard wins 2 of 10


def test_the_report_runs_and_returns_per_seed_numbers(bench: Any) -> None:
    rows = _rows(bench, "MASP", range(3))
    for condition in ("close",):
        rows += [{**r, "condition": condition} for r in rows]
    out = io.StringIO()
    with redirect_stdout(out):
        verdicts, numbers = bench.report(rows, ["P4G"], [0, 1, 2], list(bench.ABLATIONS))
    text = out.getvalue()
    assert "one row per training seed" in text and "ablations on hard users" in text
    assert any("MASP > planner-only holds" in v for v in verdicts)
    assert numbers["P4G/raw"]["hard_rcsr_per_seed"]["MASP"] == pytest.approx([0.3, 0.4, 0.5])
    json.dumps(numbers)


def test_report_only_needs_at_least_two_seeds(bench: Any, monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.argv", ["masp_claim.py", "--seeds", "0", "--report-only"])
    with pytest.raises(SystemExit):
        bench.main()
    assert "at least two training seeds" in capsys.readouterr().err
