"""Built wheels, installed in a fresh virtual environment, find the task cards and agents."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SMOKE = """
import dialogue_gym
from dialogue_gym.cards import builtin_cards
from dialogue_gym.agents import available_agents
assert "site-packages" in dialogue_gym.__file__, dialogue_gym.__file__
assert "p4g" in builtin_cards()
assert {"random", "scripted", "pushy"} <= set(available_agents())
env = dialogue_gym.make("P4G-hard", encoder="hashing")
obs, _ = env.reset(seed=0)
obs, *_ = env.step({"system": "Hi! Have you heard of Save the Children?"})
assert obs["system"]["history"][-1]["text"]
print("ok")
"""


def run(*cmd, cwd=None):
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{cmd}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_wheels_work_in_a_fresh_venv(tmp_path):
    pytest.importorskip("build")
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT))
    run(sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT / "agents"))
    wheels = sorted(str(p) for p in dist.glob("*.whl"))
    assert len(wheels) == 2
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    run(str(python), "-m", "pip", "install", "-q", *wheels)
    assert run(str(python), "-c", SMOKE, cwd=tmp_path).strip().endswith("ok")
