"""The strategy planner (``planner``): a small policy network picks a strategy each turn.

- :mod:`~dialogue_gym_agents.planner.agent` — the features, the policy network, the realizer
  that words a strategy, and the ``planner`` agent.
- :mod:`~dialogue_gym_agents.planner.train` — ``dialogue-gym train planner``: supervised
  pretraining on the corpus's strategy labels, then PPO (stable-baselines3) in the env.
"""
