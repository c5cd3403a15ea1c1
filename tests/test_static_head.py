"""The static encoder's head: pooled features, training, storage (no MiniLM needed)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from dialogue_gym.mind.cosine_scale import calibration_texts
from dialogue_gym.mind.static_head import (
    CompiledHead,
    HeadConfig,
    apply_head,
    fit_head,
    head_texts,
    pack_head,
    pooled_features,
    unpack_head,
)

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None, reason="training the head needs torch"
)


def test_pooled_features_are_mean_max_min_and_zero_for_no_tokens() -> None:
    table = np.asarray([[1.0, -2.0], [3.0, 0.0], [-1.0, 4.0]], dtype=np.float32)
    features = pooled_features(table, [[0, 1], [], [2, 2, 0]])
    np.testing.assert_allclose(features[0], [2.0, -1.0, 3.0, 0.0, 1.0, -2.0])
    np.testing.assert_array_equal(features[1], np.zeros(6))
    np.testing.assert_allclose(features[2], [-1 / 3, 2.0, 1.0, 4.0, -1.0, -2.0], rtol=1e-6)
    assert features.dtype == np.float32


def _task(seed: int, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Targets a nonlinear function of the features (what a linear read-out cannot fit)."""
    rng = np.random.default_rng(seed)
    weights = rng.normal(size=(6, 8))  # drawn first: the same function for every n
    x = rng.normal(size=(n, 6)).astype(np.float32)
    y = np.tanh(x @ weights) + 0.5 * np.abs(x[:, :1])
    return x, y.astype(np.float32)


def _mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(axis=1).mean())


@needs_torch
def test_the_head_learns_to_point_where_the_targets_do() -> None:
    x, y = _task(0)
    config = HeadConfig(hidden=32, epochs=300)
    head = fit_head(x, y, config)
    assert all(v.dtype == np.float32 for v in head.values())
    untrained = fit_head(x, y, HeadConfig(hidden=32, epochs=1))
    assert _mean_cosine(apply_head(head, x), y) > 0.95
    assert _mean_cosine(apply_head(head, x), y) > _mean_cosine(apply_head(untrained, x), y) + 0.2
    held_out, expected = _task(0, n=600)
    held_out, expected = held_out[300:], expected[300:]  # same function, unseen points
    assert _mean_cosine(apply_head(head, held_out), expected) > 0.9


@needs_torch
def test_training_is_deterministic_and_packs_losslessly() -> None:
    x, y = _task(1)
    config = HeadConfig(hidden=16, epochs=20)
    first, second = fit_head(x, y, config), fit_head(x, y, config)
    flat, shapes = pack_head(first)
    assert flat.dtype == np.float32 and flat.ndim == 1
    np.testing.assert_array_equal(flat, pack_head(second)[0])
    restored = unpack_head(flat, shapes)
    for name, value in first.items():
        np.testing.assert_array_equal(restored[name], value)
    with pytest.raises(ValueError, match="packed head"):
        unpack_head(np.concatenate([flat, [0.0]]).astype(np.float32), shapes)
    assert not np.array_equal(pack_head(fit_head(x, y, HeadConfig(16, 20, seed=1)))[0], flat)


@needs_torch
@pytest.mark.parametrize(
    ("x", "y"),
    [
        (np.ones((3, 2)), np.ones((4, 2))),  # different numbers of texts
        (np.ones((1, 2)), np.ones((1, 2))),  # one text
        (np.ones(3), np.ones((3, 2))),  # not a matrix
    ],
)
def test_bad_fits_are_refused(x: np.ndarray, y: np.ndarray) -> None:
    with pytest.raises(ValueError):
        fit_head(x, y, HeadConfig(hidden=4, epochs=1))


@pytest.mark.parametrize(
    "kwargs", [{"hidden": 0}, {"epochs": 0}, {"learning_rate": 0.0}, {"weight_decay": -1.0}]
)
def test_bad_configs_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="a head needs"):
        HeadConfig(**kwargs)  # type: ignore[arg-type]


def test_head_texts_are_the_cards_sentences_once_each() -> None:
    texts = head_texts()
    assert len(texts) == len(set(texts)) > 1000
    assert set(texts) == {t for group in calibration_texts() for t in group}


def test_head_pairs_join_two_sentences_of_one_card() -> None:
    groups = calibration_texts()
    singles = head_texts()
    texts = head_texts(pairs=2, seed=3)
    assert texts[: len(singles)] == singles  # the sentences first, in card order
    assert texts == head_texts(pairs=2, seed=3)  # seeded
    assert texts != head_texts(pairs=2, seed=4)
    extra = texts[len(singles) :]
    assert len(extra) == len(set(extra)) > 1.9 * len(singles)
    cards = [set(group) for group in groups]
    for text in extra[:: max(1, len(extra) // 300)]:
        splits = [(text[:cut], text[cut + 1 :]) for cut in range(len(text)) if text[cut] == " "]
        assert any(a != b and a in card and b in card for a, b in splits for card in cards), text


def test_bad_pairs_are_refused() -> None:
    with pytest.raises(ValueError, match="pairs >= 0"):
        HeadConfig(pairs=-1)


@needs_torch
def test_the_compiled_head_is_the_trained_network_row_by_row() -> None:
    x, y = _task(2)
    head = fit_head(x, y, HeadConfig(hidden=16, epochs=30))
    z = (x - head["mean"]) / head["scale"]
    expected = np.maximum(z @ head["w1"] + head["b1"], 0) @ head["w2"] + z @ head["skip"]
    compiled = CompiledHead.from_params(head)
    rows = compiled(x)
    np.testing.assert_allclose(rows, expected + head["bias"], rtol=1e-4, atol=1e-4)
    # A row never depends on the other rows of the call.
    alone = np.concatenate([compiled(x[i : i + 1]) for i in range(5)])
    np.testing.assert_array_equal(rows[:5], alone)
    np.testing.assert_array_equal(compiled(x[::-1])[::-1], rows)
