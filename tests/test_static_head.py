"""The static encoder's linear head: pooled features and the ridge fit (no model needed)."""

from __future__ import annotations

import numpy as np
import pytest

from dialogue_gym.mind.cosine_scale import calibration_texts
from dialogue_gym.mind.static_head import fit_ridge_head, head_texts, pooled_features


def test_pooled_features_are_mean_max_min_and_zero_for_no_tokens() -> None:
    table = np.asarray([[1.0, -2.0], [3.0, 0.0], [-1.0, 4.0]], dtype=np.float32)
    features = pooled_features(table, [[0, 1], [], [2, 2, 0]])
    np.testing.assert_allclose(features[0], [2.0, -1.0, 3.0, 0.0, 1.0, -2.0])
    np.testing.assert_array_equal(features[1], np.zeros(6))
    np.testing.assert_allclose(features[2], [-1 / 3, 2.0, 1.0, 4.0, -1.0, -2.0], rtol=1e-6)
    assert features.dtype == np.float32


def test_ridge_head_recovers_a_linear_map_with_its_bias() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(400, 6))
    weights, bias = rng.normal(size=(6, 3)), np.asarray([5.0, -3.0, 0.5])
    head = fit_ridge_head(x, x @ weights + bias, ridge=1e-6)
    assert head.shape == (7, 3) and head.dtype == np.float32
    np.testing.assert_allclose(head[:-1], weights, atol=1e-4)
    np.testing.assert_allclose(head[-1], bias, atol=1e-4)  # the bias is not shrunk


def test_a_large_ridge_shrinks_the_weights_towards_the_mean_target() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(100, 4))
    y = x @ rng.normal(size=(4, 2)) + 2.0
    head = fit_ridge_head(x, y, ridge=1e9)
    assert np.abs(head[:-1]).max() < 1e-5
    np.testing.assert_allclose(head[-1], y.mean(axis=0), atol=1e-3)


@pytest.mark.parametrize(
    ("x", "y", "ridge"),
    [
        (np.ones((3, 2)), np.ones((4, 2)), 1.0),  # different numbers of texts
        (np.ones((1, 2)), np.ones((1, 2)), 1.0),  # one text
        (np.ones(3), np.ones((3, 2)), 1.0),  # not a matrix
        (np.ones((3, 2)), np.ones((3, 2)), 0.0),  # no penalty
    ],
)
def test_bad_fits_are_refused(x: np.ndarray, y: np.ndarray, ridge: float) -> None:
    with pytest.raises(ValueError):
        fit_ridge_head(x, y, ridge)


def test_head_texts_are_the_cards_sentences_once_each() -> None:
    texts = head_texts()
    assert len(texts) == len(set(texts)) > 1000
    assert set(texts) == {t for group in calibration_texts() for t in group}
