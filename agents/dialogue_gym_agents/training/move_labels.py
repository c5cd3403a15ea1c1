"""Listening-move labels of corpus turns from the corpus's own act annotations.

The concern view's moves (:class:`~dialogue_gym.env.wrappers.ListeningMoves`) have no corpus
labels. By default (``nearest``) the planner labels each corpus system turn with the move
whose wording is nearest to its text over *every* move — so a listener's "That's so
exciting!" becomes ``acknowledge`` whatever the annotators called it, and a human buyer's
"How about $150?" is never an offer (price moves have no fixed wording). :class:`ActMoveLabels`
(``acts``) lets the annotation pick the move *family* and the text the move within it:

* a corpus act that maps to a card strategy (:class:`~.corpora.LabelMapper`, the card's
  ``[corpus.label_aliases]``) allows the answer moves of the concerns that strategy
  ``addresses`` on the card (P4G ``credibility-appeal`` → ``answer:trust``; ESConv
  ``Providing Suggestions`` → ``answer:needs_concrete_step`` or ``answer:overwhelm``), and
  ``ask`` when the strategy ``asks``;
* :data:`MOVE_FAMILIES` adds the non-answer moves an act is (a greeting is ``rapport``, a
  question ``probe``, a restatement ``reflect``, an acknowledgement ``acknowledge``), per
  corpus; ``answer:*`` stands for every answer move;
* on a negotiation a strategy that asks, in a turn that names a price, is the price move
  whose price (:meth:`~dialogue_gym.env.wrappers.BargainMoves.offer`, from the prices the
  dialogue has named so far) is nearest the offered one — ``accept`` when it offers the
  seller's last price or more; an ``agree`` is ``accept``.

Within a family the nearest wording decides (:meth:`ListeningMoves.nearest` with ``among``).
A turn with several acts gets a soft target spread evenly over the distinct moves; a turn none
of whose acts has a family (P4G ``other``, ``off-task``; ED's emotion labels) is skipped, as
the strategy view skips unmapped labels. The report counts moves and skipped acts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.data import Turn
from dialogue_gym.env.wrappers import ListeningMoves
from dialogue_gym.env.wrappers.bargain_moves import PRICE_MOVES, BargainMoves, PriceState
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.text.prices import offer_in
from dialogue_gym_agents.training.corpora import LabelMapper

__all__ = ["MOVE_FAMILIES", "MOVE_LABELS", "ActMoveLabels", "corpus_labels", "price_move"]

MOVE_LABELS = ("nearest", "acts")
"""How corpus turns get listening-move labels: nearest wording over every move, or act-guided."""

MOVE_FAMILIES: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    # PersuasionForGood's er_label_1 (Wang et al. 2019): inquiries and the persuader's
    # social moves; appeals and the donation proposal come from the card's strategies.
    "p4g": {
        "greeting": ("rapport",),
        "personal-related-inquiry": ("rapport", "probe"),
        "source-related-inquiry": ("probe",),
        "task-related-inquiry": ("probe",),
        "ask-not-donate-reason": ("probe",),
        "acknowledgement": ("acknowledge", "reflect"),
        "thank": ("acknowledge",),
        "praise-user": ("acknowledge",),
        "comment-partner": ("acknowledge",),
        "you-are-welcome": ("acknowledge",),
    },
    # ESConv's support strategies (Liu et al. 2021).
    "esconv": {
        "question": ("probe",),
        "restatement or paraphrasing": ("reflect",),
        "reflection of feelings": ("reflect",),
        "others": ("rapport", "acknowledge"),
    },
    # EmpatheticIntents' listener intents (Welivita & Pu 2020); the 32 emotion labels and
    # ``neutral`` describe feelings, not acts, and have none.
    "ed": {
        "questioning": ("probe",),
        "acknowledging": ("acknowledge", "reflect"),
        "agreeing": ("acknowledge", "reflect", "answer:*"),
        "sympathizing": ("acknowledge", "reflect", "answer:*"),
        "consoling": ("acknowledge", "reflect", "answer:*"),
        "encouraging": ("acknowledge",),
        "wishing": ("acknowledge",),
    },
    # CraigslistBargain's dialogue acts (Zhou et al. 2019, PPDPP's copy), the buyer's side.
    "cb": {
        "greet": ("rapport",),
        "inquire": ("probe", "rapport"),
        "counter-noprice": ("probe", "answer:*"),
        "confirm": ("acknowledge",),
        "affirm": ("acknowledge",),
        "agree": ("accept",),
    },
}
"""Corpus → act (lower case) → the non-answer moves it is, beyond what its card strategy says."""


def price_move(moves: BargainMoves, price: float, prices: PriceState) -> str | None:
    """The price move that offers nearest ``price`` given the dialogue's ``prices``.

    ``accept`` when ``price`` is the seller's last price or more; ``None`` before the listing
    is known (no price move has a price then).
    """
    if prices.listing is None or prices.seller is None:
        return None
    if price >= prices.seller:
        return "accept"
    offers = {
        name: moves.offer(name, prices.listing, prices.seller, prices.own)
        for name in PRICE_MOVES
        if name.startswith("offer:")
    }
    return min(offers, key=lambda name: abs(offers[name] - price))


class ActMoveLabels:
    """Labels a corpus system turn with listening moves from its acts (see the module).

    Called like the planner's labellers: ``labels(turn, replies, own)`` with the user's and
    the system's earlier turns in the dialogue; returns the soft target over ``moves.names``
    or ``None`` (skipped).

    Args:
        card: The task card (its corpus names the :data:`MOVE_FAMILIES` table).
        moves: The view's moves (a :class:`BargainMoves` on a negotiation).
        encoder: The encoder whose cosine picks the move within a family.
        families: Act → non-answer moves (default: the card's corpus's table).
    """

    def __init__(
        self,
        card: TaskCard,
        moves: ListeningMoves,
        encoder: Encoder,
        families: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        corpus = card.corpus.name if card.corpus else ""
        table = families if families is not None else MOVE_FAMILIES.get(corpus, {})
        self.moves, self.encoder = moves, encoder
        self.strategies = LabelMapper(card).index  # act (lower case) → strategy index
        self.answers = tuple(n for n in moves.names if n.startswith("answer:"))
        self.families: dict[str, tuple[str, ...]] = {}
        for act, extra in table.items():
            self.families[act.lower()] = self._expand(extra)
        for act, index in self.strategies.items():
            strategy = card.strategies[index]
            own = [f"answer:{c}" for c in strategy.addresses]
            if strategy.asks and "ask" in moves.names:
                own.append("ask")
            self.families[act] = self._expand([*self.families.get(act, ()), *own])
        self.prices = isinstance(moves, BargainMoves)
        self.asking = {act for act, i in self.strategies.items() if card.strategies[i].asks}
        self.counts: Counter[str] = Counter(dict.fromkeys(moves.names, 0))
        self.skipped: Counter[str] = Counter()

    def _expand(self, names: Sequence[str]) -> tuple[str, ...]:
        """``names`` with ``answer:*`` spelled out, kept to moves of the view, in order."""
        out: list[str] = []
        for name in names:
            for move in self.answers if name == "answer:*" else (name,):
                if move in self.moves.names and move not in out:
                    out.append(move)
        return tuple(out)

    def __call__(
        self, turn: Turn, replies: Sequence[str], own: Sequence[str] = ()
    ) -> np.ndarray | None:
        """The soft target of one system turn, or ``None`` when none of its acts has a move."""
        if not turn.text.strip():
            return None
        chosen: list[str] = []
        for act in turn.acts:
            move = self._move(act.strip().lower(), turn.text, replies, own)
            if move is None:
                self.skipped[act] += 1
            elif move not in chosen:
                chosen.append(move)
        if not chosen:
            return None
        target = np.zeros(len(self.moves.names), dtype=np.float32)
        for move in chosen:
            target[self.moves.names.index(move)] = 1.0 / len(chosen)
            self.counts[move] += 1
        return target

    def _move(self, act: str, text: str, replies: Sequence[str], own: Sequence[str]) -> str | None:
        if self.prices and act in self.asking:
            assert isinstance(self.moves, BargainMoves)
            prices = PriceState.read(replies, own)
            price = offer_in(text, reference=prices.listing)
            if price is not None:
                move = price_move(self.moves, price, prices)
                if move is not None:
                    return move
        family = [m for m in self.families.get(act, ()) if m not in PRICE_MOVES or m == "accept"]
        if not family:
            return None
        if len(family) == 1:
            return family[0]
        return self.moves.names[self.moves.nearest(text, replies, self.encoder, among=family)]

    def report(self) -> dict[str, object]:
        """The labelling, the move counts and the acts skipped (for the checkpoint manifest)."""
        return {
            "labels": "corpus acts → move family, nearest wording within it",
            "move_counts": dict(self.counts),
            "skipped_acts": dict(self.skipped.most_common()),
        }


Labeller = Callable[[Turn, Sequence[str], Sequence[str]], "np.ndarray | None"]
"""``label(turn, replies, own)``: a system turn's target, given the earlier turns of both sides."""


def corpus_labels(
    card: TaskCard, moves: ListeningMoves | None, encoder: Encoder, how: str = "nearest"
) -> tuple[Labeller, Callable[[], dict[str, Any]]]:
    """How corpus turns are labelled, and a report of the labels given so far.

    The strategy view (``moves=None``) maps the corpus's strategy labels to the card's
    strategies (:class:`~.corpora.LabelMapper`). The concern view labels each system turn with
    a listening move: ``how="nearest"``, the move whose wording is nearest over every move
    (:meth:`ListeningMoves.nearest`); ``how="acts"``, :class:`ActMoveLabels`.

    Raises:
        ValueError: Unknown ``how``.
    """
    if how not in MOVE_LABELS:
        raise ValueError(f"move labels must be one of {MOVE_LABELS}, got {how!r}")
    if moves is None:
        mapper = LabelMapper(card)

        def by_strategy(turn: Turn, replies: Sequence[str], own: Sequence[str] = ()) -> Any:
            return mapper(turn.acts)

        return by_strategy, mapper.report
    if how == "acts":
        labels = ActMoveLabels(card, moves, encoder)
        return labels, labels.report
    eye = np.eye(len(moves.names), dtype=np.float32)
    counts = dict.fromkeys(moves.names, 0)

    def by_move(turn: Turn, replies: Sequence[str], own: Sequence[str] = ()) -> Any:
        if not turn.text.strip():
            return None
        move = moves.nearest(turn.text, replies, encoder)
        counts[moves.names[move]] += 1
        return eye[move]

    return by_move, lambda: {"labels": "nearest listening move", "move_counts": dict(counts)}
