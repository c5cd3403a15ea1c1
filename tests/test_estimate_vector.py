"""An estimate ẑ given as a vector obeys the dict form's rule (issue 16, item 4).

The dict form goes through :class:`~dialogue_gym.mind.BDI`, which refuses NaN and values out
of range; a vector with NaN/inf used to flow into the reward as NaN / −inf.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from dialogue_gym.mind import BDI
from dialogue_gym.mind.encoders import HashingEncoder
from dialogue_gym.mind.latent import LatentSpace

HELLO = "Hi! How are you today? Have you heard of Save the Children?"


def true_vector(env: Any) -> np.ndarray:
    return env.latent.encode(BDI.from_dict(env.user.state.to_dict()))


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", ["text", "scalar"])
def test_non_finite_estimate_vector_is_refused(make_env: Any, bad: float, where: str) -> None:
    env = make_env(privileged=True)
    env.reset(seed=2)
    vector = true_vector(env)
    index = 5 if where == "text" else env.latent.size - 2
    vector[index] = bad
    with pytest.raises(ValueError, match=f"finite: coordinate {index} is {bad}"):
        env.step({"system": {"utterance": HELLO, "estimate": vector}})
    # The refused action left the episode as it was: the same step with a good estimate runs.
    assert env.exchange == 0 and len(env.history) == 0
    _, rewards, _, _, infos = env.step(
        {"system": {"utterance": HELLO, "estimate": true_vector(env)}}
    )
    assert all(math.isfinite(r) for r in rewards.values())
    assert infos["system"]["inference_error"] == pytest.approx(0.0, abs=1e-9)


def test_estimate_vector_scalars_obey_the_bdi_ranges(make_env: Any) -> None:
    env = make_env(privileged=True)
    env.reset(seed=2)
    size = env.latent.size
    for offset, value, name in (
        (3, 1.5, "receptivity"),
        (2, -0.1, "confidence"),
        (1, -2.0, "valence"),
    ):
        vector = true_vector(env)
        vector[size - offset] = value
        with pytest.raises(ValueError, match=f"coordinate {size - offset} \\({name}"):
            env.step({"system": {"utterance": HELLO, "estimate": vector}})
    with pytest.raises(ValueError, match="real numbers"):
        env.step({"system": {"utterance": HELLO, "estimate": ["x"] * size}})
    with pytest.raises(ValueError, match="shape"):
        env.step({"system": {"utterance": HELLO, "estimate": np.zeros(3)}})
    # The dict form is refused for the same values.
    state = env.user.state.to_dict()
    with pytest.raises(TypeError, match="real number"):
        env.step({"system": {"utterance": HELLO, "estimate": {**state, "valence": math.nan}}})
    with pytest.raises(ValueError, match="outside"):
        env.step({"system": {"utterance": HELLO, "estimate": {**state, "receptivity": 1.5}}})
    assert env.exchange == 0


def test_check_vector_scales_with_alpha() -> None:
    latent = LatentSpace(HashingEncoder(dim=8), alpha_rho=4.0, alpha_c=0.0)
    z = latent.encode(BDI("b", "d", "i", 1.0, 0.0, -1.0))
    assert latent.check_vector(list(z)).tolist() == z.tolist()
    z[-3] = 2.0 + 1e-6  # √4 · 1 is the top of the range
    with pytest.raises(ValueError, match=r"receptivity × √alpha = 2\) is 2.000001"):
        latent.check_vector(z)
    z[-3], z[-2] = 2.0, 0.5  # α_c = 0: the confidence coordinate is always 0
    with pytest.raises(ValueError, match="confidence"):
        latent.check_vector(z)
