"""Embedded (offline, deterministic) judges that read the simulator's state.

The success judge casts three votes from three independent views of the user — the stance
its reply states (read from the reply's text with the card's cues, whoever wrote it), its
intention (the decision state) and its willingness — translates the stances into
the task's labels (``decision_labels``: for ESConv refused/neutral/positive/agree are
worse/same/somewhat_better/resolved) and maps them through the card's label→reward map and
success rule exactly as the LLM judge's n sampled votes are. For P4G (threshold 0.6) two
``agree`` votes and one ``positive`` pass, as in the paper.

**Replies an external policy wrote** (a real person's replayed turn, an LLM user:
``Exchange.external_user``) can be read by a reader learned on the task's train split
(``text_reader``; :func:`~dialogue_gym.judges.user_text.reader_for`: P4G's persuadee stance
reader, ESConv's seeker readers) where the card's cues cannot place them (neutral): the cue
regexes, written for the simulator's own wording, miss how people state a stance ("I would say
five dollars"), and for such a user the decision and willingness views only echo them. The
judge then casts the card's ``n`` votes at evenly spaced quantiles of the reader's stance
distribution for the transcript (:func:`~dialogue_gym.calibration.text_reader.quantile_votes`:
what ``n`` readers sampling it would vote, deterministically). A reply whose cues state a stance,
and every simulator reply, is judged as without a reader. The reader is opt-in (the validator
turns it on for real transcripts), so an env's judgments never depend on where it runs.
"""

from __future__ import annotations

from collections import Counter

from dialogue_gym.calibration.text_reader import quantile_votes
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.judges.base import NOT_RATIONAL, RATIONAL, Exchange, Judgment
from dialogue_gym.judges.user_text import StanceReader
from dialogue_gym.users.base import DECISIONS

# classify_stance is re-exported here for importers that predate dialogue_gym.cards.stance.
__all__ = ["StateRationalityJudge", "StateSuccessJudge", "aggregate", "classify_stance"]

_RANK = {d: i for i, d in enumerate(DECISIONS)}


def aggregate(votes: list[str], card: TaskCard, n_failed: int = 0) -> Judgment:
    """Maps labelled votes through the card's reward map and success rule.

    Rule ``"mean"``: success when the mean reward reaches the threshold. Rule ``"label"``:
    success when the most frequent label (ties go to the more positive label) is the card's
    ``success_label``.
    """
    spec = card.success_judge
    rewards = tuple(spec.labels[v] for v in votes)
    score = sum(rewards) / len(rewards)
    counts = Counter(votes)
    label = max(counts, key=lambda v: (counts[v], spec.labels[v]))
    if spec.rule == "label":
        success = label == spec.success_label
    else:
        success = score >= spec.threshold - 1e-9
    return Judgment(
        votes=tuple(votes),
        rewards=rewards,
        score=score,
        success=success,
        label=label,
        n_failed=n_failed,
    )


class StateSuccessJudge:
    """Success from the user's stated stance, decision state and willingness (see module doc).

    Args:
        card: The task card (label map, threshold, cues).
        agree_willingness: Willingness at which the willingness view votes ``agree``.
        positive_willingness: Willingness at which it votes ``positive``.
        text_reader: A learned reader of external users' replies
            (:func:`~dialogue_gym.judges.user_text.reader_for`); ``None``: the cue regexes, as
            for the simulator's replies.
    """

    def __init__(
        self,
        card: TaskCard,
        agree_willingness: float = 0.6,
        positive_willingness: float = 0.35,
        text_reader: StanceReader | None = None,
    ) -> None:
        if not card.success_judge.decision_labels:
            raise ValueError(
                f"StateSuccessJudge needs judge.success.decision_labels mapping {DECISIONS} onto "
                f"card {card.id!r}'s labels {sorted(card.success_judge.labels)}"
            )
        self.card = card
        self.to_label = card.success_judge.decision_labels
        self.agree_w = agree_willingness
        self.positive_w = positive_willingness
        self.text_reader = text_reader

    def judge(self, exchange: Exchange) -> Judgment:
        """See :class:`~dialogue_gym.judges.base.SuccessJudge`."""
        # What the reply says, read from its text with the card's cues (for the simulator's
        # own replies too).
        stated = classify_stance(exchange.user, self.card)
        # An external reply the cues cannot place: the learned reader, where the task has one.
        reader = self.text_reader
        if reader is not None and exchange.external_user and stated == "neutral":
            stances = quantile_votes(
                reader.distribution(exchange.history), self.card.success_judge.n
            )
            return aggregate([self.to_label[v] for v in stances], self.card)
        # Three independent views: the stated stance, what the user decided, how willing it is.
        decision = exchange.turn.decision
        w = float(exchange.privileged.get("willingness", 0.0))
        if w >= self.agree_w:
            by_w = "agree" if decision == "agree" else "positive"
        elif w >= self.positive_w or decision == "agree":
            by_w = "positive"
        else:
            by_w = "neutral" if decision != "refused" else "refused"
        return aggregate([self.to_label[v] for v in (stated, decision, by_w)], self.card)


class StateRationalityJudge:
    """Rationality from whether the user's update was justified by what the system said.

    For simulator replies it reads the simulator's own justification (a concession without a
    reason is NOT_RATIONAL). For replies written by an external user policy it compares the
    stated stance with what a rational user in that state would do (the turn's ``rational``
    reference; its ``decision`` for users that do not set one): agreeing when a rational user
    would not (a concession without a reason), not agreeing when a rational user would (a
    well-reasoned request resisted), refusing when a rational user would not (blind
    resistance), or falling two or more steps short of the rational stance on the refused <
    neutral < positive < agree scale (refusing reasons that moved a rational user towards the
    goal), or not agreeing while keeping to itself a concern the simulator would have voiced
    here (the turn's ``withheld``: resistance whose reason is never given) is NOT_RATIONAL.
    """

    def __init__(self, card: TaskCard) -> None:
        self.card = card

    def judge(self, exchange: Exchange) -> int:
        """See :class:`~dialogue_gym.judges.base.RationalityJudge`."""
        if not exchange.external_user:
            return RATIONAL if exchange.turn.justified else NOT_RATIONAL
        stated = classify_stance(exchange.user, self.card)
        turn = exchange.turn
        rational = turn.rational if turn.rational is not None else turn.decision
        if (stated == "agree") != (rational == "agree"):
            return NOT_RATIONAL
        if stated == "refused" and rational != "refused":
            return NOT_RATIONAL  # refusing where a rational user would not: blind resistance
        if turn.withheld and stated != "agree":
            return NOT_RATIONAL  # resisting without the reason the persona would give: blind
        if _RANK[rational] - _RANK[stated] >= 2:
            return NOT_RATIONAL
        return RATIONAL
