"""LLM-judged evaluations against the real test server: live, replayed, concurrent."""

import pytest

import dialogue_gym
from dialogue_gym.backends import CacheMiss
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.testing.server import TestServer


def judge_reply(body):
    prompt = "\n".join(m["content"] for m in body["messages"])
    if "NOT_RATIONAL" in prompt:
        return "RATIONAL"
    # Agree once the persuader has spoken five times: successes at a known exchange.
    return "agree" if prompt.count("Persuader") >= 6 else "positive"


def kwargs(server, cache, mode="rw"):
    return {
        "encoder": "hashing",
        "judges": "llm",
        "backend": "openai:test-judge",
        "backend_options": {"base_url": server.url, "api_key_env": "DG_TEST_KEY"},
        "backend_cache": str(cache),
        "cache_mode": mode,
    }


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("DG_TEST_KEY", "sk-test-do-not-leak-1234")
    with TestServer(replies=judge_reply) as srv:
        yield srv


def test_replay_reproduces_a_live_evaluation_with_zero_requests(server, tmp_path):
    cache = tmp_path / "calls.sqlite"
    live = evaluate(
        "scripted", "P4G-hard", episodes=4, progress=False, env_kwargs=kwargs(server, cache)
    )
    assert server.request_count > 0 and not any(r["errored"] for r in live.records)
    before = server.request_count
    replay = evaluate(
        "scripted",
        "P4G-hard",
        episodes=4,
        progress=False,
        concurrency=2,
        env_kwargs=kwargs(server, cache, "replay"),
    )
    assert server.request_count == before
    strip = lambda records: [{k: v for k, v in r.items() if k != "config_hash"} for r in records]  # noqa: E731
    assert strip(replay.records) == strip(live.records)
    assert "sk-test-do-not-leak-1234" not in cache.read_bytes().decode("latin-1")
    assert live.summaries[0]["usage"]["judge.success"]["calls"] > 0


def test_vector_env_coalesces_judge_calls_and_gives_the_same_records(server, tmp_path):
    cache = tmp_path / "calls.sqlite"
    lone = evaluate(
        "scripted", "P4G-hard", episodes=4, progress=False, env_kwargs=kwargs(server, cache, "off")
    )
    calls = server.request_count
    vec = evaluate(
        "scripted",
        "P4G-hard",
        episodes=4,
        progress=False,
        num_envs=4,
        env_kwargs=kwargs(server, cache, "off"),
    )
    assert vec.records == lone.records
    # The same requests, sent by one backend shared by the four sub-envs.
    assert server.request_count == 2 * calls
    assert vec.summaries[0]["usage"]["judge.success"] == lone.summaries[0]["usage"]["judge.success"]


def test_same_seed_determinism_in_replay_mode(server, tmp_path):
    cache = tmp_path / "calls.sqlite"
    actions = ["Hi! Have you heard of Save the Children?", "Even 50 cents helps. Would you donate?"]

    def play(mode):
        env = dialogue_gym.make("P4G-hard", **kwargs(server, cache, mode))
        out = [env.reset(seed=7)]
        out += [env.step({"system": a}) for a in actions if env.agents]
        return repr(out)

    recorded = play("rw")
    before = server.request_count
    assert play("replay") == play("replay") == recorded
    assert server.request_count == before


def test_replay_miss_marks_the_episode_errored(server, tmp_path):
    result = evaluate(
        "scripted",
        "P4G-hard",
        episodes=2,
        progress=False,
        env_kwargs=kwargs(server, tmp_path / "empty.sqlite", "replay"),
    )
    assert all(r["errored"] for r in result.records)
    assert server.request_count == 0
    assert (
        CacheMiss.__name__ in result.records[0]["error"]
        or "cache" in result.records[0]["error"].lower()
    )


def test_backend_failure_marks_errored_and_evaluation_goes_on(server, tmp_path):
    server.set_faults("500", fail_first=10_000)
    env_kwargs = kwargs(server, tmp_path / "c.sqlite", "off")
    env_kwargs["backend_options"] = {
        **env_kwargs["backend_options"],
        "max_retries": 1,
        "base_delay": 0.01,
    }
    result = evaluate("scripted", "P4G-hard", episodes=2, progress=False, env_kwargs=env_kwargs)
    assert [r["errored"] for r in result.records] == [True, True]
    assert result.summaries[0]["n_errored"] == 2
