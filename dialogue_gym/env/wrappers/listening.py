"""Listening moves and what the system can see: the parts of :class:`ConcernActions`.

:class:`ListeningMoves` realizes the moves (``answer:<concern>`` from the card's ``unlock``
sentences or the user's own story, ``rapport``, ``probe``, ``acknowledge``, ``reflect``,
``ask``); :class:`ListeningFeatures` computes the observation from the system's observations.
An agent that plays through text (a planner trained on the view) uses them directly.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import draw_unused
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.env.wrappers.saying_back import (
    STORY_FORMS,
    STORY_LEADS,
    Story,
    second_person,
    statements,
)
from dialogue_gym.env.wrappers.strategy_actions import (
    STANCES,
    embed_lines,
    line_texts,
    split_sentences,
)
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.meaning import PerceptionSet, has_requests, load_perception_set

__all__ = ["MOVE_ACTS", "REACTIONS", "ListeningFeatures", "ListeningMoves"]

#: The perception-set act each non-answer move is realized from.
MOVE_ACTS = {
    "rapport": "rapport",
    "probe": "probe",
    "acknowledge": "acknowledge",
    "ask": "ask_polite",
}

#: The kinds of user line a reply sentence is matched to, per concern.
REACTIONS = ("voice", "partial", "resolved")


class ListeningMoves:
    """Realizes the listening moves of a card (a :class:`~.strategy_actions.Realizer`).

    Args:
        card: The task card.
        perception: The card's perception set (default: the shipped one, if any).

    Raises:
        ValueError: A concern has no wording at all (neither perception-set turns nor
            ``unlock`` sentences).
    """

    def __init__(self, card: TaskCard, perception: PerceptionSet | None = None) -> None:
        perception = perception if perception is not None else load_perception_set(card)
        pools: dict[str, tuple[str, ...]] = {}
        for concern in card.concerns:
            lines = tuple(concern.unlock) or (
                perception.addressing.get(concern.id, ()) if perception else ()
            )
            if not lines:
                raise ValueError(f"card {card.id!r}: concern {concern.id!r} has no wording")
            pools[f"answer:{concern.id}"] = tuple(lines)
        for move, act in MOVE_ACTS.items():
            if move == "ask" and not has_requests(card):
                continue  # nothing to ask for (ED: sharing is invited, not granted)
            lines = perception.turns.get(act, ()) if perception else ()
            if lines:
                pools[move] = tuple(lines)
        self.card = card
        self._from_story = {f"answer:{c.id}" for c in card.concerns if c.situational is not None}
        # Reflecting is built from the user's own words at play time (no pool), before the ask.
        names = [name for name in pools if name != "ask"]
        self.names: tuple[str, ...] = (*names, "reflect", *(["ask"] if "ask" in pools else []))
        self._pools = pools
        self.reset()

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode: a fresh generator, every wording unused."""
        self._rng = np.random.default_rng(seed)
        self._used: dict[str, set[int]] = {}
        self._reflected: set[str] = set()
        self._stories_told = 0  # story answers given (each takes the next lead)

    def realize(self, which: int | str, replies: Sequence[str] = ()) -> str:
        """A wording of move ``which`` (index or name) not used yet this episode if any is left.

        Args:
            which: The move, by index or name.
            replies: The user's replies so far (what ``reflect`` says back).

        Raises:
            KeyError: Unknown move name.
            IndexError: Index out of range.
        """
        name = which if isinstance(which, str) else self.names[int(which)]
        if name == "reflect":
            return self._reflect(replies)
        if name in self._from_story:
            # Met by this user's own story (ED): said back and taken seriously, in its words;
            # the card's sentences about other people's stories cannot meet it.
            answer = self._story_answer(replies)
            if answer:
                return answer
        pool = self._pools[name]
        return pool[draw_unused(self._rng, self._used.setdefault(name, set()), len(pool))]

    def _story_answer(self, replies: Sequence[str]) -> str:
        """The next way of taking the user's story seriously (``""`` before it told one).

        Each story answer says back another part of it, so none repeats the last (see
        :func:`_story_answers`): what happened, then the feeling the user named for it, then
        that the feeling is no overreaction, then the details it added, one at a time; then
        what happened again, with another lead.
        """
        story = Story.read(replies)
        if story is None:
            return ""
        step = self._stories_told
        self._stories_told += 1
        if step < len(STORY_FORMS):
            return story.form(step)
        details = [c for c in story.details if c not in self._reflected]
        if details:
            self._reflected.add(details[-1])
            return story.detail(details[-1])
        return story.form(len(STORY_FORMS) + (step - len(STORY_FORMS)) % len(STORY_LEADS))

    def nearest(
        self,
        text: str,
        replies: Sequence[str],
        encoder: Encoder,
        among: Collection[str] | None = None,
    ) -> int:
        """The move whose wording here is most similar to ``text`` (labels others' turns).

        Candidates are every fixed wording of a move, and what the moves built from the
        user's words could say after ``replies``: ``reflect`` any of its statements, a story
        answer any of its forms. Nothing is realized: the episode's state is unchanged.

        Args:
            text: A system turn (e.g. a corpus listener's).
            replies: The user's replies before it.
            encoder: The encoder whose cosine decides.
            among: Only these moves (by name) are candidates (default: every move). A move
                with nothing to say here (``reflect`` before a first-person statement, a
                price move) is never one; when none of them has, the first of them in
                :attr:`names`.

        Raises:
            ValueError: ``among`` names no move.
        """
        owners: list[int] = []
        texts: list[str] = []
        story = Story.read(replies)
        for index, name in enumerate(self.names):
            if among is not None and name not in among:
                continue
            if name == "reflect":
                options = [f"It sounds like {second_person(c)}" for c in statements(replies)]
            elif name in self._from_story and story is not None:
                options = story.all_forms()
            else:
                options = list(self._pools.get(name, ()))
            owners += [index] * len(options)
            texts += options
        if not texts:
            named = [i for i, name in enumerate(self.names) if name in (among or ())]
            if not named:
                raise ValueError(f"no move among {sorted(among or ())}")
            return named[0]
        rows = np.asarray(encoder.encode([text, *texts]), dtype=np.float32)
        return owners[int(np.argmax(rows[1:] @ rows[0]))]

    def wordings(self, which: int | str) -> tuple[str, ...]:
        """The fixed wordings of move ``which``.

        ``reflect`` has none: it says back the user's own words.

        Raises:
            KeyError: Unknown move name.
            IndexError: Index out of range.
        """
        name = which if isinstance(which, str) else self.names[int(which)]
        if name not in self.names:
            raise KeyError(f"unknown move {name!r} (moves: {', '.join(self.names)})")
        return self._pools.get(name, ())

    def _reflect(self, replies: Sequence[str], fallback: bool = True) -> str:
        """The longest thing the user said about itself not said back yet, in the second person.

        "I found out my friends had a group chat without me." becomes "It sounds like you
        found out your friends had a group chat without you." With nothing to say back (no
        first-person statement yet), an acknowledgement (``""`` without ``fallback``).
        """
        said = self._reflected
        fresh = [c for c in statements(replies) if c not in said]
        if not fresh:
            if not fallback:
                return ""
            return self.realize("acknowledge") if "acknowledge" in self._pools else "I hear you."
        sentence = max(fresh, key=lambda c: len(c.split()))
        said.add(sentence)
        return f"It sounds like {second_person(sentence)}"


class ListeningFeatures:
    """The :class:`ConcernActions` feature vector, from raw system observations.

    The wrapper uses it, and so can an agent that plays through text (the planner trained on
    the view): call :meth:`observe` with each observation and :meth:`record` with the move
    then chosen. See :class:`ConcernActions` for the features; a subclass names the features
    it appends in :attr:`extra_features`.

    Args:
        card: The task card.
        encoder: Encoder of the reply features.
        move_names: The moves (``ListeningMoves(card).names``).
        max_exchanges: T.
        match_threshold: Similarity (MiniLM scale) at which a reply sentence matches a line.
    """

    extra_features: tuple[str, ...] = ()
    """Names of the features a subclass appends to :meth:`observe`'s vector."""

    def __init__(
        self,
        card: TaskCard,
        encoder: Encoder,
        move_names: Sequence[str],
        max_exchanges: int,
        match_threshold: float = 0.8,
    ) -> None:
        self.card = card
        self.encoder = encoder
        self.move_names = tuple(move_names)
        self.max_exchanges = int(max_exchanges)
        self.match_threshold = float(match_threshold)
        self.concern_ids = tuple(c.id for c in card.concerns)
        self.feature_names: tuple[str, ...] = (
            "exchanges_left",
            *(f"stance:{s}" for s in STANCES),
            *(f"last:{m}" for m in self.move_names),
            "asks",
            *(f"{kind}:{cid}" for kind in _CONCERN_FEATURES for cid in self.concern_ids),
            *self.extra_features,
        )
        texts: list[str] = []
        owners: list[tuple[int, int]] = []
        for index, concern in enumerate(card.concerns):
            for kind, lines in enumerate(
                (concern.voice, concern.ack_partial, concern.ack_resolved)
            ):
                for line in lines:
                    # A line's sentences match on their own too, but not a short one ("I'm
                    # listening." would match every reply that says so).
                    for text in line_texts(line, min_words=4):
                        texts.append(text)
                        owners.append((index, kind))
        self._line_owner = np.asarray(owners, dtype=np.int64).reshape(-1, 2)
        self._line_matrix = embed_lines(encoder, texts)
        self.reset()

    @property
    def n_features(self) -> int:
        """Length of the feature vector."""
        return len(self.feature_names)

    def reset(self) -> None:
        """Starts an episode."""
        self._flags = np.zeros((len(_CONCERN_FEATURES), len(self.concern_ids)), dtype=np.float32)
        self._seen = 0
        self._last_move: int | None = None
        self._asks = 0
        self.replies: list[str] = []  # the user's replies so far (what ``reflect`` says back)

    def record(self, move: int | np.ndarray) -> None:
        """Counts the move just chosen (an index, or a one-hot / soft vector: its argmax)."""
        if np.ndim(move):
            move = int(np.argmax(move))
        name = self.move_names[int(move)]
        if name.startswith("answer:"):
            concern = self.concern_ids.index(name.partition(":")[2])
            self._flags[_CONCERN_FEATURES.index("answered"), concern] += 1.0 / self.max_exchanges
        self._asks += int(name == "ask")
        self._last_move = int(move)

    def _read_replies(self, texts: Sequence[str]) -> None:
        """Updates the concern flags from the user's new replies."""
        row = {kind: i for i, kind in enumerate(_CONCERN_FEATURES)}
        self._flags[row["raised_last"]] = 0.0
        sentences = [s for text in texts for s in split_sentences(text)]
        if not sentences or not len(self._line_owner):
            return
        embedded = np.asarray(self.encoder.encode(sentences), dtype=np.float32)
        sims = self.encoder.to_reference_cosine(embedded @ self._line_matrix.T)
        for sims_row in np.atleast_2d(sims):
            best = int(np.argmax(sims_row))
            if float(sims_row[best]) < self.match_threshold:
                continue
            concern, kind = (int(v) for v in self._line_owner[best])
            reaction = REACTIONS[kind]
            if reaction == "voice":
                self._flags[row["voiced"], concern] = 1.0
                self._flags[row["raised_last"], concern] = 1.0
                self._flags[row["resolved"], concern] = 0.0  # raised again: not settled
            elif reaction == "partial":
                self._flags[row["partial"], concern] = 1.0
            else:
                self._flags[row["resolved"], concern] = 1.0
        voiced, resolved = self._flags[row["voiced"]], self._flags[row["resolved"]]
        self._flags[row["open"]] = voiced * (1.0 - resolved)

    def observe(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The feature vector for a system observation (``history``, ``role``, ``exchange``)."""
        history = list(observation["history"])
        own = observation["role"]
        self._read_replies([t["text"] for t in history[self._seen :] if t["speaker"] != own])
        self._seen = len(history)
        self.replies = [t["text"] for t in history if t["speaker"] != own]
        T = float(self.max_exchanges)
        stance = np.zeros(len(STANCES), dtype=np.float32)
        if self.replies:
            said = classify_stance(self.replies[-1], self.card)
            stance[STANCES.index(said if said in STANCES else "neutral")] = 1.0
        else:
            stance[0] = 1.0
        last = np.zeros(len(self.move_names), dtype=np.float32)
        if self._last_move is not None:
            last[self._last_move] = 1.0
        x = np.concatenate(
            [
                [1.0 - observation["exchange"] / T],
                stance,
                last,
                [self._asks / T],
                self._flags.ravel(),
            ]
        ).astype(np.float32)
        return np.clip(x, 0.0, 1.0, out=x)


_CONCERN_FEATURES = ("voiced", "raised_last", "open", "partial", "resolved", "answered")
"""The per-concern feature kinds, in the order of :attr:`ConcernActions.feature_names`."""
