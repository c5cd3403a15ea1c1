"""The chat prompt of an LM policy for one seat, with the Appendix B.5 control block.

A seat's prompt is a chat: a system message that casts the model in the seat's role (the task
card's setting, role and goal, kept short for small models) and then the dialogue so far as
chat turns — the seat's own turns as ``assistant`` messages, the other side's as ``user``
messages. The model's next ``assistant`` message is the seat's next utterance; the tokenizer's
chat template renders it (so any chat model works, and an OpenAI-compatible server sees the
same messages).

**Control block (MASP Appendix B.5).** The latent state is rendered as a short text block in
the system message: the *system* seat sees the student mentalizer's estimate ẑ rendered over
the BDI prior (the env's ``observation["estimate"]``, present when the env has a student), the
*user* seat sees its own current BDI state z_t and its profile (``observation["state"]`` and
``["profile"]``). The corpus dialogues of SFT carry no BDI states, so SFT prompts have no
block; GRPO prompts have it whenever the env provides it.

Consecutive turns of one side are joined into one message (chat templates expect turns to
alternate), empty turns (non-verbal events) are left out, and a conversation the seat opens
starts with a fixed ``user`` cue, :data:`OPENING_CUE`. :func:`fit_prompt` drops the oldest turns
until the templated prompt fits a token budget.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dialogue_gym.cards.card import TaskCard

__all__ = [
    "OPENING_CUE",
    "PROMPT_VERSION",
    "SEATS",
    "encode_prompt",
    "encode_response",
    "fit_prompt",
    "observation_control",
    "observation_history",
    "seat_messages",
]

PROMPT_VERSION = "lm-seat-1"
"""Version of :func:`seat_messages` (stamped into checkpoints)."""

SEATS = ("system", "user")
"""Seat names; a seat's speaker id in observations is its index here."""

OPENING_CUE = "(The conversation starts. You speak first.)"
"""The user message before the first turn of a conversation the seat opens."""


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def seat_messages(
    card: TaskCard,
    seat: str,
    history: Sequence[tuple[str, str]],
    *,
    estimate: str = "",
    state: str = "",
    profile: str = "",
) -> list[dict[str, str]]:
    """The chat messages whose next assistant message is ``seat``'s next utterance.

    Args:
        card: The task card (setting, roles, goals).
        seat: ``"system"`` or ``"user"``.
        history: ``(role, text)`` turns so far, role ``"system"`` or ``"user"``.
        estimate: System seat: the rendered student estimate of the user's state.
        state: User seat: its rendered current BDI state.
        profile: User seat: its profile text.

    Raises:
        ValueError: Unknown seat or turn role.
    """
    if seat not in SEATS:
        raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
    if seat == "system":
        lines = [
            f"You are the {card.system_role} talking with a {card.user_role}. "
            f"{_one_line(card.description)}",
            f"Your goal: {_one_line(card.goal)}",
        ]
        if estimate.strip():
            lines += [f"Estimated state of the {card.user_role} (may be wrong):", estimate.strip()]
    else:
        lines = [
            f"You are the {card.user_role} talking with a {card.system_role}. "
            f"{_one_line(card.description)}",
            f"Your goal: {_one_line(card.user_goal or 'respond honestly as this person would.')}",
        ]
        if profile.strip():
            lines.append(f"Your profile: {_one_line(profile)}")
        if state.strip():
            lines += ["Your current state:", state.strip()]
    lines.append("Reply with your next turn only: one to three sentences.")
    messages: list[dict[str, str]] = [{"role": "system", "content": "\n".join(lines)}]
    for role, text in history:
        if role not in SEATS:
            raise ValueError(f"turn role must be one of {SEATS}, got {role!r}")
        text = str(text).strip()
        if not text:
            continue
        chat_role = "assistant" if role == seat else "user"
        if len(messages) == 1 and chat_role == "assistant":
            messages.append({"role": "user", "content": OPENING_CUE})
        if messages[-1]["role"] == chat_role:
            messages[-1] = {"role": chat_role, "content": messages[-1]["content"] + "\n" + text}
        else:
            messages.append({"role": chat_role, "content": text})
    if len(messages) == 1:
        messages.append({"role": "user", "content": OPENING_CUE})
    return messages


def encode_prompt(tokenizer: Any, messages: Sequence[Mapping[str, str]]) -> list[int]:
    """Token ids of the chat-templated prompt, ending with the assistant generation prompt.

    Templates with a thinking switch (Qwen3) are rendered with thinking off.
    """
    text = tokenizer.apply_chat_template(
        [dict(m) for m in messages],
        add_generation_prompt=True,
        tokenize=False,
        enable_thinking=False,
    )
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])


def fit_prompt(
    tokenizer: Any,
    card: TaskCard,
    seat: str,
    history: Sequence[tuple[str, str]],
    budget: int | None,
    context_turns: int | None = None,
    **control: str,
) -> tuple[list[dict[str, str]], list[int]]:
    """The seat's messages and prompt ids, dropping the oldest turns to fit ``budget`` tokens.

    Args:
        tokenizer: The model's tokenizer (``None``: no token budget, messages only).
        card: The task card.
        seat: The seat.
        history: ``(role, text)`` turns so far.
        budget: Most prompt tokens (``None``: no limit).
        context_turns: Keep at most this many most recent turns (``None``: all).
        **control: ``estimate=`` / ``state=`` / ``profile=`` (see :func:`seat_messages`).

    Returns:
        ``(messages, ids)``; ``ids`` is empty without a tokenizer. With no turns left the
        prompt may still exceed ``budget`` (a long control block): the caller decides.
    """
    turns = [t for t in history if str(t[1]).strip()]
    if context_turns is not None:
        turns = turns[len(turns) - context_turns :] if context_turns > 0 else []
    if tokenizer is None:
        return seat_messages(card, seat, turns, **control), []

    def build(keep: int) -> tuple[list[dict[str, str]], list[int]]:
        messages = seat_messages(card, seat, turns[len(turns) - keep :] if keep else [], **control)
        return messages, encode_prompt(tokenizer, messages)

    best = build(len(turns))
    if budget is None or len(best[1]) <= budget or not turns:
        return best
    low, high = 0, len(turns) - 1  # the most recent turns that fit: binary search on their number
    best = build(0)
    while low < high:
        middle = (low + high + 1) // 2
        candidate = build(middle)
        if len(candidate[1]) <= budget:
            low, best = middle, candidate
        else:
            high = middle - 1
    return best


def encode_response(tokenizer: Any, text: str, finished: bool = True) -> list[int]:
    """Token ids of a response: the text, then the end-of-turn (EOS) token when it ended.

    A response cut by the token limit (``finished=False``) has no end-of-turn token. The EOS
    token is the one chat models end an assistant turn with (``<|im_end|>`` for SmolLM2 and
    Qwen3 instruct models).
    """
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    if finished and tokenizer.eos_token_id is not None:
        ids.append(int(tokenizer.eos_token_id))
    return ids


def observation_history(observation: Mapping[str, Any]) -> list[tuple[str, str]]:
    """An env observation's ``history`` as ``(role, text)`` pairs."""
    return [(SEATS[int(t["speaker"])], str(t["text"])) for t in observation["history"]]


def observation_control(seat: str, observation: Mapping[str, Any]) -> dict[str, str]:
    """The control block of a seat's observation (Appendix B.5): estimate, or state + profile."""
    if seat == "system":
        return {"estimate": str(observation.get("estimate", "") or "")}
    return {
        "state": str(observation.get("state", "") or ""),
        "profile": str(observation.get("profile", "") or ""),
    }
