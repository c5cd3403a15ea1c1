"""Prompts of the LLM judges: the task's success judge and the common rationality judge.

* **success judges** (MASP C.3, C.5, C.6, C.7) — the conversation so far, the latest exchange
  and the task's question; the answer options come from the card's label set
  (``card.success_judge.labels``) in the style the card names (``[llm] judge_prompt``, see
  :mod:`dialogue_gym.cards.sections`): ``stance`` (refused / neutral / positive / agree, each
  explained by the card's ``[llm.stance_meanings]`` or the generic wording), ``support``
  (ESConv's four emotional-outcome answers, mapped to worse / same / somewhat_better /
  resolved), ``listening`` (EmpatheticDialogues' four labels with "a generic sympathetic
  response is at most somewhat_better"), ``deal`` (CraigslistBargain's "They have reached a
  deal at [price]" / "They have not reached a deal") or ``generic`` (the card's labels and
  question). The speakers are the card's ``[llm] judge_speakers``.
* **the common rationality judge** (MASP C.2) — task context, the user's current mental state
  and the most recent exchange; the answer is RATIONAL or NOT_RATIONAL.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.llm.rendering import (
    DATA_NOTICE,
    LATEST_TAG,
    SYSTEM,
    USER,
    Message,
    render_dialogue,
    render_state,
    role_label,
    split_latest,
)
from dialogue_gym.mind.bdi import BDI

__all__ = [
    "EMOTION_LABELS",
    "STANCES",
    "STANCE_MEANINGS",
    "LabelOption",
    "judge_prompt_style",
    "judge_speakers",
    "rationality_judge_messages",
    "success_judge_messages",
    "success_options",
]


# -- speakers ----------------------------------------------------------------------------------


def judge_speakers(card: TaskCard) -> dict[str, str]:
    """Role → speaker label in judge prompts.

    The card's ``[llm] judge_speakers`` (the paper's names where it gives them), else the
    capitalised roles.
    """
    names = card.prompts.judge_speakers
    system, user = names or (role_label(card.system_role), role_label(card.user_role))
    return {SYSTEM: system, USER: user}


# -- success judges ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LabelOption:
    """One answer option of a success judge.

    Attributes:
        label: The card label it maps to.
        answer: What the model is asked to reply for it (the label itself, or a sentence).
        meaning: A short explanation shown next to a label answer (may be empty).
        aliases: Other phrasings the parser accepts for it.
    """

    label: str
    answer: str
    meaning: str = ""
    aliases: tuple[str, ...] = ()


STANCES = ("refused", "neutral", "positive", "agree")
STANCE_MEANINGS = {
    "refused": "the {user} has explicitly refused or declined",
    "neutral": "the {user} remains neutral or undecided",
    "positive": "the {user} has a positive attitude towards it but has not decided yet",
    "agree": "the {user} has clearly decided to do it (committed)",
}
_STANCE_ALIASES = {
    "refused": ("refuse", "refusal", "refuses", "declined", "decline", "declines", "rejected"),
    "neutral": ("undecided", "neutrality"),
    "positive": ("leaning towards", "leaning toward", "positive attitude"),
    "agree": ("agreed", "agrees", "committed", "has decided to donate", "decided to donate"),
}
EMOTION_LABELS = ("worse", "same", "somewhat_better", "resolved")
_EMOTION_ALIASES = {
    "worse": ("feels worse", "feel worse", "feeling worse"),
    "same": ("feels the same", "feel the same", "feeling the same", "no change", "unchanged"),
    "somewhat_better": (
        "feels better",
        "feel better",
        "feeling better",
        "somewhat better",
        "a bit better",
        "a little better",
        "better",
    ),
    "resolved": ("has been solved", "been solved", "is solved", "issue solved", "solved"),
}
DEAL, NO_DEAL = "deal", "no_deal"


def _emotion_sentences(patient: str) -> dict[str, str]:
    return {
        "worse": f"No, the {patient} feels worse",
        "same": f"No, the {patient} feels the same",
        "somewhat_better": f"No, but the {patient} feels better",
        "resolved": f"Yes, the {patient}'s issue has been solved",
    }


def judge_prompt_style(card: TaskCard) -> str:
    """The success judge's prompt style (one of ``card_sections.JUDGE_PROMPTS``).

    The card's ``[llm] judge_prompt``, else told from the labels: ``deal``, ``stance``,
    ``listening`` for the emotion labels under a label rule, ``support`` for them under a mean
    rule, else ``generic``.
    """
    if card.prompts.judge_prompt is not None:
        return card.prompts.judge_prompt
    spec = card.success_judge
    labels = set(spec.labels)
    if spec.kind == "deal" or labels == {DEAL, NO_DEAL}:
        return "deal"
    if labels == set(STANCES):
        return "stance"
    if labels == set(EMOTION_LABELS):
        return "listening" if spec.rule == "label" else "support"
    return "generic"


def success_options(card: TaskCard) -> tuple[LabelOption, ...]:
    """The answer options of the card's success judge, ordered by reward (lowest first)."""
    spec = card.success_judge
    speakers = judge_speakers(card)
    user = card.user_role
    flavour = judge_prompt_style(card)
    options: list[LabelOption] = []
    for label in sorted(spec.labels, key=lambda name: (spec.labels[name], name)):
        spaced = label.replace("_", " ")
        if flavour == "stance":
            meaning = (card.prompts.stance_meanings or STANCE_MEANINGS)[label]
            options.append(
                LabelOption(label, label, meaning.format(user=user), _STANCE_ALIASES[label])
            )
        elif flavour == "support":
            sentence = _emotion_sentences(speakers[USER])[label]
            aliases = (spaced, sentence, *_EMOTION_ALIASES[label])
            options.append(LabelOption(label, sentence, "", aliases))
        elif flavour == "listening":
            options.append(LabelOption(label, label, "", (spaced, *_EMOTION_ALIASES[label])))
        elif flavour == "deal":
            answer = (
                "They have reached a deal at [price]."
                if label == DEAL
                else "They have not reached a deal."
            )
            options.append(LabelOption(label, answer, "", (spaced,)))
        else:
            options.append(LabelOption(label, label, "", (spaced,) if spaced != label else ()))
    return tuple(options)


_ED_RESOLVED = (
    "For this task, resolved means the {user} shows clear evidence of feeling accurately "
    "heard and validated, is emotionally steadier, and is willing to keep talking. A generic "
    "sympathetic response is at most somewhat_better."
)


def _success_question(card: TaskCard, options: Sequence[LabelOption]) -> str:
    spec = card.success_judge
    flavour = judge_prompt_style(card)
    speakers = judge_speakers(card)
    labels = ", ".join(option.label for option in options)
    if flavour == "support":
        question = f"Question: Has the {speakers[USER]}'s issue been solved?"
        answers = "; ".join(option.answer for option in options)
        return (
            f"{question} Choose exactly one response: {answers}.\n"
            "Reply with that response only, copied exactly."
        )
    if flavour == "deal":
        return (
            "Question: Have the buyer and seller reached a deal by the end of the conversation? "
            "A deal needs both sides to accept one final price (an offer, a counter-offer or "
            "one side's acceptance alone is not a deal).\n"
            "If they have, reply exactly: They have reached a deal at [price] (the agreed "
            "price, e.g. $250). Otherwise reply exactly: They have not reached a deal."
        )
    if flavour == "listening":
        question = (
            f"Question: Has the {speakers[USER].lower()}'s emotional state improved or been "
            f"resolved? {_ED_RESOLVED.format(user=speakers[USER].lower())}"
        )
        return f"{question}\nRespond with one exact label only: {labels}."
    question = spec.question.strip()
    if flavour == "stance":
        # The card's question may end with its own answer list; the options below replace it.
        question = re.split(r"\s+Answer\b", question, maxsplit=1)[0].strip()
        lines = [f"Question: {question} Choose exactly one label:"]
        lines += [f"- {option.label}: {option.meaning}" for option in options]
        lines.append(f"Answer with exactly one label ({labels}) and nothing else.")
        return "\n".join(lines)
    question = question or "Has the task goal been reached at the end of the conversation?"
    return f"Question: {question}\nAnswer with exactly one label ({labels}) and nothing else."


def success_judge_messages(
    card: TaskCard,
    history: Sequence[tuple[str, str]],
    system: str,
    user: str,
    context: Mapping[str, str] | None = None,
) -> list[Message]:
    """The success-judge prompt for one exchange (MASP C.3, C.5, C.6, C.7).

    Args:
        card: The task card (labels, question, roles).
        history: The whole transcript, the latest exchange included.
        system: The latest system utterance.
        user: The latest user reply.
        context: Optional task context: ESConv's ``emotion`` and ``problem`` (named in the
            paper's ESConv prompt).
    """
    speakers = judge_speakers(card)
    earlier, latest = split_latest(history, system, user)
    options = success_options(card)
    context = context or {}
    if judge_prompt_style(card) == "support":
        about = ""
        if context.get("emotion"):
            about += f" about {context['emotion']}"
        if context.get("problem"):
            about += f" regarding {context['problem']}"
        intro = f"Conversation between a {speakers[SYSTEM]} and a {speakers[USER]}{about}:"
    else:
        intro = "Conversation so far:"
    system_prompt = (
        f"You judge the outcome of a conversation in the task {card.title!r}. "
        f"The {speakers[SYSTEM]} is the {card.system_role}; the {speakers[USER]} is the "
        f"{card.user_role}. Task: {card.description}\n{DATA_NOTICE}\n"
        "Judge only from what the speakers actually said. Reply with the requested answer only."
    )
    body = "\n".join(
        [
            intro,
            render_dialogue(earlier, speakers),
            "The latest exchange:",
            render_dialogue(latest, speakers, tag=LATEST_TAG),
            _success_question(card, options),
        ]
    )
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": body}]


# -- rationality judge -------------------------------------------------------------------------


def rationality_judge_messages(
    card: TaskCard,
    history: Sequence[tuple[str, str]],
    system: str,
    user: str,
    state: BDI,
) -> list[Message]:
    """The common rationality-judge prompt (MASP C.2): RATIONAL or NOT_RATIONAL.

    Args:
        card: The task card (task description, roles).
        history: The whole transcript, the latest exchange included (the judge reads the
            accumulated dialogue as context).
        system: The assistant (system) turn of the exchange.
        user: The user turn of the exchange.
        state: The user's mental state for this exchange.
    """
    speakers = {SYSTEM: "Assistant", USER: "User"}
    earlier, latest = split_latest(history, system, user)
    system_prompt = (
        "You judge whether a simulated user behaves rationally in a conversation.\n"
        f"{DATA_NOTICE}\nAnswer with exactly one label: RATIONAL or NOT_RATIONAL."
    )
    body = "\n".join(
        [
            f"Task context: {card.description} The Assistant is the {card.system_role}; the "
            f"User is the {card.user_role}.",
            "User mental state:",
            render_state(state),
            "Earlier conversation:",
            render_dialogue(earlier, speakers),
            "Most recent exchange:",
            render_dialogue(latest, speakers, tag=LATEST_TAG),
            "Question: Was it rational for a user with that internal mental state to respond "
            "this way? A rational response means that the user updates when the assistant gives "
            "a concrete and honest reason to update, or reasonably resists when such a reason is "
            "absent.",
            "Answer with exactly one label: RATIONAL or NOT_RATIONAL.",
        ]
    )
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": body}]
