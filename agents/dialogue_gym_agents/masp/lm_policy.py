"""MASP with LoRA causal-LM policies: seats, checkpoints and the agent (``--policy lm``).

``dialogue-gym train masp --policy lm`` runs the same three phases as the strategy-level
trainer (:mod:`dialogue_gym_agents.masp.train`) with :class:`~dialogue_gym_agents.common.lm.policy.
LMPolicy` policies in both seats:

0. the mentalizers (unchanged: the student's estimate is rendered into the system's prompt and
   the frozen teacher is the reward side);
1. the warm starts are ``sft-lora`` checkpoints of the system and the user seat (``--system-init``,
   ``--user-init``; a fresh adapter on ``--model`` otherwise), frozen as the KL references;
2. alternating GRPO self-play through the same :class:`~dialogue_gym_agents.masp.selfplay.
   SelfPlay` loop and the same :func:`~dialogue_gym_agents.common.selfplay.grpo_update`
   (token-level ratios and KL), with the prompt conditioning of Appendix B.5: the system's prompt
   carries the rendered student estimate ẑ = M(h) (:class:`StudentLMSeat`, which also hands the
   env ẑ for the inference reward term), the user's prompt its current BDI state and profile.

Each checkpoint of the run holds the adapters (``system-lm/``, ``user-lm/``: peft format, loadable
by vLLM, each with its frozen reference) next to the mentalizers; ``--agent masp:DIR`` then
plays the system adapter with its own student (:class:`MASPLMAgent`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from dialogue_gym.backends import Backend
from dialogue_gym.cards.card import TaskCard
from dialogue_gym_agents.common.checkpoint import Checkpoint, CorruptCheckpointError
from dialogue_gym_agents.common.lm.agent import LMAgent
from dialogue_gym_agents.common.lm.policy import LMPolicy, LMResponse, LMSeat, Messages
from dialogue_gym_agents.masp.mentalizers import LearnedStudent
from dialogue_gym_agents.masp.strategy_policy import as_history

__all__ = [
    "LM_DIRS",
    "MASPLMAgent",
    "StudentLMSeat",
    "lm_seats",
    "load_lm_policies",
    "save_lm_policies",
]

LM_DIRS: Mapping[str, str] = {"system": "system-lm", "user": "user-lm"}
"""The adapter folder of each seat inside a MASP checkpoint."""


def _rendered_estimate(student: LearnedStudent, observation: Mapping[str, Any]) -> tuple[Any, str]:
    """ẑ = M(h) from the visible history, and its text block over the BDI prior (B.5)."""
    z = student.predict(as_history(observation["history"]))
    return z, student.mentalizers.prior_renderer.render(z).render()


class StudentLMSeat(LMSeat):
    """The system seat of an LM policy that estimates the user's state with its own student.

    The prompt's control block is the student estimate rendered over the BDI prior (whatever the
    env's own ``student``); with ``emit_estimate`` the env action is ``{"utterance", "estimate":
    ẑ}`` so that the env adds the inference term ``−w_inf·‖ẑ − z‖²_A`` to ``r_S``.

    Args:
        card: The task card.
        student: The learned student mentalizer.
        tokenizer: The policy's tokenizer (prompt budget; ``None``: no budget).
        max_prompt_tokens: Prompt budget; the oldest turns are dropped to fit.
        context_turns: Most recent turns shown (``None``: all that fit).
        emit_estimate: Hand the env ẑ with the utterance (training) or say text only.
    """

    def __init__(
        self,
        card: TaskCard,
        student: LearnedStudent,
        tokenizer: Any = None,
        max_prompt_tokens: int | None = None,
        context_turns: int | None = None,
        emit_estimate: bool = True,
    ) -> None:
        super().__init__(card, "system", tokenizer, max_prompt_tokens, context_turns)
        self.student = student
        self.emit_estimate = emit_estimate
        self._estimate: np.ndarray | None = None

    def reset(self, seed: int | None = None) -> None:
        """Forgets the last estimate."""
        self._estimate = None

    def context(self, observation: Mapping[str, Any]) -> Messages:
        """The system prompt with the rendered student estimate as its control block."""
        self._estimate, rendered = _rendered_estimate(self.student, observation)
        return super().context({**observation, "estimate": rendered})

    def env_action(self, action: LMResponse, observation: Mapping[str, Any]) -> Any:
        """The reply text, with ẑ when ``emit_estimate``."""
        text = super().env_action(action, observation)
        if self.emit_estimate and self._estimate is not None:
            return {"utterance": text, "estimate": self._estimate}
        return text


def lm_seats(
    card: TaskCard,
    student: LearnedStudent,
    policies: Mapping[str, LMPolicy],
    max_prompt_tokens: int | None,
) -> Callable[[Any], dict[str, Any]]:
    """``seats(env)`` for :class:`~dialogue_gym_agents.masp.selfplay.SelfPlay` with LM policies."""

    def seats(env: Any) -> dict[str, Any]:
        return {
            "system": StudentLMSeat(card, student, policies["system"].tokenizer, max_prompt_tokens),
            "user": LMSeat(card, "user", policies["user"].tokenizer, max_prompt_tokens),
        }

    return seats


def save_lm_policies(folder: Path, policies: Mapping[str, LMPolicy]) -> list[str]:
    """Writes each seat's adapter and reference under ``folder``; returns the file names."""
    files: list[str] = []
    for seat, policy in policies.items():
        files += [f"{LM_DIRS[seat]}/{name}" for name in policy.save(folder / LM_DIRS[seat])]
    return files


def load_lm_policies(
    ckpt: Checkpoint,
    *,
    temperatures: Mapping[str, float],
    max_new_tokens: int,
    device: str,
    dtype: str,
    batch_size: int,
    backends: Mapping[str, Backend | None] | None = None,
) -> dict[str, LMPolicy]:
    """The trainable LM policies (adapter + frozen reference) of a MASP checkpoint.

    Raises:
        CorruptCheckpointError: The checkpoint records no LM policies, or they do not load.
        ModelNotFoundError: A base model path that no longer exists.
    """
    from dialogue_gym_agents.common.lm.agent import load_adapter_model

    bases = ckpt.info.get("lm_policies")
    if not isinstance(bases, Mapping) or set(bases) != set(LM_DIRS):
        raise CorruptCheckpointError(f"checkpoint {ckpt.path} records no LM policies")
    policies = {}
    for seat, folder in LM_DIRS.items():
        model, tokenizer, _ = load_adapter_model(
            ckpt, folder, device=device, trainable=True, base=bases[seat], dtype=dtype
        )
        policy = LMPolicy(
            model,
            tokenizer,
            temperature=temperatures[seat],
            max_new_tokens=max_new_tokens,
            backend=(backends or {}).get(seat),
            batch_size=batch_size,
            name=f"masp-{seat}",
        )
        policy.load_reference(ckpt.path / folder)
        policies[seat] = policy
    return policies


class MASPLMAgent(LMAgent):
    """The MASP LM system agent: its own student's estimate conditions every prompt (B.5).

    Args:
        card: The task card.
        seat: ``"system"`` (the only seat a MASP agent plays).
        backend: Generation backend (the adapted model locally, or an OpenAI-compatible server).
        tokenizer: The model's tokenizer (prompt budget; ``None``: none).
        student: The checkpoint's student mentalizer.
        **kwargs: :class:`~dialogue_gym_agents.common.lm.agent.LMAgent` options
            (``temperature``, ...).

    Raises:
        ValueError: ``seat`` is not the system's.
    """

    def __init__(
        self,
        card: TaskCard,
        seat: str,
        backend: Backend,
        tokenizer: Any = None,
        *,
        student: LearnedStudent,
        **kwargs: Any,
    ) -> None:
        if seat != "system":
            raise ValueError(f"a MASP agent plays the system seat, not {seat!r}")
        super().__init__(card, seat, backend, tokenizer, **kwargs)
        self.student = student

    def messages(self, observation: Mapping[str, Any]) -> list[dict[str, str]]:
        """The system prompt with the agent's own rendered student estimate."""
        _, rendered = _rendered_estimate(self.student, observation)
        return super().messages({**observation, "estimate": rendered})
