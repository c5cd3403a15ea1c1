"""The latent space of MASP: z-vectors, the A-metric, user-relative progress and rewards.

``z = [e_B; e_D; e_I; √α_ρ·ρ; √α_c·c; √α_v·v]`` with unit-normalized sentence embeddings e_*,
``A = diag(1/(3d)·I_3d, 1, 1, 1)`` and ``‖x‖²_A = xᵀAx`` (MASP Eqs. 8, 11, 12).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder

EPS_PROGRESS = 1e-6


@dataclasses.dataclass(frozen=True)
class RewardWeights:
    """Reward weights and the discount of MASP (defaults from the released code).

    Attributes:
        w_prog: Weight of the progress term Δs for both seats.
        w_inf: Weight of the system's inference error ‖ẑ − z‖²_A.
        w_rat: Weight of the user's rationality score q.
        gamma: Discount for returns.
    """

    w_prog: float = 1.0
    w_inf: float = 0.25
    w_rat: float = 0.5
    gamma: float = 0.97


class LatentSpace:
    """Encodes BDI records into z-vectors and measures them with the A-metric.

    Args:
        encoder: Sentence encoder for the three texts (unit rows of dimension d).
        alpha_rho: Scalar weight α_ρ (pre-scaled into z as √α_ρ·ρ).
        alpha_c: Scalar weight α_c.
        alpha_v: Scalar weight α_v.
    """

    def __init__(
        self,
        encoder: Encoder,
        alpha_rho: float = 1.0,
        alpha_c: float = 1.0,
        alpha_v: float = 1.0,
    ) -> None:
        for name, alpha in (("alpha_rho", alpha_rho), ("alpha_c", alpha_c), ("alpha_v", alpha_v)):
            if alpha < 0:
                raise ValueError(f"{name} must be non-negative, got {alpha}")
        self.encoder = encoder
        self.d = encoder.dim
        self._scale = np.sqrt(np.array([alpha_rho, alpha_c, alpha_v], dtype=np.float64))
        # The diagonal of A: 1/(3d) on the 3d text coordinates, 1 on the three scalars.
        self.a_diag = np.concatenate([np.full(3 * self.d, 1.0 / (3 * self.d)), np.ones(3)])

    @property
    def size(self) -> int:
        """Length of a z-vector: 3d + 3."""
        return 3 * self.d + 3

    def check_vector(self, vector: object) -> np.ndarray:
        """Validates a z-vector handed in by a policy (an estimate ẑ) and returns it as floats.

        The rule is the one :class:`~dialogue_gym.mind.BDI` applies to the dict form: every
        coordinate is a finite real number, and the three scalar coordinates lie in the range
        their fields map to (``√α·ρ`` and ``√α·c`` in ``[0, √α]``, ``√α·v`` in ``[−√α, √α]``).

        Args:
            vector: A sequence or array of ``3d + 3`` numbers.

        Returns:
            A new float64 array of shape ``(3d + 3,)``.

        Raises:
            ValueError: Wrong shape, not numbers, NaN/inf, or a scalar out of range (named).
        """
        try:
            array = np.array(vector, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"an estimate vector must hold real numbers: {exc}") from None
        if array.shape != (self.size,):
            raise ValueError(
                f"an estimate vector must have shape ({self.size},), got {array.shape}"
            )
        bad = np.flatnonzero(~np.isfinite(array))
        if bad.size:
            raise ValueError(
                f"an estimate vector must be finite: coordinate {int(bad[0])} is "
                f"{array[bad[0]]} ({bad.size} non-finite coordinate(s))"
            )
        for offset, (name, low) in enumerate(
            (("receptivity", 0.0), ("confidence", 0.0), ("valence", -1.0))
        ):
            index = 3 * self.d + offset
            scale = float(self._scale[offset])
            value = float(array[index])
            tolerance = 1e-9 * max(1.0, scale)
            if not low * scale - tolerance <= value <= scale + tolerance:
                raise ValueError(
                    f"an estimate vector's coordinate {index} ({name} × √alpha = {scale:g}) is "
                    f"{value}, outside [{low * scale:g}, {scale:g}] (the BDI {name} range "
                    f"[{low:g}, 1])"
                )
        return array

    def clip_scalars(self, vector: np.ndarray) -> np.ndarray:
        """A copy of z with its three scalar coordinates clipped to the BDI ranges.

        For learned estimators whose raw regression output may stray a little outside
        ``[0, 1]`` (ρ, c) or ``[−1, 1]`` (v): :meth:`check_vector` refuses such a vector.
        """
        out = np.array(vector, dtype=np.float64, copy=True)
        lows = np.array([0.0, 0.0, -1.0]) * self._scale
        out[3 * self.d :] = np.clip(out[3 * self.d :], lows, self._scale)
        return out

    def encode(self, bdi: BDI) -> np.ndarray:
        """Returns z for one record."""
        return self.encode_batch([bdi])[0]

    def encode_batch(self, records: Sequence[BDI]) -> np.ndarray:
        """Returns the ``(n, 3d + 3)`` matrix of z-vectors, encoding all texts in one call."""
        texts = [t for r in records for t in (r.belief, r.desire, r.intention)]
        emb = np.asarray(self.encoder.encode(texts), dtype=np.float64).reshape(len(records), -1)
        scalars = np.array(
            [[r.receptivity, r.confidence, r.valence] for r in records], dtype=np.float64
        ).reshape(len(records), 3)
        return np.concatenate([emb, scalars * self._scale], axis=1)

    def inner(self, x: np.ndarray, y: np.ndarray) -> float:
        """The A-inner product xᵀAy."""
        return float(np.dot(x * self.a_diag, y))

    def sq_norm(self, x: np.ndarray) -> float:
        """The squared A-norm ‖x‖²_A = xᵀAx."""
        return self.inner(x, x)

    def sq_dist(self, x: np.ndarray, y: np.ndarray) -> float:
        """‖x − y‖²_A."""
        return self.sq_norm(np.asarray(x) - np.asarray(y))

    def progress(self, z_t: np.ndarray, z_0: np.ndarray, z_star: np.ndarray) -> float:
        """User-relative progress s_t (MASP Eq. 13).

        ``s_t = (z_t − z_0)ᵀA(z* − z_0) / ((z* − z_0)ᵀA(z* − z_0) + ε)`` with ε = 1e-6: 0 at the
        user's own initial state, ≈1 at the target.
        """
        direction = z_star - z_0
        return self.inner(z_t - z_0, direction) / (self.sq_norm(direction) + EPS_PROGRESS)


def system_reward(
    delta_s: float, weights: RewardWeights, inference_error: float | None = None
) -> float:
    """``r_S = w_prog·Δs − w_inf·‖ẑ − z‖²_A``; the second term only when an estimate exists."""
    reward = weights.w_prog * delta_s
    if inference_error is not None:
        reward -= weights.w_inf * inference_error
    return reward


def user_reward(delta_s: float, q: int, weights: RewardWeights) -> float:
    """``r_U = −w_prog·Δs + w_rat·q``."""
    return -weights.w_prog * delta_s + weights.w_rat * q


def spared_rationality(remaining: int, weights: RewardWeights) -> float:
    """What a rational success pays the user for the ``remaining`` exchanges it spares.

    ``w_rat·Σ_{k=1}^{n} γ^k`` for ``n = remaining``. ``r_U`` pays ``w_rat·q`` per exchange, so
    without this a user that never lets the episode end earns more than one that agrees when
    a rational user would: an always-refusing user out-earned the simulator on Merchant-hard
    (3.09 against 2.64, against ``scripted``), and a trained MASP user policy learned to refuse
    everything. Paying a rational success what staying rational to the last exchange would have
    earned makes the episode's length worth nothing to the user: only the progress it concedes
    and how rational it is count.
    """
    gamma = weights.gamma
    return weights.w_rat * sum(gamma**k for k in range(1, max(0, int(remaining)) + 1))


def exchange_rewards(
    delta_s: float,
    q: int,
    weights: RewardWeights,
    inference_error: float | None = None,
    success: bool = False,
    remaining: int = 0,
) -> tuple[float, float]:
    """``(r_S, r_U)`` of one exchange.

    Args:
        delta_s: The progress the exchange made, Δs.
        q: The rationality judge's score of the user's reply.
        weights: The reward weights and discount.
        inference_error: ``‖ẑ − z‖²_A`` when the system gave an estimate.
        success: The exchange ended the episode in success.
        remaining: Exchanges left in the budget after this one.
    """
    r_user = user_reward(delta_s, q, weights)
    if success and q > 0:
        r_user += spared_rationality(remaining, weights)
    return system_reward(delta_s, weights, inference_error), r_user


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """Returns ``G_t = Σ_k γ^k r_{t+k}`` for every step."""
    out: list[float] = []
    acc = 0.0
    for reward in reversed(rewards):
        acc = reward + gamma * acc
        out.append(acc)
    return out[::-1]
