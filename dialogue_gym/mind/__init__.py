"""Mental states: the BDI record, sentence encoders and the MASP latent space."""

from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import (
    CachedEncoder,
    Encoder,
    HashingEncoder,
    MiniLMEncoder,
    make_encoder,
)
from dialogue_gym.mind.latent import (
    LatentSpace,
    RewardWeights,
    discounted_returns,
    exchange_rewards,
    spared_rationality,
    system_reward,
    user_reward,
)

__all__ = [
    "BDI",
    "CachedEncoder",
    "Encoder",
    "HashingEncoder",
    "LatentSpace",
    "MiniLMEncoder",
    "RewardWeights",
    "discounted_returns",
    "exchange_rewards",
    "make_encoder",
    "spared_rationality",
    "system_reward",
    "user_reward",
]
