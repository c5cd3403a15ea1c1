"""Cosines of a cheaper encoder on MiniLM's scale (dialogue_gym.mind.cosine_scale)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from dialogue_gym.cards.card import builtin_cards, load_card
from dialogue_gym.mind.cosine_scale import (
    CosineMap,
    calibration_texts,
    fit_cosine_map,
    load_or_fit_cosine_map,
    on_reference_scale,
    within_card_cosines,
)
from dialogue_gym.mind.encoders import CachedEncoder, HashingEncoder


def test_the_map_is_monotone_anchored_and_reloads_exactly() -> None:
    rng = np.random.default_rng(0)
    reference = rng.uniform(-0.2, 0.95, 5000)
    source = 0.4 + 0.5 * reference  # a squeezed, shifted scale
    cosine_map = fit_cosine_map(source, reference)
    assert cosine_map.source[0] == -1.0 and cosine_map.source[-1] == 1.0
    assert cosine_map.reference[0] == -1.0 and cosine_map.reference[-1] == 1.0
    grid = np.linspace(-1, 1, 401)
    assert np.all(np.diff(cosine_map(grid)) >= 0)
    # Inverting the squeeze: 0.4 + 0.5 r maps back onto r.
    for r in (0.0, 0.3, 0.55, 0.9):
        assert cosine_map(0.4 + 0.5 * r) == pytest.approx(r, abs=0.02)
    again = CosineMap.from_dict(json.loads(json.dumps(cosine_map.to_dict())))
    assert again == cosine_map


def test_a_threshold_keeps_the_share_of_pairs_above_it() -> None:
    rng = np.random.default_rng(1)
    reference = np.clip(rng.normal(0.2, 0.2, 20000), -1, 1)
    source = np.clip(reference + rng.normal(0.3, 0.1, 20000), -1, 1)  # noisy and shifted
    cosine_map = fit_cosine_map(source, reference)
    mapped = cosine_map(source)
    for threshold in (0.3, 0.55, 0.7):
        assert np.mean(mapped >= threshold) == pytest.approx(
            np.mean(reference >= threshold), abs=0.01
        )


def test_map_keeps_dtype_and_floats() -> None:
    cosine_map = CosineMap((-1.0, 0.5, 1.0), (-1.0, 0.0, 1.0))
    values = np.asarray([0.5, 0.75], dtype=np.float32)
    out = cosine_map(values)
    assert out.dtype == np.float32 and out.tolist() == [0.0, 0.5]
    assert isinstance(cosine_map(0.75), float) and cosine_map(0.75) == 0.5


def test_bad_maps_are_refused() -> None:
    with pytest.raises(ValueError, match="increase"):
        CosineMap((-1.0, 0.5, 0.5, 1.0), (-1.0, 0.0, 0.1, 1.0))
    with pytest.raises(ValueError, match="decrease"):
        CosineMap((-1.0, 0.5, 1.0), (-1.0, 0.5, 0.2))
    with pytest.raises(ValueError, match="same"):
        fit_cosine_map(np.zeros(3), np.zeros(4))


def test_encoders_without_a_map_are_left_alone() -> None:
    encoder = HashingEncoder(dim=32)
    values = np.asarray([0.1, 0.9])
    assert encoder.to_reference_cosine(values) is values  # the protocol's default
    assert CachedEncoder(encoder).to_reference_cosine(values) is values  # forwards: identity
    # An encoder written before the method was part of the protocol: the cache supplies it.
    assert CachedEncoder(_Bare()).to_reference_cosine(0.3) == 0.3


class _Bare:
    """A third-party encoder with only the three original protocol members."""

    name, dim = "bare", 4

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.eye(4, dtype=np.float32)[: len(texts)]


class _Scaled:
    """An encoder whose map squeezes cosines, and a wrapper must forward to it."""

    name, dim = "scaled", 4

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.eye(4, dtype=np.float32)[: len(texts)]

    def to_reference_cosine(self, cosines):  # type: ignore[no-untyped-def]
        return cosines * 0.5


def test_wrappers_forward_to_the_inner_map() -> None:
    from dialogue_gym.env.vector.batching import BatchingEncoder, StepRounds

    assert CachedEncoder(_Scaled()).to_reference_cosine(0.8) == pytest.approx(0.4)
    batching = BatchingEncoder(CachedEncoder(_Scaled()), StepRounds())
    assert batching.to_reference_cosine(np.asarray([0.6]))[0] == pytest.approx(0.3)
    assert CachedEncoder(batching).to_reference_cosine(0.6) == pytest.approx(0.3)


def test_on_reference_scale_is_deprecated_and_forwards_to_the_encoder() -> None:
    values = np.asarray([0.2, 0.7])
    with pytest.warns(DeprecationWarning, match="to_reference_cosine"):
        assert on_reference_scale(HashingEncoder(dim=8), values) is values
    with pytest.warns(DeprecationWarning):
        assert on_reference_scale(CachedEncoder(_Scaled()), 0.8) == pytest.approx(0.4)
    with pytest.warns(DeprecationWarning):
        assert on_reference_scale(object(), 0.3) == 0.3  # no method: unchanged, as before


def test_calibration_texts_are_the_shipped_cards() -> None:
    groups = calibration_texts()
    assert len(groups) >= 6 and all(len(g) > 50 for g in groups)
    assert all(len(set(g)) == len(g) for g in groups)
    assert calibration_texts() == groups  # a fixed order
    # Every line the world compares with a threshold is in: the listener's acknowledgement
    # lines and the users' reply templates as well as the concern prototypes.
    p4g = set(groups[builtin_cards().index("p4g")])
    card = load_card("p4g")
    for concern in card.concerns:
        assert {*concern.unlock, *concern.voice, *concern.ack_partial, *concern.ack_resolved} <= p4g
    assert all(len(t.split()) >= 3 for g in groups for t in g)
    refusals = {t for t in card.replies["refuse"] if len(t.split()) >= 3}
    assert card.goal in p4g and refusals and refusals <= p4g


def test_within_card_pairs_only() -> None:
    encoder = HashingEncoder(dim=64)
    cosines = within_card_cosines(encoder, [["a b", "a c", "d"], ["e f", "e g"]])
    assert cosines.shape == (3 + 1,)


class _Refuses:
    """Stands in for the reference encoder under its name; must not be called."""

    name = HashingEncoder(dim=64).name

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise AssertionError("the cached map should have been read")


def test_fit_is_cached_and_a_damaged_cache_is_refitted(tmp_path: Path) -> None:
    groups = [["the cat sat", "a cat sat down", "dogs bark loudly", "a dog barked"]] * 2
    source, reference = HashingEncoder(dim=16), HashingEncoder(dim=64)
    first = load_or_fit_cosine_map(source, tmp_path, reference=reference, groups=groups)
    files = list(tmp_path.glob("cosine-map-*.json"))
    assert len(files) == 1 and not list(tmp_path.glob(".*tmp"))
    again = load_or_fit_cosine_map(source, tmp_path, reference=_Refuses(), groups=groups)
    assert again == first  # read from the cache, the reference is never called
    files[0].write_text("{not json")
    refit = load_or_fit_cosine_map(source, tmp_path, reference=reference, groups=groups)
    assert refit == first and CosineMap.from_dict(json.loads(files[0].read_text())) == first
    # Another reference encoder is another calibration: its own file.
    load_or_fit_cosine_map(source, tmp_path, reference=HashingEncoder(dim=32), groups=groups)
    assert len(list(tmp_path.glob("cosine-map-*.json"))) == 2
