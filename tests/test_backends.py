"""Backends without a network: params, the fake backend, make_backend, the record/replay cache."""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from dialogue_gym.backends import (
    Backend,
    BackendError,
    CachedBackend,
    CacheMiss,
    Completion,
    FakeBackend,
    GenerationParams,
    ReplayCache,
    Usage,
    cache_key,
    make_backend,
    normalize_messages,
    scripted,
)

HI = [{"role": "user", "content": "Hi there"}]
CHAT = [
    {"role": "system", "content": "You are a persuader."},
    {"role": "user", "content": "Why should I donate?"},
]


# -- params, messages, usage ---------------------------------------------------------------------


def test_generation_params_defaults_and_validation():
    p = GenerationParams()
    assert (p.temperature, p.max_tokens, p.top_p, p.stop, p.seed) == (0.0, 256, 1.0, (), None)
    assert GenerationParams(stop=["\n", "END"]).stop == ("\n", "END")
    assert GenerationParams(stop="END").stop == ("END",)
    assert hash(GenerationParams(stop=["a"])) == hash(GenerationParams(stop=("a",)))
    assert GenerationParams(seed=5).sample_seed(2) == 7
    assert GenerationParams().sample_seed(2, default=10) == 12
    for bad in (
        {"temperature": -0.1},
        {"temperature": float("nan")},
        {"max_tokens": 0},
        {"max_tokens": 2.5},
        {"top_p": 0.0},
        {"top_p": 1.5},
        {"stop": [""]},
        {"seed": 1.5},
    ):
        with pytest.raises(ValueError):
            GenerationParams(**bad)
    assert GenerationParams(stop=("x",), seed=3).to_dict() == {
        "temperature": 0.0,
        "max_tokens": 256,
        "top_p": 1.0,
        "stop": ["x"],
        "seed": 3,
    }


def test_normalize_messages_validates_and_copies():
    src = [{"role": "user", "content": "a", "name": "extra"}]
    out = normalize_messages(src)
    assert out == [{"role": "user", "content": "a"}] and out[0] is not src[0]
    for bad in ([], "hello", [{"role": "bot", "content": "x"}], [{"role": "user", "content": 3}]):
        with pytest.raises(ValueError):
            normalize_messages(bad)  # type: ignore[arg-type]


def test_usage_adds():
    total = Usage(calls=1, prompt_tokens=2, cost_usd=0.5) + Usage(calls=2, errors=1, cache_hits=1)
    assert total == Usage(calls=3, prompt_tokens=2, cost_usd=0.5, errors=1, cache_hits=1)


# -- fake backend ----------------------------------------------------------------------------------


def test_fake_is_deterministic_per_messages_and_sample_index():
    a, b = FakeBackend(), FakeBackend()
    first = a.generate(CHAT, n=3)
    assert [c.text for c in first] == [c.text for c in b.generate(CHAT, n=3)]
    assert len({c.text for c in first}) == 3  # the sample index changes the text
    assert a.generate(HI)[0].text != first[0].text
    assert all(c.model == "fake" and not c.cached and c.finish_reason == "stop" for c in first)
    assert isinstance(a, Backend)


def test_fake_counts_usage_per_component():
    fake = FakeBackend(price_per_1k=(1.0, 2.0))
    fake.generate(CHAT, n=2, component="judge.success")
    fake.generate(HI, component="user")
    judge = fake.usage["judge.success"]
    assert judge.calls == 2 and judge.prompt_tokens == 2 * 8
    assert judge.cost_usd == pytest.approx((16 * 1.0 + judge.completion_tokens * 2.0) / 1000)
    assert fake.usage["user"].calls == 1
    assert fake.total_usage().calls == 3
    assert [c.component for c in fake.calls_log] == ["judge.success"] * 2 + ["user"]
    assert [c.sample_index for c in fake.calls_log] == [0, 1, 0]
    fake.reset_usage()
    assert fake.usage == {}


def test_fake_echo_stop_and_max_tokens():
    echo = make_backend("fake:echo")
    assert echo.generate(CHAT)[0].text == "Why should I donate?"
    cut = echo.generate(CHAT, GenerationParams(stop=("donate",)))[0]
    assert cut.text == "Why should I " and cut.finish_reason == "stop"
    short = echo.generate(CHAT, GenerationParams(max_tokens=2))[0]
    assert short.text == "Why should" and short.finish_reason == "length"
    assert short.completion_tokens == 2


def test_fake_custom_responder_gets_sample_index_and_params():
    seen = []

    def responder(messages, params, index):
        seen.append((messages[-1]["content"], params.temperature, index))
        return f"sample {index}"

    fake = FakeBackend(responder)
    out = fake.generate(HI, GenerationParams(temperature=0.7), n=2)
    assert [c.text for c in out] == ["sample 0", "sample 1"]
    assert seen == [("Hi there", 0.7, 0), ("Hi there", 0.7, 1)]


def test_scripted_list_dict_and_exhaustion():
    fake = scripted(["one", "two"])
    assert [fake.generate(HI)[0].text for _ in range(2)] == ["one", "two"]
    with pytest.raises(BackendError, match="exhausted"):
        fake.generate(HI, component="judge")
    assert fake.usage["judge"].errors == 1

    cyc = FakeBackend.scripted(["a", "b"], cycle=True)
    assert [c.text for c in cyc.generate(HI, n=5)] == ["a", "b", "a", "b", "a"]

    table = scripted({"donate": "Because it helps.", "Hi there": "Hello!"}, default="Hmm.")
    assert table.generate(HI)[0].text == "Hello!"
    assert table.generate(CHAT)[0].text == "Because it helps."
    assert table.generate([{"role": "user", "content": "weather?"}])[0].text == "Hmm."
    strict = scripted({"x": "y"})
    with pytest.raises(BackendError, match="no scripted reply"):
        strict.generate(HI)


def test_generate_batch_and_async_match_generate():
    fake = FakeBackend()
    reqs = [(CHAT, GenerationParams()), (HI, GenerationParams(max_tokens=3))]
    batch = fake.generate_batch(reqs, n=2)
    assert [len(x) for x in batch] == [2, 2]
    assert batch[0] == fake.generate(CHAT, n=2)
    assert batch[1] == fake.generate(HI, GenerationParams(max_tokens=3), n=2)
    assert asyncio.run(fake.agenerate(CHAT, n=2)) == batch[0]
    assert asyncio.run(fake.agenerate_batch(reqs, n=2)) == batch
    with pytest.raises(ValueError):
        fake.generate(HI, n=0)


def test_fake_delay_overlaps_in_async():
    fake = FakeBackend(delay=0.05)

    async def run():
        return await asyncio.gather(*(fake.agenerate(HI, component="c") for _ in range(10)))

    import time

    start = time.perf_counter()
    asyncio.run(run())
    assert time.perf_counter() - start < 0.4
    assert fake.usage["c"].calls == 10


# -- make_backend ------------------------------------------------------------------------------


def test_make_backend_specs(tmp_path):
    assert isinstance(make_backend("fake"), FakeBackend)
    assert make_backend("fake:echo").name == "fake:echo"
    fake = FakeBackend()
    assert make_backend(fake) is fake
    with pytest.raises(TypeError):
        make_backend(fake, delay=1.0)
    for bad in ("nope", "openai:", "hf:", "fake:what"):
        with pytest.raises(ValueError):
            make_backend(bad)
    with pytest.raises(ValueError, match="cache_mode"):
        make_backend("fake", cache=tmp_path / "c.sqlite", cache_mode="sometimes")
    cached = make_backend("fake", cache=tmp_path / "c.sqlite", cache_mode="replay")
    assert isinstance(cached, CachedBackend) and cached.mode == "replay"
    assert isinstance(cached, Backend) and cached.name == "fake"


def test_make_backend_hf_local_path_never_downloads(tmp_path):
    backend = make_backend(f"hf:{tmp_path / 'missing-model'}")
    with pytest.raises(BackendError, match="no local model"):
        backend.generate(HI)


# -- cache keys --------------------------------------------------------------------------------


def test_cache_key_is_canonical_and_sensitive_to_every_field():
    p = GenerationParams()
    base = cache_key("m", CHAT, p, 0)
    reordered = [{"content": m["content"], "role": m["role"]} for m in CHAT]
    assert cache_key("m", reordered, p, 0) == base
    assert len(base) == 64
    variants = [
        cache_key("m2", CHAT, p, 0),
        cache_key("m", CHAT[:1], p, 0),
        cache_key("m", CHAT, p, 1),
        cache_key("m", CHAT, GenerationParams(temperature=0.5), 0),
        cache_key("m", CHAT, GenerationParams(max_tokens=10), 0),
        cache_key("m", CHAT, GenerationParams(top_p=0.9), 0),
        cache_key("m", CHAT, GenerationParams(stop=("x",)), 0),
        cache_key("m", CHAT, GenerationParams(seed=0), 0),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_replay_cache_roundtrip_first_write_wins(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    cache = ReplayCache(path)
    c = Completion("hello", "m", prompt_tokens=3, completion_tokens=1, cost_usd=0.25)
    req = {"model": "m", "sample_index": 0, "messages": [], "params": {}}
    assert cache.put("k1", c, req) is True
    assert cache.put("k1", Completion("other", "m"), req) is False
    got = cache.get("k1")
    assert got == Completion("hello", "m", 3, 1, 0.25, cached=True, finish_reason="stop")
    assert "k1" in cache and "k2" not in cache and len(cache) == 1
    cache.close()
    reopened = ReplayCache(path)
    assert reopened.get("k1").text == "hello" and reopened.keys() == ["k1"]
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


# -- cached backend ------------------------------------------------------------------------------


def counter_responder():
    """Replies that differ on every call: only a cache can reproduce them."""
    counter = itertools.count()
    lock = threading.Lock()

    def respond(messages, params, index):
        with lock:
            k = next(counter)
        return f"reply #{k} to {messages[-1]['content']} (sample {index})"

    return respond


def test_rw_records_then_serves_hits(tmp_path):
    inner = FakeBackend(counter_responder(), price_per_1k=(1.0, 1.0))
    backend = make_backend(inner, cache=tmp_path / "c.sqlite")
    first = backend.generate(CHAT, n=2, component="judge")
    again = backend.generate(CHAT, n=2, component="judge")
    assert len(inner.calls_log) == 2
    assert [c.text for c in again] == [c.text for c in first]
    assert all(c.cached for c in again) and not any(c.cached for c in first)
    assert [(c.prompt_tokens, c.completion_tokens, c.cost_usd) for c in again] == [
        (c.prompt_tokens, c.completion_tokens, c.cost_usd) for c in first
    ]
    u = backend.usage["judge"]
    assert u.calls == 4 and u.cache_hits == 2
    assert u.cost_usd == pytest.approx(sum(c.cost_usd for c in first))  # hits cost nothing
    assert backend.usage is inner.usage


def test_partial_hits_generate_only_missing_sample_indices(tmp_path):
    inner = FakeBackend()
    backend = CachedBackend(inner, ReplayCache(tmp_path / "c.sqlite"))
    two = backend.generate(CHAT, n=2)
    five = backend.generate(CHAT, n=5)
    assert five[:2] == [Completion(**{**c.to_dict(), "cached": True}) for c in two]
    assert [c.sample_index for c in inner.calls_log] == [0, 1, 2, 3, 4]
    assert five[2:] == FakeBackend().generate(CHAT, n=5)[2:]


def test_replay_reproduces_a_live_run_and_never_calls_inner(tmp_path):
    path = tmp_path / "c.sqlite"
    reqs = [(CHAT, GenerationParams(temperature=0.9, seed=3)), (HI, GenerationParams())]
    live = make_backend(FakeBackend(counter_responder()), cache=path)
    recorded = live.generate_batch(reqs, n=3, component="judge")
    inner = FakeBackend(counter_responder())  # would answer differently
    replay = make_backend(inner, cache=path, cache_mode="replay")
    replayed = replay.generate_batch(reqs, n=3, component="judge")
    assert [[c.text for c in r] for r in replayed] == [[c.text for c in r] for r in recorded]
    assert all(c.cached for r in replayed for c in r)
    assert inner.calls_log == []
    with pytest.raises(CacheMiss, match="replay-only"):
        replay.generate(CHAT, GenerationParams(temperature=0.9, seed=3), n=4, component="judge")
    with pytest.raises(CacheMiss):
        asyncio.run(replay.agenerate([{"role": "user", "content": "new"}]))
    assert inner.calls_log == []  # a miss never reaches the inner backend
    assert isinstance(CacheMiss("x"), BackendError)
    assert replay.usage["judge"].errors == 1


def test_off_mode_bypasses_the_cache(tmp_path):
    inner = FakeBackend()
    backend = make_backend(inner, cache=tmp_path / "c.sqlite", cache_mode="off")
    backend.generate(HI)
    backend.generate(HI)
    assert len(inner.calls_log) == 2 and len(backend.cache) == 0


def test_failed_samples_do_not_lose_the_successful_ones(tmp_path):
    def flaky(messages, params, index):
        if index == 1:
            raise BackendError("sample 1 failed")
        return f"ok {index}"

    backend = make_backend(FakeBackend(flaky), cache=tmp_path / "c.sqlite")
    with pytest.raises(BackendError, match="sample 1 failed"):
        backend.generate(HI, n=3, component="j")
    assert len(backend.cache) == 2  # samples 0 and 2 were kept
    assert backend.usage["j"].errors == 1 and backend.usage["j"].calls == 2
    fixed = FakeBackend(lambda m, p, i: f"ok {i}")
    rerun = make_backend(fixed, cache=tmp_path / "c.sqlite")
    assert [c.text for c in rerun.generate(HI, n=3)] == ["ok 0", "ok 1", "ok 2"]
    assert [c.sample_index for c in fixed.calls_log] == [1]


def test_async_cached_backend(tmp_path):
    backend = make_backend("fake", cache=tmp_path / "c.sqlite")
    live = asyncio.run(backend.agenerate(CHAT, n=2))
    hit = asyncio.run(backend.agenerate(CHAT, n=2))
    assert [c.text for c in hit] == [c.text for c in live] and all(c.cached for c in hit)


DEFAULT_PARAMS = GenerationParams()


class ForeignBackend:
    """A backend that only implements the protocol (not BaseBackend)."""

    def __init__(self):
        self.name = "foreign"
        self.usage: dict[str, Usage] = {}
        self.requests = []

    def generate(self, messages, params=DEFAULT_PARAMS, n=1, component="default"):
        self.requests.append(n)
        return [Completion(f"{messages[-1]['content']}/{i}", self.name) for i in range(n)]

    async def agenerate(self, messages, params=DEFAULT_PARAMS, n=1, component="default"):
        return self.generate(messages, params, n, component)

    def generate_batch(self, requests, n=1, component="default"):
        return [self.generate(m, p, n, component) for m, p in requests]


def test_cache_wraps_a_protocol_only_backend(tmp_path):
    foreign = ForeignBackend()
    assert isinstance(foreign, Backend)
    backend = make_backend(foreign, cache=tmp_path / "c.sqlite")
    assert [c.text for c in backend.generate(HI, n=2)] == ["Hi there/0", "Hi there/1"]
    assert [c.text for c in backend.generate(HI, n=2)] == ["Hi there/0", "Hi there/1"]
    assert len(foreign.requests) == 2  # one per missing sample, none for the hits


def test_concurrent_threads_write_one_cache(tmp_path):
    path = tmp_path / "c.sqlite"
    errors = []

    def worker(w):
        try:
            backend = make_backend(FakeBackend(), cache=path)
            for k in range(30):
                # overlapping keys across workers: INSERT OR IGNORE keeps one row each
                backend.generate([{"role": "user", "content": f"q{k % 20}"}], n=2)
            backend.generate([{"role": "user", "content": f"own {w}"}])
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(ReplayCache(path)) == 20 * 2 + 8


def test_shared_cache_object_across_threads(tmp_path):
    backend = make_backend(FakeBackend(delay=0.001), cache=tmp_path / "c.sqlite")
    reqs = [([{"role": "user", "content": f"q{k}"}], GenerationParams()) for k in range(40)]
    threads = [threading.Thread(target=backend.generate_batch, args=(reqs,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(backend.cache) == 40


WRITER = textwrap.dedent(
    """
    import sys
    from dialogue_gym.backends import FakeBackend, make_backend
    path, worker = sys.argv[1], int(sys.argv[2])
    backend = make_backend(FakeBackend(), cache=path)
    for k in range(150):
        backend.generate([{"role": "user", "content": f"q{k}"}], n=2)
        backend.generate([{"role": "user", "content": f"w{worker}-{k}"}])
    print("done", worker)
    """
)


def test_two_processes_write_one_cache(tmp_path):
    path = tmp_path / "c.sqlite"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), str(w)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for w in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    cache = ReplayCache(path)
    assert len(cache) == 150 * 2 + 2 * 150
    expected = FakeBackend().generate([{"role": "user", "content": "q7"}], n=2)
    assert cache.get(cache_key("fake", [{"role": "user", "content": "q7"}], GenerationParams(), 1))
    hits = make_backend("fake", cache=path, cache_mode="replay").generate(
        [{"role": "user", "content": "q7"}], n=2
    )
    assert [c.text for c in hits] == [c.text for c in expected]
