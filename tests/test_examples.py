import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", [str(path)])
    runpy.run_path(str(path), run_name="__main__")
    assert capsys.readouterr().out.strip()


def test_throughput_benchmark_runs(monkeypatch, capsys):
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "env_throughput.py"
    monkeypatch.setattr(sys, "argv", [str(script), "--episodes", "2", "--env", "P4G-hard"])
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "P4G-hard" in out and "peak RSS" in out
