"""What every method shares: the training framework, the GRPO math and the LM utilities.

Nothing here imports a method folder (``baselines``, ``sft``, ``planner``, ``masp``,
``siavpo``, ``lm_grpo``); every method imports from here.

- :mod:`~dialogue_gym_agents.common.config` — dataclass configs with documented fields,
  turned into argparse options (``--help`` from the field help).
- :mod:`~dialogue_gym_agents.common.cli` — argv → config → train → checkpoint (the
  ``dialogue_gym.trainers`` entry-point group).
- :mod:`~dialogue_gym_agents.common.seeding` — per-run NumPy/torch generators; a sandbox for
  libraries that draw from the global random states.
- :mod:`~dialogue_gym_agents.common.tracking` — CSV (always) and TensorBoard (when
  installed) scalar logging; progress bars.
- :mod:`~dialogue_gym_agents.common.checkpoint` — atomic checkpoint folders with a hashed
  ``checkpoint.json`` manifest; loaders with clear errors.
- :mod:`~dialogue_gym_agents.common.rl` — discounted returns, advantage normalization,
  group-normalized (GRPO) advantages, episode outcome rates.
- :mod:`~dialogue_gym_agents.common.grpo` — the clipped GRPO surrogate with its KL terms.
- :mod:`~dialogue_gym_agents.common.policy` — the interface a GRPO-trained policy and its
  env seats offer (:class:`~dialogue_gym_agents.common.policy.GRPOPolicy`,
  :class:`~dialogue_gym_agents.common.policy.Seat`).
- :mod:`~dialogue_gym_agents.common.selfplay` — batched rollouts of such policies on env
  seats and the GRPO update over them (MASP and ``lm-grpo`` both train through it).
- :mod:`~dialogue_gym_agents.common.lm` — causal-LM utilities: base models and LoRA
  adapters, seat prompts, the LM policy, the LM agent, ``python -m
  dialogue_gym_agents.common.lm merge``.

A trainer module (``<method>/train.py``) defines a config dataclass (a :class:`TrainConfig`
subclass), a ``train(config) -> Path`` function that writes through a
:class:`CheckpointWriter`, and ``main(argv, prog)`` calling :func:`run_trainer`.

This package's ``__init__`` imports no torch; :mod:`.seeding`, :mod:`.grpo` and the LM modules do.
"""

from dialogue_gym_agents.common.checkpoint import (
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
from dialogue_gym_agents.common.cli import ENTRY_POINT_GROUP, run_trainer
from dialogue_gym_agents.common.config import (
    ConfigError,
    TrainConfig,
    build_parser,
    config_from_dict,
    config_to_dict,
    option,
    parse_config,
)
from dialogue_gym_agents.common.tracking import RunLogger, progress_bar, read_scalars

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
