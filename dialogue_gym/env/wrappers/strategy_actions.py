"""``StrategyActions``: the system seat as a ``Discrete`` strategy choice with a feature vector.

This is the view that SB3 algorithms and PPDPP-style strategy planners need: the action is the
index of one of the task card's strategies (``card.strategies`` order), realized to an utterance
by a :class:`TemplateRealizer`, and the observation is a small ``Box`` of features computed only
from what the system can observe (the dialogue history and the exchange counter; never the
user's hidden state). See :class:`StrategyActions` for the feature layout.

Example:
    >>> env = StrategyActions(dialogue_gym.make("P4G-hard", encoder="hashing"))  # doctest: +SKIP
    >>> from stable_baselines3 import PPO  # doctest: +SKIP
    >>> PPO("MlpPolicy", env).learn(2_000)  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from dialogue_gym.argtypes import check_seed
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.realize import TemplateRealizer
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.env.wrappers.single_agent import SingleAgent
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.base import DECISIONS

__all__ = [
    "STANCES",
    "Realizer",
    "StrategyActions",
    "TemplateRealizer",
    "embed_lines",
    "line_texts",
    "split_sentences",
]

#: The stance one-hot's slots: no user reply yet, then the user-stance labels.
STANCES = ("none", *DECISIONS)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"\w")


@runtime_checkable
class Realizer(Protocol):
    """Turns a strategy (index or name) into an utterance; reseeded every episode."""

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode with a generator seeded by ``seed``."""
        ...

    def realize(self, which: int | str) -> str:
        """Returns the utterance realizing strategy ``which``."""
        ...


def embed_lines(encoder: Encoder, texts: Sequence[str]) -> np.ndarray:
    """The float32 embeddings of ``texts`` (one row each; an empty ``(0, 1)`` matrix for none)."""
    if not texts:
        return np.zeros((0, 1), dtype=np.float32)
    return np.asarray(encoder.encode(list(texts)), dtype=np.float32)


def line_texts(line: str, min_words: int = 1) -> list[str]:
    """A card line and each of its sentences of ``min_words`` words or more, when it has several.

    These are the texts a reply sentence is matched against.
    """
    pieces = [p for p in split_sentences(line) if len(p.split()) >= min_words]
    return list(dict.fromkeys([line, *(pieces if len(pieces) > 1 else [])]))


def split_sentences(text: str) -> list[str]:
    """Splits ``text`` after ``.``, ``!`` and ``?`` and at line breaks; drops word-less pieces."""
    return [s.strip() for s in _SENTENCE_END.split(text) if _WORD.search(s)]


class StrategyActions(gym.Env):
    """The system seat with ``Discrete(len(card.strategies))`` actions and a feature ``Box``.

    **Actions.** Index ``i`` plays ``card.strategies[i]``: the realizer picks one of its
    templates (by default a :class:`TemplateRealizer`, reseeded at every ``reset`` from the
    env's ``np_random``, so ``reset(seed=s)`` fixes the wording; within an episode it does not
    repeat a template of a strategy until all of them have been used). Python/NumPy integers,
    size-1 integer arrays and strategy names are accepted; anything else raises ``TypeError``,
    an index outside ``[0, k)`` raises ``ValueError``.

    **Observation** (``Box(0, 1, (n_features,), float32)``; names in :attr:`feature_names`), from
    the system's own observation only:

    * ``exchange`` — exchanges completed so far / T (T = the env's exchange budget).
    * ``stance:none``, ``stance:refused``, ``stance:neutral``, ``stance:positive``,
      ``stance:agree`` — one-hot of the stance stated in the user's last reply, classified from
      its text with :func:`dialogue_gym.cards.stance.classify_stance` (the card's ``reply_*``
      cues); ``stance:none`` before the user has replied.
    * ``used:<strategy>`` — per strategy (card order), how often this episode's actions chose it
      / T.
    * ``user_question`` — 1 if the user's last reply contains ``?``.
    * ``reply_length`` — characters of the user's last reply, clipped at 300, / 300.
    * ``voiced:<concern>`` — per concern of the card, 1 once any sentence of any user reply this
      episode has cosine similarity ≥ ``voice_threshold`` (0.6) to one of the concern's ``voice``
      lines (or a sentence of one), embedded with the env's encoder. These flags record what the
      user *said*, not the hidden concern state.

    **Info** is the system seat's info plus ``strategy`` (the chosen strategy's name),
    ``strategy_index`` and ``utterance`` (the realized text).

    Args:
        env: A dialogue ``ParallelEnv`` with only the system seat external (wrapped in
            :class:`SingleAgent`), or a ``SingleAgent`` of the system seat.
        realizer: Strategy realizer (default: a :class:`TemplateRealizer` of the env's card).
        voice_threshold: Cosine similarity at which a reply sentence voices a concern.
        encoder: Encoder for the voiced-concern features (default: the env's ``encoder``).

    Raises:
        TypeError: ``env`` is neither a ``ParallelEnv`` nor a ``SingleAgent``.
        ValueError: The wrapped ``SingleAgent`` plays the user seat, or the card has no strategies.
    """

    action_space: spaces.Discrete
    observation_space: spaces.Box

    def __init__(
        self,
        env: ParallelEnv | SingleAgent,
        realizer: Realizer | None = None,
        voice_threshold: float = 0.6,
        encoder: Encoder | None = None,
    ) -> None:
        if isinstance(env, SingleAgent):
            single = env
        elif isinstance(env, ParallelEnv):
            single = SingleAgent(env, seat="system")
        else:
            raise TypeError(
                "StrategyActions wraps a dialogue ParallelEnv or a SingleAgent(seat='system'), "
                f"got {type(env).__name__}"
            )
        if single.seat != "system":
            raise ValueError(
                "StrategyActions plays the system seat: use SingleAgent(env, 'system')"
            )
        self.single = single
        card: TaskCard = single.card
        if not card.strategies:
            raise ValueError(f"card {card.id!r} has no strategies")
        self.realizer: Realizer = realizer if realizer is not None else TemplateRealizer(card)
        self.voice_threshold = float(voice_threshold)
        self.encoder: Encoder = encoder if encoder is not None else self._env_encoder()
        seat_space = single.observation_space
        exchange_space = seat_space.get("exchange") if isinstance(seat_space, spaces.Dict) else None
        if not isinstance(exchange_space, spaces.Discrete):
            raise TypeError(
                "StrategyActions needs a dialogue seat's observation space (a Dict with a "
                f"Discrete 'exchange'), got {seat_space}"
            )
        self.max_exchanges = int(
            getattr(single.par_env, "max_exchanges", None) or int(exchange_space.n) - 1
        )
        self.strategy_names: tuple[str, ...] = tuple(s.name for s in card.strategies)
        self.concern_ids: tuple[str, ...] = tuple(c.id for c in card.concerns)
        self.feature_names: tuple[str, ...] = (
            "exchange",
            *(f"stance:{s}" for s in STANCES),
            *(f"used:{name}" for name in self.strategy_names),
            "user_question",
            "reply_length",
            *(f"voiced:{cid}" for cid in self.concern_ids),
        )
        self._offsets = {
            "stance": 1,
            "used": 1 + len(STANCES),
            "question": 1 + len(STANCES) + len(self.strategy_names),
        }
        self._offsets["length"] = self._offsets["question"] + 1
        self._offsets["voiced"] = self._offsets["length"] + 1
        self.action_space = spaces.Discrete(len(self.strategy_names))
        self.observation_space = spaces.Box(
            low=0.0, high=1.0, shape=(len(self.feature_names),), dtype=np.float32
        )
        self.metadata = dict(single.metadata)
        self.render_mode = single.render_mode
        self._build_voice_prototypes()
        self._reset_features()

    # -- construction helpers ------------------------------------------------------------------

    def _env_encoder(self) -> Encoder:
        for candidate in (self.single.par_env, self.single.dialogue_env):
            encoder = getattr(candidate, "encoder", None)
            if encoder is not None:
                return encoder
        raise ValueError("the env has no `encoder` attribute: pass StrategyActions(encoder=...)")

    def _build_voice_prototypes(self) -> None:
        texts: list[str] = []
        owners: list[int] = []
        for index, concern in enumerate(self.single.card.concerns):
            for line in concern.voice:
                for text in line_texts(line):
                    texts.append(text)
                    owners.append(index)
        self._voice_owner = np.asarray(owners, dtype=np.int64)
        self._voice_matrix = embed_lines(self.encoder, texts)

    # -- properties ----------------------------------------------------------------------------

    @property
    def card(self) -> TaskCard:
        """The task card (strategies = the action set)."""
        return self.single.card

    @property
    def par_env(self) -> Any:
        """The dialogue ``ParallelEnv`` underneath."""
        return self.single.par_env

    # -- Gymnasium API -------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts an episode: reseeds the realizer and resets the dialogue env with ``seed``.

        Args:
            seed: Episode seed (``None`` continues the random streams).
            options: Passed to the dialogue env's ``reset``.

        Returns:
            The feature vector and the system seat's info.

        Raises:
            TypeError: ``seed`` is not an int or ``None`` (a bool, a float, a string).
            ValueError: ``seed`` is negative.
        """
        seed = check_seed(seed)  # numpy ints too, which Gymnasium's own check refuses
        super().reset(seed=seed)
        self.realizer.reset(int(self.np_random.integers(2**31)))
        self._reset_features()
        observation, info = self.single.reset(seed=seed, options=options)
        return self._features(observation), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Realizes strategy ``action`` as an utterance and plays one exchange.

        Args:
            action: A strategy index in ``[0, k)`` (or a strategy name).

        Returns:
            ``(features, reward, terminated, truncated, info)`` of the system seat.

        Raises:
            TypeError: ``action`` is not an integer (or a strategy name).
            ValueError: The index is out of range or the name unknown.
            RuntimeError: The episode is over (call ``reset``).
        """
        index = self._index(action)
        utterance = self.realizer.realize(index)
        observation, reward, terminated, truncated, info = self.single.step(utterance)
        self._counts[index] += 1
        info = {
            **info,
            "strategy": self.strategy_names[index],
            "strategy_index": index,
            "utterance": utterance,
        }
        return self._features(observation), reward, terminated, truncated, info

    def render(self) -> Any:
        """Renders through the dialogue env (``"ansi"``: the transcript text)."""
        return self.single.render()

    def close(self) -> None:
        """Closes the dialogue env."""
        self.single.close()

    def __repr__(self) -> str:
        return f"<StrategyActions Discrete({self.action_space.n}) over {self.single!r}>"

    # -- actions -------------------------------------------------------------------------------

    def _index(self, action: Any) -> int:
        k = len(self.strategy_names)
        if isinstance(action, str):
            if action not in self.strategy_names:
                raise ValueError(
                    f"unknown strategy {action!r}; the card's strategies are "
                    f"{list(self.strategy_names)}"
                )
            return self.strategy_names.index(action)
        if isinstance(action, np.ndarray) and action.size == 1:
            action = action.reshape(()).item() if action.dtype.kind in "iu" else action
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(
                f"a StrategyActions action must be an integer strategy index in [0, {k}), got "
                f"{action!r} ({type(action).__name__})"
            )
        index = int(action)
        if not 0 <= index < k:
            listed = ", ".join(f"{i}={n}" for i, n in enumerate(self.strategy_names))
            raise ValueError(
                f"action {index} is out of range for Discrete({k}): valid strategy indices "
                f"are 0..{k - 1} ({listed})"
            )
        return index

    # -- features ------------------------------------------------------------------------------

    def _reset_features(self) -> None:
        self._counts = np.zeros(len(self.strategy_names), dtype=np.int64)
        self._voiced = np.zeros(len(self.concern_ids), dtype=bool)
        self._seen = 0

    def _voices(self, texts: Sequence[str]) -> None:
        """Sets the voiced flags of the concerns that a sentence of ``texts`` voices."""
        sentences = [s for text in texts for s in split_sentences(text)]
        if not sentences or not len(self._voice_owner):
            return
        sims = np.asarray(self.encoder.encode(sentences), dtype=np.float32) @ self._voice_matrix.T
        hits = self._voice_owner[(sims >= self.voice_threshold).any(axis=0)]
        self._voiced[hits] = True

    def _features(self, observation: dict[str, Any]) -> np.ndarray:
        """The feature vector (see the class docstring) from the system's observation."""
        history = list(observation["history"])
        own = observation["role"]
        new_replies = [t["text"] for t in history[self._seen :] if t["speaker"] != own]
        self._seen = len(history)
        self._voices(new_replies)
        replies = [t["text"] for t in history if t["speaker"] != own]
        T = float(self.max_exchanges)
        x = np.zeros(len(self.feature_names), dtype=np.float32)
        x[0] = observation["exchange"] / T
        off = self._offsets
        if replies:
            last = replies[-1]
            stance = classify_stance(last, self.card)
            x[off["stance"] + STANCES.index(stance if stance in STANCES else "neutral")] = 1.0
            x[off["question"]] = float("?" in last)
            x[off["length"]] = min(len(last), 300) / 300.0
        else:
            x[off["stance"]] = 1.0
        x[off["used"] : off["used"] + len(self._counts)] = self._counts / T
        x[off["voiced"] : off["voiced"] + len(self._voiced)] = self._voiced
        return np.clip(x, 0.0, 1.0, out=x)
