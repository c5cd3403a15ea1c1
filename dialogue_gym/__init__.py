"""dialogue_gym: PettingZoo/Gymnasium environments for proactive-dialogue RL.

Quick start::

    import dialogue_gym
    env = dialogue_gym.make("P4G-hard")          # a PettingZoo ParallelEnv
    obs, infos = env.reset(seed=0)
    obs, rewards, terms, truncs, infos = env.step({"system": "Hi! Have you heard of ..."})
"""

from dialogue_gym.cards import builtin_cards
from dialogue_gym.env import DialogueEnv
from dialogue_gym.evaluation import EvalResult, evaluate
from dialogue_gym.mind import BDI, LatentSpace, RewardWeights
from dialogue_gym.registry import (
    EnvSpec,
    RegistryError,
    make,
    pprint_registry,
    register,
    registry,
    spec,
)

__version__ = "0.1.0"

# The shipped catalog: card file → (task id, what soft and hard users are). Each card gets a
# ``-soft-v0`` and a ``-hard-v0`` env; cards are parsed only when an env is made.
CATALOG = {
    "p4g": (
        "P4G",
        "Persuasion for Good",
        "over-compliant donors",
        "donors who yield only to reasons",
    ),
    "esconv": (
        "ESConv",
        "emotional support",
        "easily soothed seekers",
        "seekers who need to be heard first",
    ),
    "ed": (
        "ED",
        "empathetic listening",
        "easily satisfied speakers",
        "speakers who need accurate validation",
    ),
    "cb": (
        "CB",
        "CraigslistBargain, system = buyer",
        "sellers who accept buyer-favourable deals",
        "sellers who hold their price",
    ),
    "merchant": (
        "Merchant",
        "merchant promotion sales call",
        "agreeable merchants",
        "merchants with latent concerns",
    ),
    "courier": (
        "Courier",
        "courier regional-bonus call",
        "agreeable couriers",
        "couriers with latent concerns",
    ),
}


def _register_catalog() -> None:
    shipped = set(builtin_cards())
    for card, (task, title, soft, hard) in CATALOG.items():
        if card not in shipped:
            continue
        for preset, who in (("soft", soft), ("hard", hard)):
            register(
                f"{task}-{preset}-v0",
                "dialogue_gym.env:DialogueEnv",
                description=f"{title}; {preset}: {who}",
                card=card,
                user=preset,
            )


_register_catalog()

__all__ = [
    "BDI",
    "CATALOG",
    "DialogueEnv",
    "EnvSpec",
    "EvalResult",
    "LatentSpace",
    "RegistryError",
    "RewardWeights",
    "__version__",
    "evaluate",
    "make",
    "pprint_registry",
    "register",
    "registry",
    "spec",
]
