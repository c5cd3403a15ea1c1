"""The OpenAI backend with the real ``openai`` client against the real test server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import pickle
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

openai = pytest.importorskip("openai")

from dialogue_gym.backends import (  # noqa: E402
    BackendError,
    CacheMiss,
    GenerationParams,
    OpenAIBackend,
    make_backend,
)
from dialogue_gym.testing import Fault, TestServer  # noqa: E402

KEY_ENV = "DIALOGUE_GYM_TEST_KEY"
KEY = "sk-dgtest-LEAKCHECK-7f3a9c1e5b"
HI = [{"role": "user", "content": "Hello there"}]


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


@pytest.fixture
def server():
    with TestServer(require_api_key=KEY) as srv:
        yield srv


def backend_for(srv: TestServer, **kwargs) -> OpenAIBackend:
    kwargs.setdefault("base_delay", 0.01)
    kwargs.setdefault("max_delay", 0.05)
    kwargs.setdefault("timeout", 2.0)
    return make_backend("openai:test-model", base_url=srv.url, api_key_env=KEY_ENV, **kwargs)


# -- the server itself -----------------------------------------------------------------------------


def test_server_speaks_openai_to_the_official_client(server):
    client = openai.OpenAI(base_url=server.url, api_key=KEY, max_retries=0)
    assert [m.id for m in client.models.list()] == ["test-model"]
    resp = client.chat.completions.create(model="any", messages=HI, n=2)
    assert [c.message.content for c in resp.choices] == ["echo: Hello there"] * 2
    assert resp.usage.prompt_tokens == 2 and resp.model == "any"
    chunks = list(
        client.chat.completions.create(
            model="any",
            messages=HI,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: Hello there"
    assert chunks[-1].usage.completion_tokens == 3
    assert [r.path for r in server.requests] == [
        "/v1/models",
        "/v1/chat/completions",
        "/v1/chat/completions",
    ]
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.url, api_key="wrong", max_retries=0).models.list()


def test_server_scripts_replies_and_applies_limits():
    with TestServer(["first reply", "second reply is longer than that"]) as srv:
        backend = backend_for(srv)
        assert backend.generate(HI)[0].text == "first reply"
        cut = backend.generate(HI, GenerationParams(max_tokens=3))[0]
        assert (cut.text, cut.finish_reason) == ("second reply is", "length")
        assert backend.generate(HI)[0].text == "echo: Hello there"  # script exhausted
        srv.set_replies(lambda body: f"T={body['temperature']}")
        assert backend.generate(HI, GenerationParams(temperature=0.5))[0].text == "T=0.5"
        stopped = backend.generate(HI, GenerationParams(stop=("=",)))[0]
        assert stopped.text == "T"
        assert srv.request_count == 5


def test_request_log_records_params_but_not_the_key(server):
    backend = backend_for(server)
    backend.generate(HI, GenerationParams(temperature=0.7, seed=11, stop=("x",)), n=3)
    bodies = [r.body for r in server.chat_requests]
    assert sorted(b["seed"] for b in bodies) == [11, 12, 13]  # sample i uses seed + i
    assert all(b["temperature"] == 0.7 and b["stop"] == ["x"] for b in bodies)
    assert all(r.authorized and r.status == 200 for r in server.requests)
    assert KEY not in repr(server.requests)


def test_fault_parsing():
    assert Fault.parse("429:0.5") == Fault("status", status=429, retry_after=0.5)
    assert Fault.parse("503") == Fault("status", status=503)
    assert Fault.parse("status:418").status == 418
    assert Fault.parse("timeout:1.5") == Fault("timeout", delay=1.5)
    assert Fault.parse(None) == Fault()
    with pytest.raises(ValueError):
        Fault.parse("explode")


def test_fault_schedules(server):
    backend = backend_for(server, max_retries=0)
    server.set_faults({1: Fault("status", status=503)})
    backend.generate(HI)
    with pytest.raises(BackendError, match="503"):
        backend.generate(HI)
    backend.generate(HI)
    server.set_faults(lambda i: "500" if i % 2 else None)
    assert [_ok(backend) for _ in range(4)] == [True, False, True, False]
    server.set_faults(["ok", "500"])
    assert [_ok(backend) for _ in range(3)] == [True, False, True]
    assert [r.fault for r in server.chat_requests[-3:]] == ["ok", "500", "ok"]


def _ok(backend) -> bool:
    try:
        backend.generate(HI)
    except BackendError:
        return False
    return True


# -- retries and faults ----------------------------------------------------------------------------


def test_429_retry_after_is_honoured(server):
    backend = backend_for(server, max_retries=5, base_delay=0.001)
    server.set_faults("429:0.2", fail_first=2)
    start = time.perf_counter()
    [reply] = backend.generate(HI, component="judge")
    elapsed = time.perf_counter() - start
    assert reply.text == "echo: Hello there"
    assert [r.status for r in server.chat_requests] == [429, 429, 200]
    gaps = [b.started - a.started for a, b in itertools.pairwise(server.requests)]
    assert all(g >= 0.19 for g in gaps), gaps  # waited Retry-After, not the 1 ms backoff
    assert 0.4 <= elapsed < 2.0
    usage = backend.usage["judge"]
    assert (usage.calls, usage.retries, usage.errors) == (1, 2, 0)


def test_retry_after_is_capped(server):
    backend = backend_for(server, max_retries=2, max_retry_after=0.05)
    server.set_faults("429:30")
    start = time.perf_counter()
    with pytest.raises(BackendError, match=r"429.*after 3 attempt"):
        backend.generate(HI)
    assert time.perf_counter() - start < 1.5  # bounded by the cap, not 30 s per retry


def test_backoff_grows_exponentially_and_jitter_is_seeded(server):
    state = random.getstate()
    backend = backend_for(server, max_retries=3, base_delay=0.05, max_delay=10.0, seed=1)
    server.set_faults("500")
    start = time.perf_counter()
    with pytest.raises(BackendError) as info:
        backend.generate(HI, component="j")
    elapsed = time.perf_counter() - start
    assert info.value.retryable and info.value.status == 500
    assert len(server.chat_requests) == 4
    # delays 0.05·2^k·jitter, jitter in [0.5, 1]: total in [0.175, 0.35]
    starts = [r.started for r in server.chat_requests]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert sum(gaps) >= 0.17 and elapsed < 1.5
    assert gaps[2] > gaps[0]
    assert random.getstate() == state  # the global RNG is untouched
    usage = backend.usage["j"]
    assert (usage.calls, usage.retries, usage.errors) == (0, 3, 1)
    a = backend_for(server, seed=7)
    b = backend_for(server, seed=7)
    from dialogue_gym.backends.openai_failures import Failure

    fail = Failure(True, "HTTP 500", "x")
    assert [a._delay(k, fail) for k in range(4)] == [b._delay(k, fail) for k in range(4)]


TRANSIENT = ["429:0", "500", "502", "503", "timeout:1", "malformed", "truncate", "disconnect"]


@pytest.mark.parametrize("fault", TRANSIENT)
def test_transient_fault_is_retried_then_succeeds(server, fault):
    backend = backend_for(server, timeout=0.3)
    server.set_faults(fault, fail_first=1)
    [reply] = backend.generate(HI, component="c")
    assert reply.text == "echo: Hello there"
    assert len(server.chat_requests) == 2
    assert backend.usage["c"].retries == 1 and backend.usage["c"].errors == 0


@pytest.mark.parametrize("fault", ["500", "timeout:1", "malformed", "truncate", "disconnect"])
def test_persistent_fault_raises_after_max_retries(server, fault):
    backend = backend_for(server, timeout=0.3, max_retries=2)
    server.set_faults(fault)
    with pytest.raises(BackendError, match="after 3 attempt") as info:
        backend.generate(HI, component="c")
    assert info.value.retryable
    assert len(server.chat_requests) == 3
    usage = backend.usage["c"]
    assert (usage.calls, usage.retries, usage.errors) == (0, 2, 1)


def test_truncated_stream_is_retried(server):
    backend = backend_for(server, stream=True)
    server.set_faults(["truncate", "ok"])
    [reply] = backend.generate(HI, component="s")
    assert reply.text == "echo: Hello there" and reply.completion_tokens == 3
    assert backend.usage["s"].retries == 1
    assert all(r.body["stream"] for r in server.chat_requests)


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_client_errors_are_not_retried(server, status):
    backend = backend_for(server)
    server.set_faults(f"status:{status}")
    with pytest.raises(BackendError, match=f"HTTP {status}") as info:
        backend.generate(HI, component="c")
    assert not info.value.retryable and info.value.status == status
    assert len(server.chat_requests) == 1
    assert backend.usage["c"].retries == 0 and backend.usage["c"].errors == 1


def test_connection_refused_is_retried_then_fails():
    with TestServer() as srv:
        url = srv.url
    backend = make_backend(
        "openai:m", base_url=url, api_key_env=KEY_ENV, base_delay=0.01, max_retries=2
    )
    with pytest.raises(BackendError, match="connection error after 3 attempt"):
        backend.generate(HI)


def test_missing_key_fails_without_a_request(monkeypatch, server):
    monkeypatch.delenv(KEY_ENV)
    backend = OpenAIBackend("m", api_key_env=KEY_ENV)  # no base_url: the key is required
    with pytest.raises(BackendError, match=f"{KEY_ENV} is not set") as info:
        backend.generate(HI)
    assert not info.value.retryable and server.request_count == 0


def test_batch_keeps_successes_when_one_request_keeps_failing(server, tmp_path):
    backend = backend_for(server, max_retries=1, cache=tmp_path / "c.sqlite")
    server.set_faults(
        lambda i, body: "500" if "doomed" in body["messages"][-1]["content"] else None
    )
    reqs = [([{"role": "user", "content": f"q{k}"}], GenerationParams()) for k in range(4)]
    reqs.insert(2, ([{"role": "user", "content": "doomed"}], GenerationParams()))
    with pytest.raises(BackendError):
        backend.generate_batch(reqs, component="b")
    assert len(backend.cache) == 4  # nothing lost
    usage = backend.usage["b"]
    assert (usage.calls, usage.errors, usage.retries) == (4, 1, 1)
    server.set_faults(None)
    server.reset()
    out = backend.generate_batch(reqs, component="b")
    assert [c[0].cached for c in out] == [True, True, False, True, True]
    assert len(server.chat_requests) == 1


# -- accounting and n ------------------------------------------------------------------------------


def test_tokens_and_cost_per_component(server):
    backend = backend_for(server, price_per_1k=(1.0, 2.0))
    backend.generate(HI, component="judge.success", n=2)
    backend.generate([{"role": "user", "content": "one two three four"}], component="user")
    judge, user = backend.usage["judge.success"], backend.usage["user"]
    assert (judge.calls, judge.prompt_tokens, judge.completion_tokens) == (2, 4, 6)
    assert judge.cost_usd == pytest.approx((4 * 1.0 + 6 * 2.0) / 1000)
    assert (user.calls, user.prompt_tokens, user.completion_tokens) == (1, 4, 5)


def test_n_param_strategy_sends_one_request(server):
    backend = backend_for(server, n_strategy="param")
    out = backend.generate(HI, GenerationParams(seed=5), n=3)
    assert len(out) == 3 and [c.text for c in out] == ["echo: Hello there"] * 3
    [req] = server.chat_requests
    assert req.body["n"] == 3 and req.body["seed"] == 5
    assert sum(c.prompt_tokens for c in out) == 2  # the prompt is billed once
    assert sum(c.completion_tokens for c in out) == 9


# -- concurrency -----------------------------------------------------------------------------------


def test_async_concurrency_is_limited():
    with TestServer(latency=0.1) as srv:
        backend = backend_for(srv, max_concurrency=3)
        reqs = [([{"role": "user", "content": f"q{k}"}], GenerationParams()) for k in range(10)]

        async def run():
            return await backend.agenerate_batch(reqs, component="a")

        start = time.perf_counter()
        out = asyncio.run(run())
        elapsed = time.perf_counter() - start
        assert [o[0].text for o in out] == [f"echo: q{k}" for k in range(10)]
        assert srv.max_in_flight == 3
        assert elapsed >= 0.35  # 10 requests / 3 lanes × 0.1 s
        # a second event loop gets its own client and semaphore
        assert len(asyncio.run(backend.agenerate(HI, n=4))) == 4
        assert srv.max_in_flight == 3


def test_gathered_agenerate_calls_share_the_limit():
    with TestServer(latency=0.05) as srv:
        backend = backend_for(srv, max_concurrency=2)

        async def run():
            return await asyncio.gather(
                *(backend.agenerate([{"role": "user", "content": f"{k}"}]) for k in range(8))
            )

        asyncio.run(run())
        assert srv.max_in_flight == 2 and len(srv.chat_requests) == 8


def test_sync_batch_uses_threads_within_the_limit():
    with TestServer(latency=0.1) as srv:
        backend = backend_for(srv, max_concurrency=4)
        reqs = [([{"role": "user", "content": f"q{k}"}], GenerationParams()) for k in range(8)]
        start = time.perf_counter()
        out = backend.generate_batch(reqs, n=1)
        elapsed = time.perf_counter() - start
        assert [o[0].text for o in out] == [f"echo: q{k}" for k in range(8)]
        assert srv.max_in_flight == 4 and elapsed < 0.7
        backend.close()


# -- record / replay -------------------------------------------------------------------------------


def test_replay_reproduces_a_live_run_with_zero_requests(tmp_path, monkeypatch):
    counter = iter(range(10**6))
    path = tmp_path / "judge.sqlite"
    reqs = [
        (
            [{"role": "user", "content": f"Did the user agree? #{k}"}],
            GenerationParams(temperature=1),
        )
        for k in range(3)
    ]
    with TestServer(lambda body: f"label-{next(counter)}") as srv:
        live = backend_for(srv, cache=path, price_per_1k=(0.5, 1.5))
        recorded = live.generate_batch(reqs, n=2, component="judge")
        live_requests = len(srv.chat_requests)
        assert live_requests == 6
        # a second rw run is served from the cache
        assert live.generate_batch(reqs, n=2, component="judge") == [
            [type(c)(**{**c.to_dict(), "cached": True}) for c in r] for r in recorded
        ]
        assert len(srv.chat_requests) == live_requests

        replay = backend_for(srv, cache=path, cache_mode="replay")
        replayed = replay.generate_batch(reqs, n=2, component="judge")
        async_replayed = asyncio.run(replay.agenerate(*reqs[1], n=2, component="judge"))
        assert len(srv.chat_requests) == live_requests  # zero new requests
        with pytest.raises(CacheMiss):
            replay.generate([{"role": "user", "content": "never seen"}], component="judge")
        assert len(srv.chat_requests) == live_requests
    for got, want in zip(replayed, recorded, strict=True):
        assert [
            (c.text, c.model, c.prompt_tokens, c.completion_tokens, c.cost_usd) for c in got
        ] == [(c.text, c.model, c.prompt_tokens, c.completion_tokens, c.cost_usd) for c in want]
        assert all(c.cached for c in got)
    assert [c.text for c in async_replayed] == [c.text for c in recorded[1]]
    # replay works with no key and no server at all
    monkeypatch.delenv(KEY_ENV)
    offline = make_backend(
        "openai:test-model", cache=path, cache_mode="replay", api_key_env=KEY_ENV
    )
    assert [c.text for c in offline.generate(*reqs[0], n=2)] == [c.text for c in recorded[0]]


# -- secrets ---------------------------------------------------------------------------------------


def test_api_key_never_leaks(tmp_path, caplog, capfd):
    caplog.set_level(logging.DEBUG)  # the openai client and httpx debug logs included
    texts: list[str] = []
    cache_path = tmp_path / "c.sqlite"
    with TestServer(require_api_key=KEY) as srv:
        backend = backend_for(srv, timeout=0.3, max_retries=1, cache=cache_path, stream=False)
        texts += [repr(backend), repr(backend.inner), str(vars(backend.inner))]
        texts += [repr(c) for c in backend.generate(HI, n=2, component="j")]
        srv.set_faults(["429:0", "500", "timeout:1", "malformed", "status:400"])
        for k in range(3):
            try:
                backend.generate([{"role": "user", "content": f"fail {k}"}], component="j")
            except BackendError as exc:
                texts += [str(exc), repr(exc), repr(exc.__cause__), repr(exc.__context__)]
        streaming = backend_for(srv, stream=True)
        texts += [repr(c) for c in streaming.generate(HI)]
        texts += [repr(backend.usage), repr(srv.requests)]
        texts.append(pickle.dumps(backend).decode("latin-1"))  # for worker processes
        clone = pickle.loads(pickle.dumps(backend))
        assert clone.generate(HI, n=2)[0].cached  # re-reads the key from the environment
        texts += [json.dumps(r.body) for r in srv.requests]
    # a wrong key: the server's 401 must not echo it, nor the error message
    with TestServer(require_api_key="sk-other") as srv:
        try:
            backend_for(srv).generate(HI)
        except BackendError as exc:
            texts += [str(exc), repr(exc)]
    backend.close()
    texts += [r.getMessage() for r in caplog.records] + [caplog.text]
    out, err = capfd.readouterr()
    texts += [out, err]
    blob = "\n".join(texts)
    assert "401" in blob and "429" in blob  # the failures did happen and were logged
    assert KEY not in blob
    for f in tmp_path.iterdir():
        assert KEY.encode() not in f.read_bytes(), f


# -- command line ----------------------------------------------------------------------------------


def test_server_cli(tmp_path):
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps(["from the file"]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dialogue_gym.testing.server",
            "--port",
            "0",
            "--replies",
            str(replies),
            "--fault",
            "503",
            "--fail-first",
            "1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        info = json.loads(proc.stdout.readline())
        assert info["url"] == url
        backend = make_backend(
            "openai:cli-model", base_url=url, api_key_env=KEY_ENV, base_delay=0.01
        )
        assert backend.generate(HI, component="c")[0].text == "from the file"
        assert backend.usage["c"].retries == 1
        assert backend.list_models() == ["test-model"]
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
    assert proc.returncode == 0


def test_server_loads_and_unloads_lora_adapters_like_vllm(server):
    import urllib.error
    import urllib.request

    def post(route, body):
        request = urllib.request.Request(
            server.url + route,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    assert post("/load_lora_adapter", {"lora_name": "p4g", "lora_path": "/x/v1"})[0] == 200
    assert post("/load_lora_adapter", {"lora_name": "p4g", "lora_path": "/x/v2"})[0] == 200
    assert server.lora_adapters == {"p4g": "/x/v2"}
    status, text = post("/unload_lora_adapter", {"lora_name": "p4g"})
    assert status == 200 and "removed" in text and server.lora_adapters == {}
    assert post("/unload_lora_adapter", {"lora_name": "p4g"})[0] == 404
    assert post("/load_lora_adapter", {"lora_name": "p4g"})[0] == 400  # no path
    assert [r.status for r in server.requests][-2:] == [404, 400]
