"""GRPO of a LoRA LM policy in one env seat (``--agent lm-grpo:DIR``; ``train lm-grpo``).

- :mod:`~dialogue_gym_agents.lm_grpo.config` — the run's settings.
- :mod:`~dialogue_gym_agents.lm_grpo.train` — rollouts through
  :func:`~dialogue_gym_agents.common.selfplay.play` and K GRPO steps per iteration; the warm
  start is an ``sft-lora`` checkpoint (:mod:`~dialogue_gym_agents.sft.warm_start`).
- :mod:`~dialogue_gym_agents.lm_grpo.agent` — the ``lm-grpo`` agent.
"""
