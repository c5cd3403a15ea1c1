"""The training framework of the agent packages, and the ``dialogue-gym train`` trainers.

Generic pieces, shared by every trainer (SFT, planner, and later LoRA and GRPO trainers):

- :mod:`~dialogue_gym_agents.training.config` — dataclass configs with documented fields,
  turned into argparse options (``--help`` from the field help).
- :mod:`~dialogue_gym_agents.training.seeding` — per-run NumPy/torch generators; a sandbox for
  libraries that draw from the global random states.
- :mod:`~dialogue_gym_agents.training.tracking` — CSV (always) and TensorBoard (when
  installed) scalar logging; progress bars.
- :mod:`~dialogue_gym_agents.training.checkpoint` — atomic checkpoint folders with a hashed
  ``checkpoint.json`` manifest; loaders with clear errors.
- :mod:`~dialogue_gym_agents.training.rl` — discounted returns, advantage normalization,
  group-normalized (GRPO) advantages, episode outcome rates.
- :mod:`~dialogue_gym_agents.training.corpora` — task → corpus, training splits, strategy
  label mappings.
- :mod:`~dialogue_gym_agents.training.cli` — argv → config → train → checkpoint.

Trainers (entry-point group ``dialogue_gym.trainers``; ``dialogue-gym train NAME --help``):
``sft`` (:mod:`~dialogue_gym_agents.training.sft`) and ``planner``
(:mod:`~dialogue_gym_agents.training.planner`). A trainer module defines a config dataclass
(a :class:`TrainConfig` subclass), a ``train(config) -> Path`` function that writes through a
:class:`CheckpointWriter`, and ``main(argv, prog)`` calling :func:`run_trainer`.

This package imports no torch; the trainer modules and :mod:`.seeding` do.
"""

from dialogue_gym_agents.training.checkpoint import (
    Checkpoint,
    CheckpointError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CheckpointWriter,
    CorruptCheckpointError,
    ModelNotFoundError,
    check_backend_spec,
    check_card,
    load_checkpoint,
    resolve_model_path,
)
from dialogue_gym_agents.training.cli import ENTRY_POINT_GROUP, run_trainer
from dialogue_gym_agents.training.config import (
    ConfigError,
    TrainConfig,
    build_parser,
    config_from_dict,
    config_to_dict,
    option,
    parse_config,
)
from dialogue_gym_agents.training.tracking import RunLogger, progress_bar, read_scalars

__all__ = [
    "ENTRY_POINT_GROUP",
    "Checkpoint",
    "CheckpointError",
    "CheckpointMismatchError",
    "CheckpointNotFoundError",
    "CheckpointWriter",
    "ConfigError",
    "CorruptCheckpointError",
    "ModelNotFoundError",
    "RunLogger",
    "TrainConfig",
    "build_parser",
    "check_backend_spec",
    "check_card",
    "config_from_dict",
    "config_to_dict",
    "load_checkpoint",
    "option",
    "parse_config",
    "progress_bar",
    "read_scalars",
    "resolve_model_path",
    "run_trainer",
]
