"""Every script in examples/ runs as a user would run it, and prints what it promises."""

import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

# Arguments (the fast hashing encoder everywhere) and the output each example must contain.
RUNS = {
    "quickstart": (
        ["--agent", "random", "--encoder", "hashing"],
        ["exchange 1:", "success=", "hidden concerns:"],
    ),
    "random_agent": (
        ["--encoder", "hashing", "--episodes", "4"],
        ["strategies chosen:", "random_agent.py:RandomStrategyAgent", "P4G-soft-v0", "P4G-hard-v0"],
    ),
    "third_party_agent": (
        ["--encoder", "hashing", "--episodes", "4"],
        ["third_party_agent.py:ReasonGiver", "P4G-hard-v0", "first episode", "system:"],
    ),
    "openai_agent": (
        ["--encoder", "hashing", "--episodes", "2"],
        ["openai:test-model", "Save the Children", "replayed from the cache: identical=True"],
    ),
    "custom_task_card": (
        ["--encoder", "hashing"],
        ["loaded card 'Garden'", "[Garden-hard-v0]", "success: True"],
    ),
}


def test_every_example_is_covered():
    assert {path.stem for path in EXAMPLES} == set(RUNS)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path):
    args, expected = RUNS[path.stem]
    result = subprocess.run(
        [sys.executable, str(path), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{path.name} failed:\n{result.stdout}\n{result.stderr}"
    for text in expected:
        assert text in result.stdout, f"{path.name} did not print {text!r}:\n{result.stdout}"
    if path.stem == "openai_agent":
        check_openai_example(result.stdout)


def check_openai_example(out):
    """The live run reached the server; the replay sent nothing; no episode errored."""
    counts = [int(n) for n in re.findall(r"requests to the endpoint: (\d+)", out)]
    assert len(counts) == 2 and counts[0] > 0 and counts[0] == counts[1], out
    row = next(line for line in out.splitlines() if line.startswith("openai:"))
    assert row.split()[3] == "0", row  # the "errored" column


def test_throughput_benchmark_runs(monkeypatch, capsys):
    script = ROOT / "benchmarks" / "env_throughput.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--episodes", "2", "--env", "P4G-hard"])
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "P4G-hard" in out and "peak RSS" in out
