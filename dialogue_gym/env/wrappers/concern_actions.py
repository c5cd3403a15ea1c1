"""``ConcernActions``: the system seat as a choice of listening moves, with what it can see.

:class:`StrategyActions` gives a planner the paper's strategy labels; a label says *how* to
speak (a credibility appeal, a personal story), not *what the user needs answered*, so no
strategy can answer the worry the user just voiced, and a learner on it is capped below a
listening agent. Here every action does one honest thing:

* ``answer:<concern>`` — one per concern of the card: a turn that answers that concern;
* ``rapport`` — warm small talk; ``probe`` — an open question about what holds the user back;
  ``acknowledge`` — takes in what the user said; ``reflect`` — says back, in the second person,
  what the user told about itself ("It sounds like your dog of fourteen years died last
  week."); ``ask`` — a polite request for the goal (on tasks that have one).

Which concern to answer, when to probe and when to ask is what a policy must learn from the
observation: what the user has voiced, which worries look open or settled from its replies,
the stance of its last reply, the exchanges left.

An answer is realized from the card's ``unlock`` sentences for that concern (the facts the card
says answer it; the users read 90 % of them as that concern), the other moves from the task's
shipped perception set (``envs/perception/<task>.toml``: probes, acknowledgements, warm small
talk, polite asks); within an episode a move does not repeat a wording until all of its
wordings were used.

Example:
    >>> env = ConcernActions(dialogue_gym.make("P4G-hard", encoder="static"))  # doctest: +SKIP
    >>> features, info = env.reset(seed=0)  # doctest: +SKIP
    >>> env.move_names[:2]  # doctest: +SKIP
    ('answer:affordability', 'answer:trust')
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.env.wrappers.bargain_moves import BargainFeatures, BargainMoves
from dialogue_gym.env.wrappers.listening import REACTIONS, ListeningFeatures, ListeningMoves
from dialogue_gym.env.wrappers.single_agent import SingleAgent
from dialogue_gym.env.wrappers.strategy_actions import StrategyActions
from dialogue_gym.mind.encoders import Encoder

__all__ = [
    "REACTIONS",
    "ConcernActions",
    "ListeningFeatures",
    "ListeningMoves",
    "listening_parts",
]


class ConcernActions(StrategyActions):
    """The system seat with ``Discrete(len(move_names))`` listening moves and a feature ``Box``.

    **Actions**: index ``i`` plays :attr:`move_names` ``[i]`` (``answer:<concern>`` in card
    order, then ``rapport``, ``probe``, ``acknowledge``, ``reflect`` and, where the task has a
    request, ``ask``), realized by :class:`ListeningMoves` (reseeded at every ``reset`` from
    the env's ``np_random``). Integers, size-1 integer arrays and move names are accepted.

    **Observation** (``Box(0, 1)``; names in :attr:`feature_names`), from what the system sees
    (its own moves, the user's replies, the public card), computed by
    :class:`ListeningFeatures`:

    * ``exchanges_left`` — exchanges left / T.
    * ``stance:<s>`` — one-hot of the stance the user's last reply states (``none`` before any).
    * ``last:<move>`` — one-hot of the previous move; ``asks`` — asks so far / T.
    * per concern ``c``: ``voiced:c`` (some reply voiced it), ``raised_last:c`` (the last reply
      did), ``open:c`` (voiced and not since acknowledged as settled), ``partial:c`` (a reply
      took an answer to it in part), ``resolved:c`` (a reply acknowledged it settled) and
      ``answered:c`` (``answer:c`` moves so far / T).

    A reply sentence counts as a concern's ``voice``, ``partial`` or ``resolved`` line when its
    closest card line of those kinds is at least ``match_threshold`` similar, on MiniLM's
    cosine scale (the encoder's ``to_reference_cosine``), so the flags
    mean the same under every encoder.

    **Info**: the system seat's info plus ``strategy`` (the move name), ``strategy_index`` and
    ``utterance``.

    Args:
        env: A dialogue ``ParallelEnv`` with only the system seat external, or a
            ``SingleAgent`` of the system seat.
        moves: Move realizer (default: :class:`ListeningMoves` of the env's card).
        match_threshold: Similarity (MiniLM scale) at which a reply sentence matches a line.
        encoder: Encoder of the reply features (default: the env's ``encoder``).

    Raises:
        ValueError: The task is a negotiation (its goal is a price, which these moves cannot
            make: use :class:`StrategyActions`), or as :class:`StrategyActions`.
    """

    def __init__(
        self,
        env: ParallelEnv | SingleAgent,
        moves: ListeningMoves | None = None,
        match_threshold: float = 0.8,
        encoder: Encoder | None = None,
    ) -> None:
        card = env.card if isinstance(env, SingleAgent) else getattr(env, "card", None)
        if moves is None and card is not None:
            moves = ListeningMoves(card) if not card.is_negotiation else BargainMoves(card)
        super().__init__(env, realizer=moves, encoder=encoder)
        self._moves: ListeningMoves = moves if moves is not None else ListeningMoves(self.card)
        self.realizer = self._moves
        self.move_names: tuple[str, ...] = self._moves.names
        self.strategy_names = self.move_names  # what StrategyActions validates actions against
        features = BargainFeatures if self.card.is_negotiation else ListeningFeatures
        self.tracker = features(
            self.card, self.encoder, self.move_names, self.max_exchanges, match_threshold
        )
        self.feature_names = self.tracker.feature_names
        self.action_space = spaces.Discrete(len(self.move_names))
        self.observation_space = spaces.Box(
            low=0.0, high=1.0, shape=(len(self.feature_names),), dtype=np.float32
        )

    def __repr__(self) -> str:
        return f"<ConcernActions Discrete({self.action_space.n}) over {self.single!r}>"

    def _build_voice_prototypes(self) -> None:
        """Nothing: :class:`ListeningFeatures` embeds the card lines it reads replies with."""

    def _reset_features(self) -> None:
        tracker = getattr(self, "tracker", None)
        if tracker is not None:
            tracker.reset()

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Realizes move ``action`` as an utterance and plays one exchange (see the class)."""
        index = self._index(action)
        self.tracker.record(index)
        utterance = self._moves.realize(index, self.tracker.replies)
        observation, reward, terminated, truncated, info = self.single.step(utterance)
        name = self.move_names[index]
        info = {**info, "strategy": name, "strategy_index": index, "utterance": utterance}
        return self._features(observation), reward, terminated, truncated, info

    def _features(self, observation: dict[str, Any]) -> np.ndarray:
        """The feature vector (see the class docstring) from the system's observation."""
        return self.tracker.observe(observation)


def listening_parts(
    card: TaskCard, encoder: Encoder, max_exchanges: int, match_threshold: float = 0.8
) -> tuple[ListeningFeatures, ListeningMoves]:
    """The feature tracker and move realizer :class:`ConcernActions` uses for ``card``.

    A negotiation gets :class:`~.bargain_moves.BargainFeatures` and
    :class:`~.bargain_moves.BargainMoves` (its price moves), every other task the listening
    ones. An agent that plays the view through text (a planner) builds its parts here.
    """
    if card.is_negotiation:
        moves: ListeningMoves = BargainMoves(card)
        return BargainFeatures(card, encoder, moves.names, max_exchanges, match_threshold), moves
    moves = ListeningMoves(card)
    return ListeningFeatures(card, encoder, moves.names, max_exchanges, match_threshold), moves
