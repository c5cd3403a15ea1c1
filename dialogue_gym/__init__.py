"""dialogue_gym: PettingZoo/Gymnasium environments for proactive-dialogue RL.

Quick start::

    import dialogue_gym
    env = dialogue_gym.make("P4G-hard")          # a PettingZoo ParallelEnv
    obs, infos = env.reset(seed=0)
    obs, rewards, terms, truncs, infos = env.step({"system": "Hi! Have you heard of ..."})
"""

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

register(
    "P4G-soft-v0",
    "dialogue_gym.env:DialogueEnv",
    description="Persuasion for Good, soft (over-compliant) simulated donors",
    card="p4g",
    user="soft",
)
register(
    "P4G-hard-v0",
    "dialogue_gym.env:DialogueEnv",
    description="Persuasion for Good, hard donors who yield only to reasons",
    card="p4g",
    user="hard",
)

__all__ = [
    "BDI",
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
