"""``benchmarks/learning_curves.py``: every method trains, resumes and is evaluated (tiny)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("DIALOGUE_GYM_DATA", ROOT.parent / "shared" / "datasets"))


def test_every_method_draws_a_curve_and_masp_resumes(tmp_path: Path) -> None:
    sft = DATA.is_dir()  # SFT needs the corpus copies (../shared/datasets)
    command = [
        sys.executable, str(ROOT / "benchmarks" / "learning_curves.py"), "--envs", "P4G-hard",
        "--methods", "planner", "masp", "masp-system-only", "siavpo", "--seeds", "0",
        "--budgets", "64",
        "--episodes", "2", "--no-bounds", "--encoder", "hashing", "--eval-encoder", "hashing",
        "--quick", "--out", str(tmp_path), *(["--sft", "--data", str(DATA)] if sft else []),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "curves.json").read_text())["P4G-hard"]
    assert set(results["methods"]) == {"planner", "masp", "masp-system-only", "siavpo"}
    for method, runs in results["methods"].items():
        (point,) = runs[0]["points"]
        # MASP trains until its updates have seen the budget; SI-AVPO sizes its iterations from
        # it (episodes that end early leave it a little short).
        assert point["steps"] >= (32 if method == "siavpo" else 64) and 0.0 <= point["sr"] <= 1.0
    assert {"scripted", "random"} <= set(results["lines"])
    if sft:  # retrieval, and the planner's supervised phase over listening moves (variants)
        variants = ("moves acts", "moves successful", "moves acts successful", "moves balanced")
        for kind in ("retrieval", "moves", "moves sampled", *variants):
            assert f"sft {kind} (mean over seeds)" in results["lines"]
            assert len(results["sft"][kind]) == 1 and 0.0 <= results["sft"][kind][0] <= 1.0
        assert (tmp_path / "sft-moves" / "P4G-hard" / "seed0" / "checkpoint.json").is_file()
        acts = tmp_path / "sft-moves-acts" / "P4G-hard" / "seed0" / "checkpoint.json"
        assert json.loads(acts.read_text())["config"]["move_labels"] == "acts"
    # MASP's run folders stay, pruned to the last iteration, and a rerun resumes them.
    kept = sorted(p.name for p in (tmp_path / "masp" / "P4G-hard" / "seed0").glob("iter-*"))
    assert len(kept) == 1
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = json.loads((tmp_path / "curves.json").read_text())["P4G-hard"]
    for method, runs in results["methods"].items():
        assert resumed["methods"][method][0]["points"] == runs[0]["points"]


def test_a_deal_task_reports_the_buyers_utility(tmp_path: Path) -> None:
    """CB is ranked by SL (buyer utility): the curve's points and the lines carry it."""
    command = [
        sys.executable, str(ROOT / "benchmarks" / "learning_curves.py"), "--envs", "CB-hard",
        "--view", "strategy", "--methods", "planner", "--seeds", "0", "--budgets", "64",
        "--episodes", "2", "--no-bounds", "--encoder", "hashing", "--eval-encoder", "hashing",
        "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "curves.json").read_text())["CB-hard"]
    (point,) = results["methods"]["planner"][0]["points"]
    assert 0.0 <= point["sl"] <= 1.0
    assert {"scripted SL", "random SL"} <= set(results["lines"])
    assert "SL" in done.stdout


def test_a_masp_ablation_is_its_own_curve(tmp_path: Path) -> None:
    """``--masp-option`` sets a MASPConfig field; the curve and its run folder carry its name."""
    command = [
        sys.executable, str(ROOT / "benchmarks" / "learning_curves.py"), "--envs", "P4G-hard",
        "--methods", "masp-system-only", "--masp-option", "beta=0", "--seeds", "0",
        "--budgets", "64", "--episodes", "1", "--no-bounds", "--encoder", "hashing",
        "--eval-encoder", "hashing", "--quick", "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "curves.json").read_text())["P4G-hard"]
    assert set(results["methods"]) == {"masp-system-only[beta=0]"}
    manifest = next((tmp_path / "masp-system-only[beta=0]" / "P4G-hard").rglob("checkpoint.json"))
    assert json.loads(manifest.read_text())["config"]["beta"] == 0
    wrong = subprocess.run(
        [*command[:6], "--masp-option", "betaa=0"], capture_output=True, text=True, check=False
    )
    assert wrong.returncode == 2 and "no field betaa" in wrong.stderr


def test_an_siavpo_ablation_is_its_own_curve(tmp_path: Path) -> None:
    """``--siavpo-option`` sets a SiavpoConfig field (outcome GRPO: no AOPD, no turn credit)."""
    command = [
        sys.executable, str(ROOT / "benchmarks" / "learning_curves.py"), "--envs", "P4G-hard",
        "--methods", "siavpo", "--siavpo-option", "aopd=false", "--siavpo-option",
        "turn_credit=false", "--seeds", "0", "--budgets", "64", "--episodes", "1", "--no-bounds",
        "--encoder", "hashing", "--eval-encoder", "hashing", "--quick", "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    label = "siavpo[aopd=False,turn_credit=False]"
    assert set(json.loads((tmp_path / "curves.json").read_text())["P4G-hard"]["methods"]) == {label}
    config = json.loads(next((tmp_path / label).rglob("checkpoint.json")).read_text())["config"]
    assert config["aopd"] is False and config["turn_credit"] is False
    wrong = subprocess.run(
        [*command[:6], "--siavpo-option", "aopdd=0"], capture_output=True, text=True, check=False
    )
    assert wrong.returncode == 2 and "SiavpoConfig has no field aopdd" in wrong.stderr


def test_worst_case_evaluates_the_soft_users_too(tmp_path: Path) -> None:
    """``--worst-case``: every point and line also on P4G-soft, with the worst of the two."""
    command = [
        sys.executable, str(ROOT / "benchmarks" / "learning_curves.py"), "--envs", "P4G-hard",
        "--methods", "planner", "masp-system-only", "--seeds", "0", "1", "--budgets", "64",
        "--episodes", "2", "--no-bounds", "--encoder", "hashing", "--eval-encoder", "hashing",
        "--quick", "--worst-case", "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads((tmp_path / "curves.json").read_text())["P4G-hard"]
    for runs in results["methods"].values():
        for run in runs:
            (point,) = run["points"]
            soft = point["by_user"]["P4G-soft"]
            assert point["worst_sr"] == min(point["sr"], soft["sr"])
            assert point["worst_rcsr"] == min(point["rcsr"], soft["rcsr"])
    lines = results["lines"]
    assert lines["scripted worst SR"] <= lines["scripted"]
    assert "worst SR" in done.stdout and "worst RCSR" in done.stdout
    # Two seeds: each figure is a mean with its 95 % t interval over seeds and the range.
    assert "(2 seeds)" in done.stdout and " [" in done.stdout.split("exchanges", 1)[1]


def test_worst_case_needs_a_soft_user_type(tmp_path: Path) -> None:
    from importlib import util

    path = ROOT / "benchmarks" / "learning_curves.py"
    spec = util.spec_from_file_location("learning_curves", path)
    assert spec is not None and spec.loader is not None
    module = util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.user_types("P4G-hard", worst_case=False) == ["P4G-hard"]
    assert module.user_types("P4G-hard", worst_case=True) == ["P4G-hard", "P4G-soft"]
    import pytest

    with pytest.raises(ValueError, match="no soft user type"):
        module.user_types("P4G-soft", worst_case=True)
