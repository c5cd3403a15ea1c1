"""benchmarks/baselines.py (issues 6 and 14): one planner per reward, the SR ratio, a tiny run."""

from __future__ import annotations

import importlib.util
import math
import os
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
    module_spec = importlib.util.spec_from_file_location("baselines", SCRIPT)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_rewards_default_to_success_and_env(bench):
    assert bench.parse_args([]).rewards == ["success", "env"]
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


def test_paired_sr_pairs_the_labelled_rows(bench):
    def record(agent: str, seed: int, success: bool) -> dict:
        return {
            "agent": agent,
            "env_id": "P4G-hard-v0",
            "seed": seed,
            "success": success,
            "success_turn": 3 if success else None,
        }

    records = [record("planner[env]", s, True) for s in range(4)]
    records += [record("planner[success]", s, s < 2) for s in range(4)]
    line = bench.paired_sr(records, "P4G-hard-v0", "planner[env]", "planner[success]")
    assert line.startswith("P4G-hard-v0: planner[env] − planner[success] SR@8 = +0.50")
    assert "n = 4" in line


@pytest.mark.skipif(not DATA.is_dir(), reason=f"corpus copies not found at {DATA}")
def test_tiny_run_trains_one_planner_per_reward_and_reuses_them(bench, tmp_path, capsys):
    pytest.importorskip("stable_baselines3")
    argv = ["--tasks", "P4G", "--episodes", "2", "--ppo-steps", "64", "--encoder", "hashing"]
    argv += ["--data", str(DATA), "--out", str(tmp_path)]
    bench.main(argv)
    out = capsys.readouterr().out
    for label in ("random", "scripted", "sft-retrieval", "planner[success]", "planner[env]"):
        assert f"\n{label} " in out
    assert "P4G-hard-v0: SR planner[env] / planner[success] = " in out
    success, env = tmp_path / "planner-P4G-success", tmp_path / "planner-P4G-env"
    from dialogue_gym_agents.common.checkpoint import load_checkpoint

    assert load_checkpoint(success).config["reward"] == "success"
    assert load_checkpoint(env).config["reward"] == "env"
    stamp = (success / "checkpoint.json").stat().st_mtime_ns
    bench.main([*argv, "--reuse"])
    assert (success / "checkpoint.json").stat().st_mtime_ns == stamp  # not trained again
    assert "training planner" not in capsys.readouterr().out
