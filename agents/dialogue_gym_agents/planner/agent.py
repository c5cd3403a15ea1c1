"""``planner``: a PPDPP-style strategy planner — a small policy network over strategy features.

At each turn the planner maps what it can observe to a feature vector (:class:`StrategyFeatures`,
the same layout as :class:`dialogue_gym.env.wrappers.StrategyActions`' observations), picks one of
the task card's strategies with :class:`StrategyPolicyNet`, and realizes it as an utterance —
from the card's templates (:class:`~dialogue_gym.cards.realize.TemplateRealizer`) or with an LLM
told which strategy to use (:class:`LLMStrategyRealizer`, temperature 0.3 as in PPDPP).

Trained by ``dialogue-gym train planner`` (supervised pretraining on strategy-annotated
corpora, then PPO with stable-baselines3; see :mod:`dialogue_gym_agents.planner.train`);
loaded with ``--agent planner:DIR`` or ``planner(card=card, checkpoint=DIR)``. Trained with
``--view concern`` it picks listening moves instead (answer concern *c*, probe, ask, ... —
:class:`dialogue_gym.env.wrappers.ConcernActions`), computed and realized the same way here
(:class:`~dialogue_gym.env.wrappers.ListeningFeatures`,
:class:`~dialogue_gym.env.wrappers.ListeningMoves`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from dialogue_gym.backends import Backend, GenerationParams, make_backend
from dialogue_gym.cards.card import Strategy, TaskCard
from dialogue_gym.cards.realize import TemplateRealizer
from dialogue_gym.env.wrappers.concern_actions import listening_parts
from dialogue_gym.env.wrappers.listening import ListeningFeatures, ListeningMoves
from dialogue_gym.env.wrappers.strategy_actions import (
    STANCES,
    embed_lines,
    line_texts,
    split_sentences,
)
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.llm.prompts import system_agent_messages
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.common.checkpoint import (
    CheckpointMismatchError,
    check_backend_spec,
    load_checkpoint,
    load_torch_module,
)

__all__ = [
    "KIND",
    "POLICY_FILE",
    "REALIZER_PROMPT_VERSION",
    "LLMStrategyRealizer",
    "PlannerAgent",
    "StrategyFeatures",
    "StrategyPolicyNet",
    "load_policy",
    "planner",
    "strategy_messages",
    "view_features",
]

KIND = "planner"
"""The checkpoint kind and agent name."""

POLICY_FILE = "policy.pt"
"""The policy network's weights (a torch state dict) inside a checkpoint."""

REALIZER_PROMPT_VERSION = "planner-realizer-1"
"""Version of :func:`strategy_messages`."""

ROLES = ("system", "user")


# -- features --------------------------------------------------------------------------------------


class StrategyFeatures:
    """The ``StrategyActions`` feature vector, computed from raw system observations.

    Same names, order and values as :attr:`dialogue_gym.env.wrappers.StrategyActions.feature_names`
    (the test suite checks them against the wrapper): exchange / T, the one-hot stance of the
    user's last reply, per-strategy use counts / T, whether the last reply asks a question, its
    length, and per concern whether the user has voiced it. Call :meth:`observe` with each new
    observation and :meth:`record` with the strategy then chosen.

    Args:
        card: The task card.
        encoder: Encoder (name or object) for the voiced-concern features.
        max_exchanges: T (default: the card's).
        voice_threshold: Cosine similarity at which a reply sentence voices a concern.
    """

    def __init__(
        self,
        card: TaskCard,
        encoder: str | Encoder = "minilm",
        max_exchanges: int | None = None,
        voice_threshold: float = 0.6,
    ) -> None:
        self.card = card
        self.encoder = make_encoder(encoder)
        self.max_exchanges = int(max_exchanges or card.max_exchanges)
        self.voice_threshold = float(voice_threshold)
        self.strategy_names = tuple(card.strategy_names)
        self.concern_ids = tuple(c.id for c in card.concerns)
        self.feature_names: tuple[str, ...] = (
            "exchange",
            *(f"stance:{s}" for s in STANCES),
            *(f"used:{name}" for name in self.strategy_names),
            "user_question",
            "reply_length",
            *(f"voiced:{cid}" for cid in self.concern_ids),
        )
        self._stance = 1
        self._used = self._stance + len(STANCES)
        self._question = self._used + len(self.strategy_names)
        self._voiced_at = self._question + 2
        texts: list[str] = []
        owners: list[int] = []
        for index, concern in enumerate(card.concerns):
            for line in concern.voice:
                for text in line_texts(line):
                    texts.append(text)
                    owners.append(index)
        self._owner = np.asarray(owners, dtype=np.int64)
        self._prototypes = embed_lines(self.encoder, texts)
        self.reset()

    @property
    def n_features(self) -> int:
        """Length of the feature vector."""
        return len(self.feature_names)

    def reset(self) -> None:
        """Starts a new episode."""
        self.counts = np.zeros(len(self.strategy_names), dtype=np.float64)
        self.voiced = np.zeros(len(self.concern_ids), dtype=bool)
        self._seen = 0

    def record(self, strategy: int | np.ndarray) -> None:
        """Counts a chosen strategy (an index, or a distribution over strategies)."""
        if isinstance(strategy, np.ndarray):
            self.counts += strategy
        else:
            self.counts[int(strategy)] += 1.0

    def _voice(self, texts: Sequence[str]) -> None:
        sentences = [s for text in texts for s in split_sentences(text)]
        if not sentences or not len(self._owner):
            return
        sims = np.asarray(self.encoder.encode(sentences), dtype=np.float32) @ self._prototypes.T
        self.voiced[self._owner[(sims >= self.voice_threshold).any(axis=0)]] = True

    def observe(self, observation: Mapping[str, Any]) -> np.ndarray:
        """The feature vector for a system observation (``history``, ``role``, ``exchange``)."""
        history = list(observation["history"])
        own = observation["role"]
        self._voice([t["text"] for t in history[self._seen :] if t["speaker"] != own])
        self._seen = len(history)
        replies = [t["text"] for t in history if t["speaker"] != own]
        T = float(self.max_exchanges)
        x = np.zeros(self.n_features, dtype=np.float32)
        x[0] = observation["exchange"] / T
        if replies:
            last = replies[-1]
            stance = classify_stance(last, self.card)
            x[self._stance + STANCES.index(stance if stance in STANCES else "neutral")] = 1.0
            x[self._question] = float("?" in last)
            x[self._question + 1] = min(len(last), 300) / 300.0
        else:
            x[self._stance] = 1.0
        x[self._used : self._used + len(self.counts)] = self.counts / T
        x[self._voiced_at : self._voiced_at + len(self.voiced)] = self.voiced
        return np.clip(x, 0.0, 1.0, out=x)


def view_features(
    card: TaskCard, encoder: str | Encoder, max_exchanges: int, view: str = "strategy"
) -> tuple[StrategyFeatures | ListeningFeatures, ListeningMoves | None]:
    """The feature tracker of a planner's action view, and its listening moves (``concern``).

    ``view="strategy"``: :class:`StrategyFeatures` and no moves (the card's strategies);
    ``view="concern"``: :class:`~dialogue_gym.env.wrappers.ListeningFeatures` over
    :class:`~dialogue_gym.env.wrappers.ListeningMoves` (on a negotiation, their price-move kin:
    :func:`~dialogue_gym.env.wrappers.listening_parts`).
    """
    if view != "concern":
        return StrategyFeatures(card, encoder, max_exchanges=max_exchanges), None
    return listening_parts(card, make_encoder(encoder), max_exchanges)


def view_action_names(card: TaskCard, moves: ListeningMoves | None) -> tuple[str, ...]:
    """The actions of a view: the listening moves, or (``moves=None``) the card's strategies."""
    return tuple(moves.names) if moves is not None else tuple(card.strategy_names)


def realize_view_action(
    index: int,
    features: StrategyFeatures | ListeningFeatures,
    moves: ListeningMoves | None,
    templates: TemplateRealizer,
) -> str:
    """Action ``index`` as text: a move's wording, or a strategy's template.

    ``reflect`` says back the user's replies that ``features`` read.
    """
    if moves is not None:
        assert isinstance(features, ListeningFeatures)
        return moves.realize(index, features.replies)
    return templates.realize(index)


# -- the policy network ----------------------------------------------------------------------------


class StrategyPolicyNet(nn.Module):
    """An MLP from features to strategy logits: ``Linear → tanh → ... → Linear``.

    The layout matches stable-baselines3's ``MlpPolicy`` actor with ``activation_fn=nn.Tanh``
    (``mlp_extractor.policy_net`` then ``action_net``), so weights copy between the two.

    Args:
        n_features: Input size.
        n_actions: Number of strategies.
        hidden_sizes: Widths of the hidden layers.
        generator: torch generator for the initial weights (default: the global one).
    """

    def __init__(
        self,
        n_features: int,
        n_actions: int,
        hidden_sizes: Sequence[int] = (64, 64),
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.n_features = int(n_features)
        self.n_actions = int(n_actions)
        self.hidden_sizes = tuple(int(h) for h in hidden_sizes)
        layers: list[nn.Module] = []
        width = self.n_features
        for hidden in self.hidden_sizes:
            layers += [nn.Linear(width, hidden), nn.Tanh()]
            width = hidden
        layers.append(nn.Linear(width, self.n_actions))
        self.net = nn.Sequential(*layers)
        if generator is not None:
            with torch.no_grad():
                for layer in self.linears():
                    bound = 1.0 / float(np.sqrt(layer.in_features))
                    layer.weight.uniform_(-bound, bound, generator=generator)
                    layer.bias.uniform_(-bound, bound, generator=generator)

    def linears(self) -> list[nn.Linear]:
        """The linear layers, input first."""
        return [m for m in self.net if isinstance(m, nn.Linear)]

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Strategy logits, ``[..., n_actions]``."""
        return self.net(features)


def load_policy(folder: str | Path, info: Mapping[str, Any]) -> StrategyPolicyNet:
    """Rebuilds the policy network of a planner checkpoint folder.

    Raises:
        CorruptCheckpointError: The weights cannot be read or do not fit the recorded shape.
    """
    return load_torch_module(
        lambda: StrategyPolicyNet(
            int(info["n_features"]), int(info["n_actions"]), tuple(info["hidden_sizes"])
        ),
        Path(folder) / POLICY_FILE,
        "the planner policy",
    )


# -- realizers -------------------------------------------------------------------------------------


def strategy_messages(
    card: TaskCard, history: Sequence[tuple[str, str]], strategy: Strategy
) -> list[dict[str, str]]:
    """The LLM realizer's prompt: the system agent prompt plus the strategy to use now."""
    messages = system_agent_messages(card, history)
    example = strategy.templates[0] if strategy.templates else ""
    instruction = (
        f"Use this strategy in your next turn: {strategy.name}"
        + (f" ({strategy.description})" if strategy.description else "")
        + "."
        + (f' An example of it, not to be copied: "{example}"' if example else "")
    )
    messages[-1] = {**messages[-1], "content": messages[-1]["content"] + "\n" + instruction}
    return messages


class LLMStrategyRealizer:
    """Words a chosen strategy with an LLM backend, conditioned on the dialogue so far.

    Implements the ``StrategyActions`` realizer protocol (``reset(seed)``,
    ``realize(which)``); ``realize`` also takes the history explicitly. An empty or failed
    completion falls back to the card's templates (counted in :attr:`fallbacks`).

    Args:
        card: The task card.
        backend: A backend or a backend spec (``"fake"``, ``"openai:MODEL"``, ``"hf:..."``).
        temperature: Sampling temperature (PPDPP's 0.3).
        max_tokens: Most tokens per utterance.
        history: Where to read the dialogue when ``realize`` is called without one (e.g.
            ``lambda: env.unwrapped.history`` inside a training env).
    """

    def __init__(
        self,
        card: TaskCard,
        backend: Backend | str,
        temperature: float = 0.3,
        max_tokens: int = 120,
        history: Callable[[], Sequence[tuple[str, str]]] | None = None,
    ) -> None:
        if isinstance(backend, str):
            check_backend_spec(backend)
        self.card = card
        self.backend = make_backend(backend)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.history = history
        self.templates = TemplateRealizer(card)
        self.fallbacks = 0
        self._seed: int | None = None
        self._calls = 0

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode: per-call sampling seeds derive from ``seed``."""
        self._seed = seed
        self._calls = 0
        self.templates.reset(seed)

    def realize(self, which: int | str, history: Sequence[tuple[str, str]] | None = None) -> str:
        """The utterance for strategy ``which`` (index or name) after ``history``."""
        strategy = self.templates.strategy(which)
        if history is None:
            history = tuple(self.history()) if self.history is not None else ()
        seed = None if self._seed is None else int(self._seed) + self._calls
        self._calls += 1
        params = GenerationParams(
            temperature=self.temperature, max_tokens=self.max_tokens, seed=seed
        )
        messages = strategy_messages(self.card, history, strategy)
        text = self.backend.generate(messages, params, component="planner.realizer")[0].text
        text = " ".join(text.split())
        if not text:
            self.fallbacks += 1
            return self.templates.realize(which)
        return text


# -- the agent -------------------------------------------------------------------------------------


class PlannerAgent:
    """Plays the system seat: features → strategy (or listening move) → utterance.

    Args:
        card: The task card.
        net: The policy network.
        features: The feature tracker (its encoder and T as in training).
        realizer: ``None`` for the card's templates, or an :class:`LLMStrategyRealizer`.
        deterministic: Take the most likely strategy (else sample from the policy).
        seed: Default seed (overridden by :meth:`reset`).
        moves: The listening moves of a policy trained on ``ConcernActions`` (then
            ``features`` is its :class:`~dialogue_gym.env.wrappers.ListeningFeatures`).
    """

    def __init__(
        self,
        card: TaskCard,
        net: StrategyPolicyNet,
        features: StrategyFeatures | ListeningFeatures,
        realizer: LLMStrategyRealizer | None = None,
        deterministic: bool = True,
        seed: int | None = None,
        moves: ListeningMoves | None = None,
    ) -> None:
        names = view_action_names(card, moves)
        if net.n_features != features.n_features or net.n_actions != len(names):
            raise ValueError(
                f"policy shape ({net.n_features} features, {net.n_actions} actions) does "
                f"not fit the card ({features.n_features} features, {len(names)} actions)"
            )
        self.card = card
        self.net = net.eval()
        self.features = features
        self.realizer = realizer
        self.moves = moves
        self.action_names = tuple(names)
        self.templates = TemplateRealizer(card, seed)
        self.deterministic = deterministic
        self.last_strategy: str | None = None
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        """Starts an episode: clears the features and reseeds sampling and the realizer."""
        self.features.reset()
        self.templates.reset(seed)
        if self.moves is not None:
            self.moves.reset(seed)
        if self.realizer is not None:
            self.realizer.reset(seed)
        self._generator = torch.Generator(device="cpu")
        self._generator.manual_seed(0 if seed is None else int(seed))
        self.last_strategy = None

    def logits(self, features: np.ndarray) -> torch.Tensor:
        """The policy's strategy logits for a feature vector (or a batch of them)."""
        with torch.no_grad():
            return self.net(torch.as_tensor(features, dtype=torch.float32))

    def choose(self, observation: Mapping[str, Any]) -> int:
        """Observes and picks a strategy index (recorded in the features)."""
        logits = self.logits(self.features.observe(observation))
        if self.deterministic:
            index = int(torch.argmax(logits))
        else:
            probs = torch.softmax(logits, dim=-1)
            index = int(torch.multinomial(probs, 1, generator=self._generator))
        self.features.record(index)
        self.last_strategy = self.action_names[index]
        return index

    def act(self, observation: Mapping[str, Any]) -> str:
        """The next system utterance."""
        index = self.choose(observation)
        if self.moves is not None or self.realizer is None:
            return realize_view_action(index, self.features, self.moves, self.templates)
        history = [(ROLES[int(t["speaker"])], t["text"]) for t in observation["history"]]
        return self.realizer.realize(index, history)


def planner(
    card: TaskCard,
    checkpoint: str | Path | None = None,
    seed: int | None = None,
    deterministic: bool | None = None,
    realizer: str | None = None,
    backend: str | Backend | None = None,
    **kwargs: Any,
) -> PlannerAgent:
    """The ``planner`` agent factory: ``--agent planner:DIR``.

    Args:
        card: The task card of the env (must be the checkpoint's task and strategy set).
        checkpoint: A folder written by ``dialogue-gym train planner``.
        seed: Default seed.
        deterministic: Most likely strategy (default: as trained, normally ``True``).
        realizer: ``"template"`` or ``"llm"`` (default: as trained).
        backend: The LLM backend for ``realizer="llm"`` (default: as trained).
        **kwargs: Not used.

    Raises:
        CheckpointError: No checkpoint, or it is missing, corrupt, of another kind, or trained
            for another task, strategy set or feature layout.
        ValueError: ``realizer="llm"`` without a backend.
    """
    ckpt = load_checkpoint(checkpoint, kind=KIND, card=card, check_strategies=True)
    config, info = ckpt.config, ckpt.info
    encoder = str(config.get("encoder", "minilm"))
    T = int(info.get("max_exchanges", card.max_exchanges))
    features, moves = view_features(card, encoder, T, str(config.get("view", "strategy")))
    if tuple(info.get("feature_names", ())) != features.feature_names:
        raise CheckpointMismatchError(
            f"checkpoint {ckpt.path} was trained on another feature layout (the card's "
            "concerns or strategies changed): retrain it with this card"
        )
    net = load_policy(ckpt.path, info)
    realizer_kind = realizer or str(config.get("realizer", "template"))
    llm = None
    if realizer_kind == "llm" and moves is not None:
        raise ValueError("a planner over listening moves realizes them itself: no LLM realizer")
    if realizer_kind == "llm":
        spec = backend if backend is not None else config.get("backend")
        if spec is None:
            raise ValueError("realizer='llm' needs a backend (e.g. backend='openai:MODEL')")
        llm = LLMStrategyRealizer(card, spec, temperature=float(config.get("temperature", 0.3)))
    elif realizer_kind != "template":
        raise ValueError(f"realizer must be 'template' or 'llm', got {realizer_kind!r}")
    return PlannerAgent(
        card,
        net,
        features,
        realizer=llm,
        deterministic=bool(config.get("deterministic", True))
        if deterministic is None
        else deterministic,
        seed=seed,
        moves=moves,
    )
