"""benchmarks/threads.py (issue 18): the verdict, the table, clean worker envs, the load's end."""

from __future__ import annotations

import json
import subprocess
from types import SimpleNamespace

import pytest
from conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("threads")


def _pair(bench, workload: str, torch_s: float, chosen_s: float) -> list:
    return [
        bench.Measurement(workload, "chosen", 1, chosen_s),
        bench.Measurement(workload, "torch", 2, torch_s),
    ]


def test_the_verdict_allows_timing_noise_but_not_a_slower_default(bench):
    measurements = [
        *_pair(bench, "eval", torch_s=40.0, chosen_s=8.0),
        *_pair(bench, "ppo", torch_s=10.0, chosen_s=10.3),  # 3 % slower: noise
    ]
    assert bench.verdicts(measurements) == {"eval": True, "ppo": True}
    slower = _pair(bench, "ppo", torch_s=10.0, chosen_s=11.0)
    assert bench.verdicts(slower) == {"ppo": False}


def test_the_table_shows_both_times_their_threads_and_the_ratio(bench):
    table = bench.format_table(_pair(bench, "eval", 40.0, 8.0), episodes=5, ppo_steps=2000)
    assert "eval P4G-hard scripted, 5 episodes" in table
    assert "40.0 s (2 threads)" in table and "8.0 s (1 thread)" in table
    assert "5.00x" in table


def test_workers_get_no_thread_variables_and_report_json(bench, monkeypatch):
    seen = {}

    def fake_run(command, env, **kwargs):
        seen["command"], seen["env"] = command, env
        stdout = "noise\n" + json.dumps({"seconds": 1.5, "threads": 1.0}) + "\n"
        return SimpleNamespace(returncode=0, stdout=stdout, stderr="")

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("DIALOGUE_GYM_THREADS", "3")
    monkeypatch.setattr(bench.subprocess, "run", fake_run)
    measurement = bench.measure("ppo", "torch", episodes=2, ppo_steps=64)
    assert measurement == bench.Measurement("ppo", "torch", 1, 1.5)
    assert not set(bench.THREAD_VARIABLES) & set(seen["env"])
    assert seen["command"][2:6] == ["--worker", "ppo", "--mode", "torch"]


def test_a_failed_worker_names_itself(bench, monkeypatch):
    failed = SimpleNamespace(returncode=1, stdout="", stderr="Traceback ...\nBoom")
    monkeypatch.setattr(bench.subprocess, "run", lambda *a, **k: failed)
    with pytest.raises(RuntimeError, match="eval/chosen worker exited 1"):
        bench.measure("eval", "chosen", episodes=1, ppo_steps=1)


def test_the_competing_load_is_killed_when_the_block_ends(bench, monkeypatch):
    started = []
    real_popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        process = real_popen(*args, **kwargs)
        started.append(process)
        return process

    monkeypatch.setattr(bench.subprocess, "Popen", recording_popen)
    with pytest.raises(KeyError), bench.competing_load(2):
        assert all(process.poll() is None for process in started)
        raise KeyError("the run failed")
    assert len(started) == 2
    assert all(process.returncode is not None for process in started)


def test_bad_budgets_are_usage_errors(bench):
    with pytest.raises(SystemExit):
        bench.main(["--episodes", "0"])
