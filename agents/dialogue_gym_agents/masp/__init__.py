"""MASP: mentalization-aware self-play (``--agent masp:DIR``; ``dialogue-gym train masp``).

Read in this order:

- :mod:`~dialogue_gym_agents.masp.config` — the run's settings, grouped by phase.
- :mod:`~dialogue_gym_agents.masp.silver` — phase 0's data: the silver BDI cache.
- :mod:`~dialogue_gym_agents.masp.mentalizers` — the teacher ``F(h, p_u, g)`` and the student
  ``M(h)``, their losses and training.
- :mod:`~dialogue_gym_agents.masp.strategy_policy` — the strategy-level policies, features and
  seats; :mod:`~dialogue_gym_agents.masp.warm_start` clones them (phase 1).
- :mod:`~dialogue_gym_agents.masp.lm_policy` — the LoRA causal-LM seats, adapters and agent.
- :mod:`~dialogue_gym_agents.masp.parameterization` — the interface the trainer uses for
  either parameterization (``--policy strategy`` / ``lm``).
- :mod:`~dialogue_gym_agents.masp.selfplay` — phase 2: alternating GRPO self-play.
- :mod:`~dialogue_gym_agents.masp.train` — the trainer: run folder, phases, resume.
- :mod:`~dialogue_gym_agents.masp.agent` — the checkpoint's models and the ``masp`` agent.
"""
