import math

import numpy as np
import pytest

from dialogue_gym.mind import (
    BDI,
    CachedEncoder,
    HashingEncoder,
    LatentSpace,
    RewardWeights,
    discounted_returns,
    exchange_rewards,
    spared_rationality,
    system_reward,
    user_reward,
)


class TinyEncoder:
    """Maps known texts to fixed unit vectors (d = 2) so the math can be checked by hand."""

    name = "tiny"
    dim = 2

    def encode(self, texts):
        table = {"a": [1.0, 0.0], "b": [0.0, 1.0]}
        return np.array([table[t] for t in texts], dtype=np.float32)


def bdi(text: str, rho: float, c: float, v: float) -> BDI:
    return BDI(text, text, text, rho, c, v)


def test_z_vector_layout_and_scalar_prescaling():
    space = LatentSpace(TinyEncoder(), alpha_rho=4.0, alpha_c=1.0, alpha_v=0.25)
    z = space.encode(BDI("a", "b", "a", 0.5, 0.2, -1.0))
    assert space.size == 3 * 2 + 3
    np.testing.assert_allclose(z, [1, 0, 0, 1, 1, 0, 2 * 0.5, 0.2, 0.5 * -1.0])


def test_a_norm_of_known_vectors():
    space = LatentSpace(TinyEncoder())
    # A = diag(1/(3d) I_3d, 1, 1, 1) with d = 2 → 1/6 on the six text coordinates.
    x = np.array([1, 1, 1, 1, 1, 1, 0, 0, 0], dtype=float)
    assert space.sq_norm(x) == pytest.approx(1.0)
    y = np.array([0, 0, 0, 0, 0, 0, 1, 2, 2], dtype=float)
    assert space.sq_norm(y) == pytest.approx(9.0)
    assert space.sq_dist(x, y) == pytest.approx(10.0)


def test_progress_is_zero_at_start_and_one_at_target():
    space = LatentSpace(TinyEncoder())
    z0 = space.encode(bdi("a", 0.0, 0.1, -0.5))
    zs = space.encode(bdi("b", 1.0, 0.8, 0.5))
    assert space.progress(z0, z0, zs) == pytest.approx(0.0)
    assert space.progress(zs, z0, zs) == pytest.approx(1.0, abs=1e-5)
    midway = (z0 + zs) / 2
    assert space.progress(midway, z0, zs) == pytest.approx(0.5, abs=1e-5)
    assert space.progress(2 * z0 - zs, z0, zs) == pytest.approx(-1.0, abs=1e-5)


def test_progress_hand_computed():
    space = LatentSpace(TinyEncoder())
    z0 = np.zeros(9)
    zs = np.array([0, 0, 0, 0, 0, 0, 1, 0, 0], dtype=float)
    zt = np.array([6, 0, 0, 0, 0, 0, 0.25, 3, 0], dtype=float)  # text part: 6·6·(1/6)·0 = 0
    assert space.progress(zt, z0, zs) == pytest.approx(0.25 / (1 + 1e-6))


def test_reward_signs_and_weights():
    w = RewardWeights()
    assert (w.w_prog, w.w_inf, w.w_rat, w.gamma) == (1.0, 0.25, 0.5, 0.97)
    assert system_reward(0.2, w) == pytest.approx(0.2)
    assert system_reward(0.2, w, inference_error=0.4) == pytest.approx(0.2 - 0.1)
    assert system_reward(-0.1, w) < 0
    assert user_reward(0.2, 1, w) == pytest.approx(-0.2 + 0.5)
    assert user_reward(0.2, -1, w) == pytest.approx(-0.7)
    assert user_reward(0.0, 0, w) == 0.0


def test_a_rational_success_pays_the_user_the_exchanges_it_spares():
    w = RewardWeights()
    assert spared_rationality(0, w) == 0.0
    assert spared_rationality(2, w) == pytest.approx(0.5 * (0.97 + 0.97**2))
    # Agreeing rationally at exchange 6 of 8 earns what two more rational exchanges would have.
    held = discounted_returns([user_reward(0.0, 1, w)] * 3, w.gamma)[0]
    _, agreed = exchange_rewards(0.0, 1, w, success=True, remaining=2)
    assert agreed == pytest.approx(held)
    # Only a rational success: an unjustified concession, or an exchange that goes on, gets none.
    assert exchange_rewards(0.3, -1, w, success=True, remaining=5)[1] == user_reward(0.3, -1, w)
    assert exchange_rewards(0.3, 1, w, success=False, remaining=5)[1] == user_reward(0.3, 1, w)
    # The system's reward is the paper's in every case.
    assert exchange_rewards(0.3, 1, w, 0.4, True, 5)[0] == system_reward(0.3, w, 0.4)


def test_discounted_returns():
    assert discounted_returns([1.0, 0.0, 2.0], 0.5) == pytest.approx([1.5, 1.0, 2.0])


def test_bdi_validation():
    with pytest.raises(ValueError):
        BDI("b", "d", "i", 1.5, 0.5, 0.0)
    with pytest.raises(ValueError):
        BDI("b", "d", "i", 0.5, 0.5, -1.5)
    with pytest.raises(TypeError):
        BDI("b", "d", "i", math.nan, 0.5, 0.0)
    with pytest.raises(KeyError, match="valence"):
        BDI.from_dict(
            {"belief": "b", "desire": "d", "intention": "i", "receptivity": 1, "confidence": 1}
        )
    record = BDI("b", "d", "i", 0.5, 0.5, 0.0)
    assert BDI.from_dict(record.to_dict()) == record
    assert "Belief: b" in record.render()


def test_hashing_encoder_unit_rows_and_similarity():
    enc = HashingEncoder(dim=128)
    rows = enc.encode(["small donations help children", "donations help children", "zebra piano"])
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, rtol=1e-5)
    assert rows[0] @ rows[1] > rows[0] @ rows[2]
    assert np.linalg.norm(enc.encode([""])[0]) == pytest.approx(1.0)


def test_cached_encoder_encodes_each_text_once():
    calls = []

    class Counting(HashingEncoder):
        def encode(self, texts):
            calls.append(list(texts))
            return super().encode(texts)

    enc = CachedEncoder(Counting(dim=32))
    first = enc.encode(["x", "y", "x"])
    second = enc.encode(["y", "z"])
    assert calls == [["x", "y"], ["z"]]
    np.testing.assert_array_equal(first[1], second[0])
    assert enc.hits == 2 and enc.misses == 3
