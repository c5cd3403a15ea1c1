"""The suite's ``--evaluate-encoder NAME``: every ``evaluate`` call defaults to that encoder.

``python -m pytest tests/test_discrimination.py tests/test_task_*.py --evaluate-encoder static``
is how docs/environments.md checks the discrimination tests under the static encoder.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import with_default_encoder

from dialogue_gym.evaluation.run import evaluate

ROOT = Path(__file__).resolve().parents[1]


def _encoder_of(result) -> str:
    return result.summaries[0]["config"]["env"]["encoder"]


def test_the_wrapper_fills_in_the_encoder_only_where_a_call_names_none():
    wrapped = with_default_encoder(evaluate, "hashing")
    assert wrapped.__name__ == "evaluate"
    filled = wrapped(["scripted"], "P4G-hard", 1, progress=False)
    assert _encoder_of(filled) == "hashing"
    named = wrapped(["scripted"], "P4G-hard", 1, 0, None, {"encoder": "minilm"}, progress=False)
    assert _encoder_of(named) == "minilm"


def test_the_option_reaches_test_modules(request: pytest.FixtureRequest):
    """Under the option this module's own `evaluate` is the wrapped one."""
    chosen = request.config.getoption("--evaluate-encoder")
    if chosen is None:
        pytest.skip("runs under --evaluate-encoder (see the subprocess test below)")
    result = evaluate(["scripted"], ["P4G-hard"], episodes=1, progress=False)
    assert _encoder_of(result) == chosen


def test_the_suite_runs_under_the_option():
    target = f"{Path(__file__).name}::test_the_option_reaches_test_modules"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            target,
            "--evaluate-encoder",
            "hashing",
        ],
        cwd=ROOT / "tests",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
