"""SI-AVPO: a student view trained against a privileged teacher view (``siavpo``).

Read in this order:

- :mod:`~dialogue_gym_agents.siavpo.policy` — the two views, the privileged features, the
  policy interface the trainer uses and the strategy-level policy.
- :mod:`~dialogue_gym_agents.siavpo.lm_policy` — the same interface on a LoRA causal LM.
- :mod:`~dialogue_gym_agents.siavpo.losses` — outcome and STPR advantages, the AOPD KL.
- :mod:`~dialogue_gym_agents.siavpo.users` — the user presets it trains and evaluates against.
- :mod:`~dialogue_gym_agents.siavpo.config` — the run's settings.
- :mod:`~dialogue_gym_agents.siavpo.train` — ``dialogue-gym train siavpo``.
- :mod:`~dialogue_gym_agents.siavpo.agent` — the ``siavpo`` agent (student view only).
"""
