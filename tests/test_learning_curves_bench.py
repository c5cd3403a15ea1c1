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
    if sft:
        assert "sft (mean over seeds)" in results["lines"]
        assert len(results["sft"]) == 1 and 0.0 <= results["sft"][0] <= 1.0
    # MASP's run folders stay, pruned to the last iteration, and a rerun resumes them.
    kept = sorted(p.name for p in (tmp_path / "masp" / "P4G-hard" / "seed0").glob("iter-*"))
    assert len(kept) == 1
    again = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert again.returncode == 0, again.stderr[-2000:]
    resumed = json.loads((tmp_path / "curves.json").read_text())["P4G-hard"]
    for method, runs in results["methods"].items():
        assert resumed["methods"][method][0]["points"] == runs[0]["points"]
