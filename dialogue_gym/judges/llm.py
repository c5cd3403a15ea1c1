"""LLM judges: the paper's success judges (n sampled votes) and the common rationality judge.

Both implement the protocols of :mod:`dialogue_gym.judges.base` and are interchangeable with the
embedded judges (``make(id, success_judge=..., rationality_judge=...)``, or a ``DialogueEnv``'s
``Judges`` part).

**Success (MASP C.3, C.5, C.6).** One prompt per exchange, ``n`` samples (the card's
``judge.success.n``, 3 by default) at temperature 0.7. Each sample is parsed into one of the
card's labels; the votes go through :func:`dialogue_gym.judges.embedded.aggregate` (the card's
label → reward map and its ``mean`` or ``label`` rule). A vote is read only when it is in the
prompt's exact answer format (:func:`dialogue_gym.llm.parsing.parse_label`: hedges, echoed
questions, option lists and prose are unparseable). **An unparseable vote is counted in
``Judgment.n_failed``, flagged by index in ``unparseable`` (``infos["judge_unparseable"]``,
next to ``infos["judge_failures"]``) and cast as the card's lowest label** (refused / worse /
no_deal) — it is never averaged as a positive label. A success needs the readable votes alone
to succeed *and* the success to survive the failed votes counted at the lowest reward: when no
vote can be read the exchange fails, with ``judge_failures == n``.

**CraigslistBargain (MASP C.7)** (cards whose ``judge.success.kind`` is ``"deal"``). Each
sample reads "They have reached a deal at [price]" or "They have not reached a deal". If any
vote says no deal — or cannot be read, or names no price (a failed vote, flagged as above) —
the outcome is ``no_deal``;
otherwise the deal price is the median of the voted prices and the exchange succeeds when the
buyer-normalized utility ``(p_deal − p_seller) / (p_buyer − p_seller)`` reaches the card's
threshold. ``p_seller`` and ``p_buyer`` come from the seller's privileged record (the listing
price and the buyer's target) or, without one, from the seller's first stated price and the
card's ``listings.buyer_target_fraction``, as in the embedded :class:`DealJudge`.

**Rationality (MASP C.2).** One sample at temperature 0: RATIONAL → +1, NOT_RATIONAL → −1,
anything unparseable → 0. The mental state shown is z_t, the state the user answered from
("rational under the current mental state"): ``exchange.state_before`` — the env sets it to
the state before this reply — else, for exchanges built by hand without one, the state
recorded with the turn (``exchange.turn.bdi``, the state *after* the reply). A backend
failure (after the backend's own retries) raises
:class:`~dialogue_gym.backends.BackendError` so the evaluation marks the episode as errored;
``on_backend_error="zero"`` instead scores it 0, the paper's literal protocol.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dialogue_gym.backends import BackendError, GenerationParams
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.judges.base import NOT_RATIONAL, RATIONAL, UNPARSEABLE, Exchange, Judgment
from dialogue_gym.judges.deal import DEAL, NO_DEAL, DealJudgment
from dialogue_gym.judges.embedded import aggregate
from dialogue_gym.llm import parsing, prompts
from dialogue_gym.text.prices import asking_price_in, buyer_utility

if TYPE_CHECKING:
    from dialogue_gym.backends import Backend

__all__ = [
    "LLMDealJudgment",
    "LLMJudgment",
    "LLMRationalityJudge",
    "LLMSuccessJudge",
    "judge_context",
]

SUCCESS_COMPONENT = "judge.success"
RATIONALITY_COMPONENT = "judge.rationality"


@dataclasses.dataclass(frozen=True)
class LLMJudgment(Judgment):
    """A :class:`~dialogue_gym.judges.base.Judgment` that names its unparseable votes.

    Attributes:
        unparseable: Indices (0-based) of the votes that could not be read; each is counted in
            ``n_failed`` and cast as the card's lowest label in ``votes``.
    """

    unparseable: tuple[int, ...] = ()

    @property
    def details(self) -> dict[str, Any]:
        """``judge_unparseable`` for the infos (the env merges ``details`` into them)."""
        return {"judge_unparseable": list(self.unparseable)}


@dataclasses.dataclass(frozen=True)
class LLMDealJudgment(DealJudgment):
    """A :class:`~dialogue_gym.judges.deal.DealJudgment` that names its failed votes.

    Attributes:
        unparseable: Indices (0-based) of the votes that could not be read or named no price;
            each is counted in ``n_failed`` and cast as ``no_deal``.
    """

    unparseable: tuple[int, ...] = ()

    @property
    def details(self) -> dict[str, Any]:
        """The deal fields and ``judge_unparseable`` (for infos)."""
        return {**super().details, "judge_unparseable": list(self.unparseable)}


def judge_context(exchange: Exchange) -> dict[str, str]:
    """Task context for the judge prompt from the user's privileged record.

    ESConv's prompt names the emotion and problem types; they are read from ``emotion`` /
    ``emotion_type`` and ``problem`` / ``problem_type`` when the user simulator provides them.
    """
    privileged = exchange.privileged or {}
    context: dict[str, str] = {}
    for name in ("emotion", "problem"):
        value = privileged.get(name, privileged.get(f"{name}_type"))
        if isinstance(value, str) and value.strip():
            context[name] = value.strip()
    return context


class LLMSuccessJudge:
    """The paper's per-task success judge with n sampled votes (see the module docstring).

    Args:
        card: The task card (labels, rewards, threshold, rule, question, ``n``).
        backend: The text-generation backend.
        n: Sampled judgments per exchange (default: the card's ``judge.success.n``).
        temperature: Sampling temperature of the votes.
        max_tokens: Token budget of one vote.

    Raises:
        ValueError: ``n < 1``, or a ``deal`` card whose labels are not ``deal``/``no_deal``.
    """

    def __init__(
        self,
        card: TaskCard,
        backend: Backend,
        n: int | None = None,
        temperature: float = 0.7,
        max_tokens: int = 64,
    ) -> None:
        self.card = card
        self.backend = backend
        self.n = int(n if n is not None else card.success_judge.n)
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        spec = card.success_judge
        self.deal = spec.kind == "deal"
        if self.deal and set(spec.labels) != {DEAL, NO_DEAL}:
            raise ValueError(
                f"a deal judge needs judge.success.labels {{deal, no_deal}} on card {card.id!r}, "
                f"got {sorted(spec.labels)}"
            )
        self.options = prompts.success_options(card)
        self.aliases = {o.label: (o.answer, *o.aliases) for o in self.options}
        self.lowest = min(spec.labels, key=lambda label: (spec.labels[label], label))
        listings = card.extra.get("listings", {})
        self.target_fraction = float(listings.get("buyer_target_fraction", 0.7))

    def config(self) -> dict[str, Any]:
        """The judge's configuration (for stamping into results)."""
        return {
            "component": SUCCESS_COMPONENT,
            "kind": "llm",
            "card": self.card.id,
            "n": self.n,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "prompt_version": prompts.PROMPT_VERSION,
        }

    def messages(self, exchange: Exchange) -> list[prompts.Message]:
        """The prompt for ``exchange``."""
        return prompts.success_judge_messages(
            self.card, exchange.history, exchange.system, exchange.user, judge_context(exchange)
        )

    def _sample(self, exchange: Exchange) -> list[str]:
        params = GenerationParams(temperature=self.temperature, max_tokens=self.max_tokens)
        completions = self.backend.generate(
            self.messages(exchange), params, n=self.n, component=SUCCESS_COMPONENT
        )
        return [completion.text for completion in completions]

    def judge(self, exchange: Exchange) -> Judgment:
        """See :class:`~dialogue_gym.judges.base.SuccessJudge`.

        Raises:
            BackendError: The backend failed (after its retries).
        """
        texts = self._sample(exchange)
        if self.deal:
            return self._judge_deal(exchange, texts)
        votes: list[str] = []
        unparseable: list[int] = []
        for index, text in enumerate(texts):
            label = parsing.parse_label(text, self.aliases)
            if label is None:
                unparseable.append(index)
                label = self.lowest  # never averaged as a positive label
            votes.append(label)
        judgment = aggregate(votes, self.card, n_failed=len(unparseable))
        readable = [v for i, v in enumerate(votes) if i not in unparseable]
        # A failed vote never contributes to success: the readable votes must succeed alone.
        success = judgment.success and bool(readable) and aggregate(readable, self.card).success
        fields = {f.name: getattr(judgment, f.name) for f in dataclasses.fields(Judgment)}
        fields["success"] = success
        return LLMJudgment(**fields, unparseable=tuple(unparseable))

    # -- CraigslistBargain ---------------------------------------------------------------------

    def _prices(self, exchange: Exchange) -> tuple[float | None, float | None]:
        privileged: Mapping[str, Any] = exchange.privileged or {}
        listing = privileged.get("listing_price")
        target = privileged.get("buyer_target")
        if listing is None:
            first = next((text for role, text in exchange.history if role == "user"), "")
            listing = asking_price_in(first)
        if listing is None:
            return None, None
        if target is None:
            target = round(float(listing) * self.target_fraction)
        return float(listing), float(target)

    def _judge_deal(self, exchange: Exchange, texts: list[str]) -> LLMDealJudgment:
        listing, target = self._prices(exchange)
        votes: list[str] = []
        prices: list[float] = []
        unparseable: list[int] = []
        for index, text in enumerate(texts):
            vote = parsing.parse_deal(text, reference=listing)
            if vote is None or (vote.deal and vote.price is None):
                unparseable.append(index)  # unreadable, or a deal without a price: unscorable
                votes.append(NO_DEAL)
            elif vote.deal:
                assert vote.price is not None
                votes.append(DEAL)
                prices.append(vote.price)
            else:
                votes.append(NO_DEAL)
        deal = not unparseable and all(v == DEAL for v in votes)
        price = float(statistics.median(prices)) if deal and prices else None
        utility = None
        if price is not None and listing is not None and target is not None:
            try:
                utility = buyer_utility(price, listing, target)
            except ValueError:
                utility = None
        # The card's rule (CB: strictly above the threshold, so paying the list price is not
        # a success), the same as the embedded DealJudge.
        success = deal and utility is not None and self.card.success_judge.passes(utility)
        labels = self.card.success_judge.labels
        rewards = tuple(labels[v] for v in votes)
        return LLMDealJudgment(
            votes=tuple(votes),
            rewards=rewards,
            score=sum(rewards) / len(rewards),
            success=success,
            label=DEAL if deal else NO_DEAL,
            n_failed=len(unparseable),
            deal_price=price,
            utility=utility,
            listing_price=listing,
            buyer_target=target,
            unparseable=tuple(unparseable),
        )


class LLMRationalityJudge:
    """The common rationality judge (see the module docstring).

    Args:
        card: The task card (task description, roles).
        backend: The text-generation backend.
        temperature: Sampling temperature (0: greedy).
        max_tokens: Token budget of the answer.
        on_backend_error: ``"raise"`` (default: the episode errors and can be rerun) or
            ``"zero"`` (score the exchange 0, as the paper does for failed calls).

    Raises:
        ValueError: Unknown ``on_backend_error``.
    """

    def __init__(
        self,
        card: TaskCard,
        backend: Backend,
        temperature: float = 0.0,
        max_tokens: int = 16,
        on_backend_error: str = "raise",
    ) -> None:
        if on_backend_error not in ("raise", "zero"):
            raise ValueError(
                f"on_backend_error must be 'raise' or 'zero', got {on_backend_error!r}"
            )
        self.card = card
        self.backend = backend
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.on_backend_error = on_backend_error

    def config(self) -> dict[str, Any]:
        """The judge's configuration (for stamping into results)."""
        return {
            "component": RATIONALITY_COMPONENT,
            "kind": "llm",
            "card": self.card.id,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "prompt_version": prompts.PROMPT_VERSION,
        }

    def messages(self, exchange: Exchange) -> list[prompts.Message]:
        """The prompt for ``exchange``."""
        state = exchange.state_before or exchange.turn.bdi
        return prompts.rationality_judge_messages(
            self.card, exchange.history, exchange.system, exchange.user, state
        )

    def judge(self, exchange: Exchange) -> int:
        """See :class:`~dialogue_gym.judges.base.RationalityJudge`.

        Raises:
            BackendError: The backend failed and ``on_backend_error`` is ``"raise"``.
        """
        params = GenerationParams(temperature=self.temperature, max_tokens=self.max_tokens)
        try:
            completions = self.backend.generate(
                self.messages(exchange), params, n=1, component=RATIONALITY_COMPONENT
            )
        except BackendError:
            if self.on_backend_error == "raise":
                raise
            return UNPARSEABLE
        text = completions[0].text if completions else ""
        value = parsing.parse_rationality(text)
        if value is None:
            return UNPARSEABLE
        return RATIONAL if value > 0 else NOT_RATIONAL
