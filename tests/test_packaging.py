"""Built wheels, installed in a fresh virtual environment, find the task cards and agents.

The fast checks read pyproject: setuptools builds the wheel from the explicit ``packages``
list, so a new subpackage (or a folder of data files, such as the calibration tables) missing
from it is silently left out of a non-editable install while every test run from the checkout
still passes.
"""

import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

SMOKE = """
import dialogue_gym
from dialogue_gym.cards.card import builtin_cards
from dialogue_gym.evaluation.agents import available_agents
assert "site-packages" in dialogue_gym.__file__, dialogue_gym.__file__
assert "p4g" in builtin_cards()
from dialogue_gym.calibration.fit import shipped_table
assert shipped_table("p4g") and shipped_table("cb") and shipped_table("p4g-persona")
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


def _setuptools() -> dict[str, Any]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return pyproject["tool"]["setuptools"]


def test_every_package_folder_is_listed() -> None:
    listed = set(_setuptools()["packages"])
    folders = set()
    for path in (ROOT / "dialogue_gym").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in {".py", ".json"}:
            folders.add(".".join(path.parent.relative_to(ROOT).parts))
    assert folders - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_data_files_are_declared_for_their_package() -> None:
    package_data = _setuptools()["package-data"]
    for path in (ROOT / "dialogue_gym").rglob("*.json"):
        package = ".".join(path.parent.relative_to(ROOT).parts)
        patterns = package_data.get(package, [])
        assert any(path.match(pattern) for pattern in patterns), f"{path} is not package data"
