"""The shared GRPO objective and advantages against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dialogue_gym_agents.common.grpo import categorical_kl, grpo_loss, k3_kl
from dialogue_gym_agents.common.rl import discounted_returns, group_advantages


def test_group_advantages_normalize_within_each_group() -> None:
    adv = group_advantages([1.0, 3.0, 10.0, 10.0], ["a", "a", "b", "b"], eps=0.0)
    assert adv[:2] == pytest.approx([-1.0, 1.0])  # mean 2, population std 1
    assert adv[2:] == pytest.approx([0.0, 0.0])  # a constant group carries no signal


def test_discounted_returns_use_gamma() -> None:
    assert discounted_returns([1.0, 0.0, 2.0], gamma=0.5) == pytest.approx([1.5, 1.0, 2.0])


def test_clipping_and_k3_kl_by_hand() -> None:
    logp = torch.tensor([math.log(0.5), math.log(0.2)], requires_grad=True)
    old = torch.tensor([math.log(0.4), math.log(0.4)])  # ratios 1.25 and 0.5
    ref = torch.tensor([math.log(0.5), math.log(0.4)])
    out = grpo_loss(logp, old, torch.tensor([1.0, -1.0]), ref, clip=0.2, beta=0.1)
    # min(1.25·1, 1.2·1) = 1.2 and min(0.5·−1, 0.8·−1) = −0.8 → policy = −(1.2 − 0.8)/2.
    assert out.policy.item() == pytest.approx(-0.2)
    # k3: 0 for the first; e^{ln 2} − ln 2 − 1 for the second; mean over the two.
    assert out.kl.item() == pytest.approx((1.0 - math.log(2.0)) / 2)
    assert out.loss.item() == pytest.approx(-0.2 + 0.1 * (1.0 - math.log(2.0)) / 2)
    assert out.clip_fraction.item() == pytest.approx(1.0)
    assert out.ratio_mean.item() == pytest.approx(0.875)
    out.loss.backward()
    # Both ratios are clipped on the pessimistic side: only the KL term has a gradient,
    # d/dlogp [e^{ref−logp} − (ref−logp) − 1] = 1 − e^{ref−logp} = −1 for the second, ×β/2.
    assert logp.grad.tolist() == pytest.approx([0.0, -0.05])


def test_unclipped_gradient_is_minus_advantage_over_batch() -> None:
    logp = torch.zeros(2, requires_grad=True)
    out = grpo_loss(logp, torch.zeros(2), torch.tensor([0.5, -1.5]), beta=0.0)
    assert out.policy.item() == pytest.approx(0.5)
    out.loss.backward()
    assert logp.grad.tolist() == pytest.approx([-0.25, 0.75])


def test_token_level_mask_ignores_padding() -> None:
    logp = torch.tensor([[0.0, 0.0, 9.0], [0.0, 7.0, -3.0]], requires_grad=True)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    out = grpo_loss(
        logp, logp.detach().clone(), torch.tensor([1.0, 2.0]), torch.zeros(2, 3), mask=mask
    )
    assert out.policy.item() == pytest.approx(-1.5)  # per-sample token means 1 and 2
    # KL only over valid tokens, all of which equal the reference: 0 despite the padding.
    assert out.kl.item() == pytest.approx(0.0)


def test_categorical_kl_by_hand_and_as_explicit_kl() -> None:
    logits = torch.zeros(1, 2, requires_grad=True)
    ref = torch.log(torch.tensor([[0.25, 0.75]]))
    kl = categorical_kl(logits, ref)
    assert kl.item() == pytest.approx(0.5 * math.log(2.0) + 0.5 * math.log(2.0 / 3.0))
    logp = torch.log_softmax(logits, -1)[:, 0]
    out = grpo_loss(logp, logp.detach(), torch.tensor([0.0]), kl=kl, beta=1.0)
    assert out.kl.item() == pytest.approx(kl.item())
    assert k3_kl(torch.tensor([0.3]), torch.tensor([0.3])).item() == 0.0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"clip": 0.0}, "clip"),
        ({"beta": -1.0}, "beta"),
        ({"beta": 0.1}, "logp_ref"),
        ({"mask": torch.ones(2)}, "mask"),
    ],
)
def test_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        grpo_loss(torch.zeros(2), torch.zeros(2), torch.zeros(2), **kwargs)
    with pytest.raises(ValueError, match="advantages"):
        grpo_loss(torch.zeros(2), torch.zeros(2), torch.zeros(3), beta=0.0)
    assert np.isfinite(grpo_loss(torch.zeros(2), torch.zeros(2), torch.zeros(2), beta=0).loss)
