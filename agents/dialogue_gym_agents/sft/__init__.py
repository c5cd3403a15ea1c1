"""Supervised fine-tuning on the task's corpus (``dialogue-gym train sft --method NAME``).

- :mod:`~dialogue_gym_agents.sft.config` — the settings every SFT method shares.
- :mod:`~dialogue_gym_agents.sft.retrieval` — ``sft-retrieval``: nearest-neighbour replies over
  sentence embeddings of the dialogue history: the index, the agent, its config and trainer.
- :mod:`~dialogue_gym_agents.sft.lora` — ``sft-lora``: LoRA fine-tuning of a causal LM on the
  seat's turns: its config, trainer and agent.
- :mod:`~dialogue_gym_agents.sft.warm_start` — an ``sft-lora`` checkpoint as the trainable LM
  policy (and KL reference) of the LM trainers.
- :mod:`~dialogue_gym_agents.sft.train` — the ``sft`` trainer's command line and its table of
  methods.
"""
