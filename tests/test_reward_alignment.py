"""benchmarks/reward_alignment.py (issue 14): the AUC, the user-seat policies, a tiny run."""

import itertools
import math

import numpy as np
import pytest
from conftest import load_benchmark

from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.testing.user_policies import USER_POLICIES, BlindUserPolicy, refusal, twin


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("reward_alignment")


def test_auc_is_the_mann_whitney_probability(bench):
    assert bench.auc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert bench.auc([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1]) == 0.0
    assert bench.auc([0.5, 0.5, 0.5], [0, 1, 1]) == 0.5  # ties count half
    assert math.isnan(bench.auc([0.1, 0.2], [1, 1]))
    rng = np.random.default_rng(0)
    scores = rng.integers(0, 5, size=40).astype(float)  # many ties
    labels = rng.random(40) < 0.4
    pairs = [
        1.0 if p > n else 0.5 if p == n else 0.0
        for p, n in itertools.product(scores[labels], scores[~labels])
    ]
    assert bench.auc(scores, labels) == pytest.approx(np.mean(pairs))


@pytest.mark.parametrize("env_id", ["P4G-hard", "CB-hard"])
def test_rational_policy_says_what_the_simulator_says(make_env, fixed_system, env_id):
    from conftest import FixedSystem

    external = make_env(env_id, external=("user",), system_policy=fixed_system)
    internal = make_env(env_id, system_policy=FixedSystem())  # reset draws the same seeds
    external.reset(seed=3)
    internal.reset(seed=3)
    policy = BlindUserPolicy("rational")
    before = external.user.privileged()
    said = policy.act(external)
    assert external.user.privileged() == before  # the twin stepped, not the user
    internal.step({"system": fixed_system.text})
    assert said == internal.history[-1][1]


@pytest.mark.parametrize("env_id", ["P4G-hard", "ESConv-hard", "ED-hard", "CB-hard"])
def test_blind_policies_refuse_and_play_to_the_end(make_env, fixed_system, env_id):
    env = make_env(env_id, external=("user",), system_policy=fixed_system)
    for name in USER_POLICIES:
        policy = BlindUserPolicy(name)
        env.reset(seed=0)
        policy.reset()
        while env.agents:
            text = policy.act(env)
            if name == "always_refuse":
                assert classify_stance(text, env.card) == "refused"
            if name == "refuse_when_would_agree":
                assert classify_stance(text, env.card) != "agree"
            _, _, _, _, infos = env.step({"user": text})
        if name in ("always_refuse", "refuse_when_would_agree"):
            assert not infos["user"]["episode"]["success"]
    assert classify_stance(refusal(env.user, fixed_system.text), env.card) == "refused"
    shadow = twin(env.user)
    assert shadow is not env.user and shadow.card is env.user.card


def test_measure_env_tiny(bench):
    result = bench.measure_env("P4G-hard", episodes=2, encoder="hashing")
    assert set(result["agents"]) == {"scripted", "bad", "random", "stall"}
    assert result["agents"]["bad"]["agent"] == "pushy"
    for row in result["agents"].values():
        assert row["n"] == 2 and 0.0 <= row["sr"] <= 1.0
        assert {"return", "s_success", "s_failure", "s_max"} <= set(row)
        assert len(row["returns"]) == 2 and np.mean(row["returns"]) == pytest.approx(row["return"])
    assert set(result["user"]) == set(USER_POLICIES)
    assert all(row["n"] == 2 for row in result["user"].values())
    found = bench.checks(result)
    names = [name for name, _, _ in found]
    assert names[0].startswith("pooled AUC") and any("stall" in n for n in names)
    assert sum("rational r_U >" in n for n in names) == 3
    assert all(passed in (True, False, None) for _, passed, _ in found)
    assert "P4G-hard-v0" in bench.report(result, found)


def test_stall_gap_is_printed_with_its_paired_interval(bench):
    from dialogue_gym.metrics.bootstrap import paired_bootstrap_diff

    scripted = [0.9, 0.2, 0.8, 0.7, 0.1, 0.95]
    stall = [0.6, 0.5, 0.55, 0.6, 0.4, 0.5]
    rows = {
        "scripted": {"return": float(np.mean(scripted)), "returns": scripted},
        "stall": {"return": float(np.mean(stall)), "returns": stall},
    }
    result = {"agents": rows, "auc": 1.0, "has_ask": True, "s_success": [], "s_max": 1.0}
    result["user"] = None
    (_, passed, value) = next(c for c in bench.checks(result) if c[0].startswith("stall"))
    diff = paired_bootstrap_diff(scripted, stall)
    assert value == f"gap {diff.mean:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}]"
    assert diff.low < diff.mean < diff.high and passed is (diff.mean >= 0.15)
    # A row without per-episode returns (an older result file) keeps the bare gap.
    for row in rows.values():
        del row["returns"]
    (_, _, value) = next(c for c in bench.checks(result) if c[0].startswith("stall"))
    assert value == f"gap {diff.mean:+.3f}"
