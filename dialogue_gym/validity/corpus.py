"""What the validity benchmark reads from a real dialogue: its outcome and its exchanges.

Real outcomes (:func:`outcome_of`):

- **P4G**: success = the persuadee's actual donation (``B6``) > 0; amount = the donation.
- **ESConv**: success = *improved*, the seeker's emotion intensity fell (final < initial);
  amount = the fall (initial − final, so larger is better). A ``FailedESConv.json`` dialogue
  without a final score counts as not improved (the collection dropped it as negative) with
  no amount; any other dialogue without both scores has no outcome.
- **CraigslistBargain**: success = a deal, the last offer answered by ``accept`` (the
  rule-based acts of the HF export; ``reject``/``quit`` = no deal); amount = the buyer-normalized
  utility of the offered price, for deals. Dialogues without these acts (the whole HF test
  split) have no outcome.

Exchanges (:func:`exchanges_of`): consecutive turns of one side are joined; user turns before
the first system turn are dropped (the simulated user speaks only in reply); a last system
turn without a reply gets an empty one. CraigslistBargain's non-verbal events become short
texts: an offer ``"I offer $X."``, an accept ``"Deal: I accept $X."`` (the price of the offer
it accepts), ``"I reject that offer."`` and ``"I'm done, no deal."``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from dialogue_gym.calibration.cb import closing_offer
from dialogue_gym.calibration.p4g_persona import donated
from dialogue_gym.data import Dialogue, load_corpus
from dialogue_gym.data.errors import DataNotFoundError
from dialogue_gym.prices import buyer_utility, format_price

__all__ = [
    "FAILED",
    "Outcome",
    "exchange_acts",
    "exchanges_of",
    "load_held_out",
    "load_train",
    "outcome_of",
    "parse_splits",
    "side_text",
]

FAILED = "failed"
"""Split token for ``FailedESConv.json`` (ESConv's original-schema negatives)."""

_EVENTS = {"offer", "accept", "reject", "quit"}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What the real participants reached.

    Attributes:
        success: Whether the task goal was reached (donated, improved, deal).
        amount: The graded outcome (donation, intensity fall, utility); ``None`` if unknown.
    """

    success: bool
    amount: float | None


def _intensity(value: object) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def _cb_outcome(dialogue: Dialogue) -> Outcome | None:
    offer, verdict = closing_offer(dialogue)
    if verdict is None:
        return None
    if verdict != "accept":
        return Outcome(False, None)
    listing = dialogue.situation.get("listing_price")
    target = dialogue.situation.get("buyer_target")
    amount = None
    if offer is not None and listing and target is not None and float(target) < float(listing):
        amount = buyer_utility(offer, float(listing), float(target))
    return Outcome(True, amount)


def outcome_of(dialogue: Dialogue) -> Outcome | None:
    """The real outcome of a dialogue (see the module docstring); ``None`` when unknown."""
    if dialogue.corpus == "p4g":
        gave = donated(dialogue.profile)  # the same rule the persona layer is fitted on
        return None if gave is None else Outcome(gave, float(dialogue.profile["donation"]))
    if dialogue.corpus == "esconv":
        score = dialogue.situation.get("survey_score")
        seeker = score.get("seeker", {}) if isinstance(score, dict) else {}
        start = _intensity(seeker.get("initial_emotion_intensity"))
        end = _intensity(seeker.get("final_emotion_intensity"))
        if start is not None and end is not None:
            return Outcome(end < start, float(start - end))
        return Outcome(False, None) if dialogue.situation.get("failed") else None
    if dialogue.corpus == "cb":
        return _cb_outcome(dialogue)
    return None


def _blocks(dialogue: Dialogue) -> list[tuple[str, list[str], set[str]]]:
    """The dialogue as alternating ``(role, texts, acts)`` blocks, from its first system turn."""
    prices = dialogue.situation.get("turn_prices") or (None,) * len(dialogue.turns)
    blocks: list[tuple[str, list[str], set[str]]] = []
    offer: float | None = None
    for turn, price in zip(dialogue.turns, prices, strict=False):
        text = turn.text
        if not text and turn.act in _EVENTS:
            if turn.act == "offer":
                offer = price
                text = (
                    f"I offer {format_price(price)}." if price is not None else "I make an offer."
                )
            elif turn.act == "accept":
                text = f"Deal: I accept {format_price(offer)}." if offer is not None else "Deal."
            elif turn.act == "reject":
                text = "I reject that offer."
            else:
                text = "I'm done, no deal."
        if not text:
            continue
        if blocks and blocks[-1][0] == turn.role:
            blocks[-1][1].append(text)
            blocks[-1][2].update(turn.acts)
        else:
            blocks.append((turn.role, [text], set(turn.acts)))
    while blocks and blocks[0][0] == "user":
        blocks.pop(0)
    return blocks


def exchanges_of(dialogue: Dialogue) -> list[tuple[str, str]]:
    """The dialogue as ``(system text, user text)`` exchanges (see the module docstring)."""
    blocks = _blocks(dialogue)
    exchanges = []
    for i in range(0, len(blocks), 2):
        system = " ".join(blocks[i][1])
        user = " ".join(blocks[i + 1][1]) if i + 1 < len(blocks) else ""
        exchanges.append((system, user))
    return exchanges


def exchange_acts(dialogue: Dialogue) -> list[frozenset[str]]:
    """The corpus labels of each exchange's system turns, parallel to :func:`exchanges_of`.

    An exchange whose system turns carry no label gets an empty set.
    """
    return [frozenset(acts) for role, _, acts in _blocks(dialogue) if role == "system"]


def side_text(exchanges: Sequence[tuple[str, str]], side: str, limit: int | None = None) -> str:
    """The text of one side (``"system"`` or ``"user"``) of the first ``limit`` exchanges."""
    index = 0 if side == "system" else 1
    return "\n".join(pair[index] for pair in exchanges[:limit])


def parse_splits(spec: str | Sequence[str]) -> tuple[str, ...]:
    """``"valid,test,failed"`` → ``("valid", "test", "failed")``.

    Raises:
        ValueError: No split, or ``train`` (never held out).
    """
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    splits = tuple(dict.fromkeys(s.strip().lower() for s in items if s.strip()))
    if not splits:
        raise ValueError("--split: name at least one held-out split (test, valid, failed)")
    if "train" in splits:
        raise ValueError("--split: train is never held out (the text reference is fitted on it)")
    return splits


def load_held_out(corpus: str, data: str | Path | None, splits: Sequence[str]) -> list[Dialogue]:
    """The held-out dialogues of ``splits`` (``failed``: ESConv's ``FailedESConv.json``).

    Raises:
        DataNotFoundError: No files (or no dialogues) of a split.
        ValueError: ``failed`` for a corpus other than ESConv.
    """
    dialogues: list[Dialogue] = []
    for split in splits:
        if split == FAILED:
            if corpus != "esconv":
                raise ValueError("the 'failed' split is ESConv's FailedESConv.json")
            found = load_corpus(corpus, data, split="unsplit", format="original")
            dialogues += [d for d in found if d.situation.get("failed")]
        else:
            dialogues += load_corpus(corpus, data, split=split)
    seen: set[str] = set()
    unique = []
    for d in dialogues:
        if d.id not in seen:
            seen.add(d.id)
            unique.append(d)
    return unique


def load_train(corpus: str, data: str | Path | None) -> list[Dialogue]:
    """The train split's dialogues with turns (empty when the corpus has none here)."""
    try:
        return [d for d in load_corpus(corpus, data, split="train") if d.turns]
    except DataNotFoundError:
        return []
