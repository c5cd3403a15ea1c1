"""benchmarks/static_head_cv.py: leave-one-card-out cross-validation of the head's length."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import load_benchmark

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("static_head_cv")


def test_pair_rho_is_one_for_a_perfect_copy(bench):
    rng = np.random.default_rng(0)
    targets = rng.normal(size=(12, 8)).astype(np.float32)
    # An identity head: no hidden units contribute, the skip path copies the features.
    head = {
        "mean": np.zeros(8, np.float32),
        "scale": np.ones(8, np.float32),
        "w1": np.zeros((8, 1), np.float32),
        "b1": np.zeros(1, np.float32),
        "w2": np.zeros((1, 8), np.float32),
        "skip": np.eye(8, dtype=np.float32),
        "bias": np.zeros(8, np.float32),
    }
    assert bench.pair_rho(head, targets, targets) == pytest.approx(1.0)
    assert bench.pair_rho(head, targets, -targets[::-1]) < 0.9


def test_held_out_cards_are_never_trained_on(bench, monkeypatch):
    """Each fold's head is fitted without the held-out card's rows; in-sample beats held-out."""
    from dialogue_gym.mind.static_head import HeadConfig

    rng = np.random.default_rng(1)
    features = rng.normal(size=(60, 12)).astype(np.float32)
    targets = rng.normal(size=(60, 6)).astype(np.float32)  # unrelated: nothing to generalize
    cards = [np.arange(0, 20), np.arange(20, 40), np.arange(40, 60)]
    seen: list[int] = []
    fit = bench.fit_head

    def recording_fit(x, y, config):
        seen.append(len(x))
        return fit(x, y, config)

    monkeypatch.setattr(bench, "fit_head", recording_fit)
    inside, held_out = bench.cross_validate(
        HeadConfig(hidden=16, epochs=200), features, targets, cards
    )
    assert seen == [60, 40, 40, 40] and len(held_out) == 3
    assert inside > 0.5 and abs(float(np.mean(held_out))) < 0.3, (inside, held_out)


def test_epochs_must_be_positive(bench, capsys):
    with pytest.raises(SystemExit):
        bench.main(["--epochs", "0"])
    assert "--epochs must be positive" in capsys.readouterr().err
