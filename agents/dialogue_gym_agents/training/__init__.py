"""Training data shared by the trainers: task → corpus, training splits, strategy label maps.

The trainers themselves live with their method (``sft/train.py``, ``planner/train.py``,
``masp/train.py``, ``siavpo/train.py``, ``lm_grpo/train.py``); the framework they share is
:mod:`dialogue_gym_agents.common`. Only :mod:`~dialogue_gym_agents.training.corpora` is here.
"""
