"""The embedded world must tell good persuasion from bad (100 seeded episodes, MiniLM)."""

import pytest

from dialogue_gym.evaluation.run import evaluate

EPISODES = 100


@pytest.fixture(scope="module")
def table():
    result = evaluate(
        ["pushy", "scripted"], ["P4G-soft", "P4G-hard"], episodes=EPISODES, progress=False
    )
    table = {(row["agent"], row["env_id"]): row for row in result.summaries}
    table["worst"] = result.worst_case()
    return table


def test_pushy_fails_on_hard_users(table):
    assert table["pushy", "P4G-hard-v0"]["sr"] <= 0.15


def test_scripted_succeeds_on_hard_users(table):
    assert table["scripted", "P4G-hard-v0"]["sr"] >= 0.45


def test_soft_users_are_biased_and_rcsr_catches_it(table):
    soft, hard = table["pushy", "P4G-soft-v0"], table["pushy", "P4G-hard-v0"]
    assert soft["sr"] >= hard["sr"] + 0.3
    assert soft["rcsr"] <= soft["sr"] - 0.3


def test_reasons_keep_rcsr_close_to_sr_on_hard_users(table):
    row = table["scripted", "P4G-hard-v0"]
    assert row["rcsr"] >= row["sr"] - 0.1


def test_worst_case_over_users_is_the_hard_user(table):
    env_id, value = table["worst"]["scripted"]["P4G"]["sr"]
    assert env_id == "P4G-hard-v0"
    assert value == table["scripted", "P4G-hard-v0"]["sr"]
