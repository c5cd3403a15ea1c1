"""benchmarks/baselines.py (issues 6, 14, 15): planners per reward and seed, seed-level verdicts."""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "baselines.py"
DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)


@pytest.fixture(scope="module")
def bench():
    pytest.importorskip("torch")
    # imported by name from its folder, as worker processes (spawned with this sys.path) will
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        yield importlib.import_module("baselines")
    finally:
        sys.path.remove(str(SCRIPT.parent))
        sys.modules.pop("baselines", None)


def test_rewards_default_to_success_and_env_and_seeds_to_five(bench):
    assert bench.parse_args([]).rewards == ["success", "env"]
    assert bench.parse_args([]).seeds == [0, 1, 2, 3, 4]
    assert bench.parse_args(["--seeds", "3", "1", "3"]).seeds == [3, 1]
    with pytest.raises(SystemExit):
        bench.parse_args(["--workers", "0"])
    assert bench.parse_args(["--rewards", "env", "success", "env"]).rewards == ["env", "success"]
    with pytest.raises(SystemExit):
        bench.parse_args(["--rewards", "progress"])


def _rows(env_sr: float, success_sr: float) -> list[dict]:
    env_id = "P4G-hard-v0"
    return [
        {"agent": "planner[env]", "env_id": env_id, "sr": env_sr},
        {"agent": "planner[success]", "env_id": env_id, "sr": success_sr},
        {"agent": "planner[env]", "env_id": "P4G-soft-v0", "sr": 0.0},  # other envs ignored
    ]


@pytest.mark.parametrize(
    ("env_sr", "success_sr", "ratio", "verdict"),
    [
        (0.45, 0.5, 0.9, "PASS"),
        (0.44, 0.5, 0.88, "MISS"),
        (0.6, 0.5, 1.2, "PASS"),
        (0.3, 0.0, math.inf, "PASS"),
    ],
)
def test_sr_ratio_passes_at_ninety_percent(bench, env_sr, success_sr, ratio, verdict):
    value, line = bench.sr_ratio(_rows(env_sr, success_sr), "P4G-hard-v0", "env")
    assert value == pytest.approx(ratio)
    assert line.endswith(f"{verdict} (target >= 0.9)")


def test_sr_ratio_of_two_failures_is_a_miss(bench):
    value, line = bench.sr_ratio(_rows(0.0, 0.0), "P4G-hard-v0", "env")
    assert math.isnan(value)
    assert "MISS" in line


def _seeded(label: str, env_id: str, values: list[float], metric: str = "sr") -> list[dict]:
    return [
        {"agent": label, "env_id": env_id, "train_seed": seed, metric: v, "rcsr": v / 2}
        for seed, v in enumerate(values)
    ]


def test_sr_ratio_compares_the_means_over_seeds(bench):
    rows = _seeded("planner[env]", "P4G-hard-v0", [0.4, 0.5]) + _seeded(
        "planner[success]", "P4G-hard-v0", [0.5, 0.5]
    )
    value, line = bench.sr_ratio(rows, "P4G-hard-v0", "env")
    assert value == pytest.approx(0.9)
    assert line.endswith("PASS (target >= 0.9)")


def test_paired_by_seed_pairs_training_seeds(bench):
    rows = _seeded("planner[env]", "P4G-hard-v0", [0.5, 0.6, 0.7])
    rows += _seeded("planner[success]", "P4G-hard-v0", [0.3, 0.4, 0.5])
    line = bench.paired_by_seed(rows, "P4G-hard-v0", "planner[env]", "planner[success]")
    # every seed differs by +0.2: the interval collapses onto it, so the verdict holds
    assert "SR@8 = +0.20 [+0.20, +0.20]" in line
    assert "n = 3" in line
    assert line.endswith("holds")
    rows += _seeded("planner[judge]", "P4G-hard-v0", [0.1, 0.6, 0.2])
    line = bench.paired_by_seed(rows, "P4G-hard-v0", "planner[judge]", "planner[success]")
    assert line.endswith("inconclusive")


def test_planner_vs_random_subtracts_the_one_random_sr(bench):
    rows = _seeded("planner[success]", "P4G-hard-v0", [0.19, 0.2, 0.21])
    rows.append({"agent": "random", "env_id": "P4G-hard-v0", "train_seed": None, "sr": 0.4})
    line = bench.planner_vs_random(rows, "P4G-hard-v0", "success")
    assert "SR@8 = -0.20" in line
    assert line.endswith("reversed")


def test_seed_table_gives_intervals_over_seeds(bench):
    rows = _seeded("planner[success]", "P4G-hard-v0", [0.2, 0.4])
    table = bench.seed_table(rows, ["P4G"], ["success"])
    line = next(x for x in table.splitlines() if x.startswith("planner[success]"))
    assert "P4G-hard-v0" in line
    assert " 0.30 [" in line  # mean of the two seeds with a t-interval
    assert "0.20/0.10  0.40/0.20" in line  # per-seed SR / RCSR
    assert "P4G-soft-v0" not in table  # no rows, no line
    one = bench.seed_table(rows[:1], ["P4G"], ["success"])
    assert "0.20 (one seed)" in one  # no interval over a single seed


@pytest.mark.skipif(not DATA.is_dir(), reason=f"corpus copies not found at {DATA}")
def test_tiny_run_trains_one_planner_per_reward_and_reuses_them(bench, tmp_path, capsys):
    pytest.importorskip("stable_baselines3")
    argv = ["--tasks", "P4G", "--episodes", "2", "--ppo-steps", "64", "--encoder", "hashing"]
    argv += ["--data", str(DATA), "--out", str(tmp_path), "--seeds", "0", "1", "--workers", "1"]
    bench.main(argv)
    out = capsys.readouterr().out
    for label in ("random", "scripted", "sft-retrieval", "planner[success]", "planner[env]"):
        assert f"\n{label} " in out
    assert "\nplanner[success] seed 1 " in out
    assert "P4G-hard-v0: SR planner[env] / planner[success] = " in out
    assert "P4G-hard-v0: planner[env] − planner[success] SR@8 = " in out
    assert "(paired by training seed" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert {row["train_seed"] for row in report["summaries"]} == {None, 0, 1}
    success, env = tmp_path / "planner-P4G-success-seed0", tmp_path / "planner-P4G-env-seed0"
    from dialogue_gym_agents.common.checkpoint import load_checkpoint

    assert load_checkpoint(success).config["reward"] == "success"
    assert load_checkpoint(env).config["reward"] == "env"
    assert load_checkpoint(tmp_path / "planner-P4G-env-seed1").config["seed"] == 1
    stamp = (success / "checkpoint.json").stat().st_mtime_ns
    bench.main([*argv, "--reuse", "--workers", "2"])  # worker processes this time
    assert (success / "checkpoint.json").stat().st_mtime_ns == stamp  # not trained again
    again = capsys.readouterr().out
    assert "training planner" not in again

    def results(summaries: list[dict]) -> list[dict]:  # the config block stamps its creation
        return [{k: v for k, v in row.items() if k != "config"} for row in summaries]

    rerun = json.loads((tmp_path / "report.json").read_text())["summaries"]
    assert results(rerun) == results(report["summaries"])
