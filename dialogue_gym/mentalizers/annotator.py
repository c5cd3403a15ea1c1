"""The BDI annotator: MASP's Oracle Belief Updater (OBU, Appendix B.1) behind a backend.

For a dialogue prefix the OBU receives the task description, the role mapping, the dialogue
history (and the user's profile when available) and task-specific calibration hints, and
outputs exactly six fields: Belief, Desire, Intention, Receptivity, Confidence, Valence. The
paper runs it with temperature 0.2 and at most 320 tokens; those are the defaults here.

The output is read with :func:`dialogue_gym.llm.parsing.parse_bdi` (JSON or ``Field: value``
lines, scalars clamped into range). When fields are missing the annotator asks once more with
a format reminder; a second failure raises :class:`AnnotationError` naming the missing fields.
Backend failures propagate as :class:`~dialogue_gym.backends.BackendError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from dialogue_gym.backends import GenerationParams
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.llm import parsing, prompts
from dialogue_gym.mind.bdi import BDI

if TYPE_CHECKING:
    from dialogue_gym.backends import Backend

__all__ = ["COMPONENT", "AnnotationError", "BDIAnnotator"]

COMPONENT = "mentalizer.obu"


class AnnotationError(ValueError):
    """The annotator's output could not be read as a BDI record, even after a reminder.

    Attributes:
        missing: The fields missing from the last answer.
        output: The last raw answer.
    """

    def __init__(self, message: str, missing: Sequence[str] = (), output: str = "") -> None:
        super().__init__(message)
        self.missing = tuple(missing)
        self.output = output


class BDIAnnotator:
    """Annotates dialogue prefixes with the user's BDI state (see the module docstring).

    Args:
        card: The task card (description, roles, goal, target anchor, hints).
        backend: The text-generation backend.
        temperature: Sampling temperature (paper: 0.2).
        max_tokens: Token budget of an answer (paper: 320).
        hints: Calibration hints replacing :func:`dialogue_gym.llm.prompts.task_hints`.
    """

    def __init__(
        self,
        card: TaskCard,
        backend: Backend,
        temperature: float = 0.2,
        max_tokens: int = 320,
        hints: str | None = None,
    ) -> None:
        self.card = card
        self.backend = backend
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.hints = hints

    def config(self) -> dict[str, Any]:
        """The annotator's configuration (for stamping into outputs)."""
        return {
            "component": COMPONENT,
            "card": self.card.id,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "prompt_version": prompts.PROMPT_VERSION,
        }

    def messages(
        self, history: Sequence[tuple[str, str]], profile: str | None = None
    ) -> list[prompts.Message]:
        """The OBU prompt for a prefix."""
        return prompts.annotator_messages(self.card, history, profile, self.hints)

    def _ask(self, messages: list[prompts.Message]) -> str:
        params = GenerationParams(temperature=self.temperature, max_tokens=self.max_tokens)
        completions = self.backend.generate(messages, params, n=1, component=COMPONENT)
        return completions[0].text if completions else ""

    def annotate(self, history: Sequence[tuple[str, str]], profile: str | None = None) -> BDI:
        """The user's state after ``history`` (``(role, text)`` pairs; may be empty).

        Args:
            history: The dialogue prefix.
            profile: The user's profile text (teacher view), or ``None``.

        Raises:
            AnnotationError: The output lacked fields twice (the second time after a format
                reminder).
            BackendError: The backend failed (after its retries).
        """
        messages = self.messages(history, profile)
        output = self._ask(messages)
        result = parsing.parse_bdi(output)
        if result.ok:
            return result.to_bdi()
        retry = [
            *messages,
            {"role": "assistant", "content": output},
            prompts.annotator_reminder(self.card, result.missing),
        ]
        output = self._ask(retry)
        result = parsing.parse_bdi(output)
        if result.ok:
            return result.to_bdi()
        raise AnnotationError(
            f"the BDI annotator's output could not be read twice (missing: "
            f"{', '.join(result.missing)}); last output: {output[:200]!r}",
            result.missing,
            output,
        )
