"""How a system turn reads against a card's concerns: which it touches, which it answers.

The reading half of concern tracking (:mod:`dialogue_gym.users.concerns` holds the state):
:func:`touch_excess` says how far a perceived turn goes past the line at which it counts as
addressing each concern — by closeness to the concern's meaning on the cosine scale (the card's
description and prototypes, with its cues), or by the sentence-level meaning reader's
probability (:class:`~dialogue_gym.users.meaning.MeaningReader`), whichever is further past its
line — and the functions below it read a turn in the light of the worry under discussion
(:func:`answers_focus`), as one argument (:func:`one_argument`) or as several reasons
(:func:`arguments_for`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.users.analysis import Perception
from dialogue_gym.users.presets import UserPreset

MEANING_SCALE = 0.25
"""Probability units → cosine units: a reader 0.2 past its line counts like a cosine 0.05 past
the unlock threshold (so the topic margin compares both paths in one unit)."""
STORY_FOCUS_SLACK = 0.1
"""How much nearer the unlock line a turn about this user's own story answers a situational
worry under discussion (:func:`answers_focus`): in context, as a reason to a voiced worry
needs less certainty on the meaning path."""

STORY_IN_CONTEXT, OTHER_STORY_IN_CONTEXT = 0.25, 0.25
"""A story worry answered in context (:func:`validates_in_context`): a part of the turn this
close to the user's story, none closer to another's by more (the card's prototypes: 0.3+)."""


def touch_excess(
    p: Perception, preset: UserPreset, card: TaskCard, focus: frozenset[str] = frozenset()
) -> dict[str, float]:
    """Concern id → how far the turn goes past the line of addressing it (≥ 0: it does).

    The cosine path counts only when the turn is closer to the concern's meaning than to its
    anti-patterns. Situational concerns (met only by this user's own story) are read on the
    cosine path alone: the reader knows the card's stories, not this user's.

    A concern in ``focus`` (under discussion) is read in that light: a turn that reads as its
    answer (:func:`answers_focus`) counts as answering it, level with the turn's best topic.
    Other topics the turn reaches still share its credit (stuffing stays diluted), unless
    they read best in a sentence that carries the answer (:func:`one_argument`,
    :meth:`ConcernTracker.credit`).
    """
    out: dict[str, float] = {}
    for concern in card.concerns:
        cid = concern.id
        score = p.unlock.get(cid, 0.0)
        excess = score - preset.unlock_threshold if score >= p.anti.get(cid, 0.0) else -1.0
        if concern.situational is None and p.meaning is not None:
            by_meaning = (p.addressing(cid) - preset.meaning_threshold) * MEANING_SCALE
            excess = max(excess, by_meaning)
        out[cid] = excess
    heard = [cid for cid in focus if cid in out and answers_focus(p, cid, preset, card)]
    if heard:
        level = max(0.0, *out.values())
        for cid in heard:
            out[cid] = level
    return out


def one_argument(p: Perception, heard: Sequence[str], concern_id: str, preset: UserPreset) -> bool:
    """Whether ``concern_id`` reads best in a sentence that also answers a ``heard`` concern.

    "Think of one child, not millions: $1 buys rehydration salts for her" answers a user who
    cannot relate to statistics with an example of impact; read in the light of the worry just
    voiced it is one argument, not two topics stuffed into one turn. A sentence carries a
    heard concern when the reader gives it at least ``preset.argument_threshold`` there.
    """
    if p.meaning is None or not heard or not p.meaning.per_sentence:
        return False
    rows = p.meaning.per_sentence
    best = max(range(len(rows)), key=lambda i: rows[i].get(concern_id, 0.0))
    return any(rows[best].get(h, 0.0) >= preset.argument_threshold for h in heard)


def answers_focus(p: Perception, concern_id: str, preset: UserPreset, card: TaskCard) -> bool:
    """Whether the turn reads as the answer to ``concern_id``, a concern under discussion.

    A situational concern (one about the user's own story, read by closeness to it) does
    when the turn is that close to the story, :data:`STORY_FOCUS_SLACK` under the unlock
    line. Any other concern does when it is the reader's likeliest concern for the turn, at
    least ``preset.focus_threshold`` and likelier than a near miss: a reason in the user's own
    context needs less certainty than one out of the blue, but it still has to be about that
    worry more than about any other (a loose reading here rewards scripts that never listen).
    The one exception is a concern the card says is answered with another's facts
    (:attr:`~dialogue_gym.cards.card.Concern.answered_with`): a turn that reads likeliest as one of
    those answers it too, when it reads as this concern at the same line ("It may help to
    think of one kid rather than millions: $1 buys rehydration salts for one child" to *it
    doesn't feel real to me*, though out of context it reads as a point about impact).
    """
    concern = card.concern(concern_id)
    if concern.situational is not None:
        # A worry about the user's own story ("Maybe I'm overreacting") is answered by a turn
        # about that story a little under the line: "tripping in front of your whole class …
        # sounds genuinely mortifying. I don't think you're overreacting" lost its credit to
        # the closing invitation read for another worry, and "You were up in front of
        # everyone … that kind of public moment tends to replay in your head" (0.51 against
        # 0.55) went unheard (blind play round 13, ED seed 122).
        if p.unlock.get(concern_id, 0.0) >= preset.unlock_threshold - STORY_FOCUS_SLACK:
            return True
        return concern.answered_by_meaning and validates_in_context(p, concern_id, preset, card)
    if p.meaning is None:
        return False
    readable = [c.id for c in card.concerns if c.situational is None]
    likeliest = p.meaning.likeliest(readable)
    score = p.addressing(concern_id)
    if likeliest == concern_id:
        return score >= preset.focus_threshold
    if reads_in_a_part(p, concern_id, readable, preset):
        return True
    if not concern.answered_with:
        return False
    # Read likeliest as a shared fact and as this concern too, at the line (else a sentence
    # below may still state the fact plainly).
    shared = concern.answered_with
    if likeliest in shared and score >= preset.focus_threshold and score > p.meaning.near_miss:
        return True
    # Or a sentence plainly states the shared fact ("So I'll skip the pitch and be concrete:
    # about 50 cents buys a child a year of deworming pills." to *these appeals blur
    # together*; "every charge is shown line by line on your statement" to *if it comes out
    # of the payout, I'd want to see that on the statement*), or it reads as this concern too.
    for row in p.meaning.per_sentence:
        fact = max(readable, key=lambda cid: row.get(cid, 0.0))
        if states_shared_fact(row, fact, shared, preset) or (
            fact in shared and row.get(concern_id, 0.0) >= preset.focus_threshold
        ):
            return True
    return False


def validates_in_context(
    p: Perception, concern_id: str, preset: UserPreset, card: TaskCard
) -> bool:
    """Whether a turn answers a story worry under discussion in the listener's own words.

    "Honestly, I don't think it's strange at all that it bothers you this much — you put years
    of hope into this" answers a speaker who just said it should not be this upset, though it
    reads closer to another persona's story than to its own (blind play round 15, ED seed 140).
    It does when the meaning reader reads the concern as the turn's likeliest, at its own line
    (``preset.meaning_threshold``), a part speaks to this story at least :data:`STORY_IN_CONTEXT`
    (a stock "your feelings are valid" does not) and none is closer to another persona's story
    by more than :data:`OTHER_STORY_IN_CONTEXT` (the card's prototypes stay unheard).
    """
    own_story = max((own for own, _ in p.story), default=0.0) >= STORY_IN_CONTEXT
    if p.meaning is None or not own_story:
        return False
    if max(other - own for own, other in p.story) > OTHER_STORY_IN_CONTEXT:
        return False
    likeliest = p.meaning.likeliest([c.id for c in card.concerns])
    return likeliest == concern_id and p.addressing(concern_id) >= preset.meaning_threshold


def reads_in_a_part(
    p: Perception, concern_id: str, readable: Sequence[str], preset: UserPreset
) -> bool:
    """Whether a sentence, or a part of one read on its own, plainly answers ``concern_id``.

    A turn with several points answers the worry under discussion in one of them even when
    another point reads more strongly as something else: "... The first two weekends are a
    trial and you can pause or opt out any day with one tap." answers an owner burned by a
    promotion it could not stop (0.61) beside a sentence on the written terms (0.77 as trust in
    the platform; blind play round 9, Merchant seed 80). So does a part of a sentence whose
    lead-in drowns it: "I do want to gently push back on one thing, though: going without
    proper sleep ... would wear anyone down — struggling with it isn't a sign you're handling
    things worse than a 'normal' person would" reads 0.09 as a seeker's self-blame whole and
    0.46 in its last part. A sentence or a part
    (:attr:`~dialogue_gym.users.meaning.TurnMeaning.points`) answers when the concern is its
    likeliest reading at the reader's own line (``preset.meaning_threshold``): it must be
    plain, not merely closer than the rest.
    """
    assert p.meaning is not None
    for row in (*p.meaning.per_sentence, *p.meaning.points):
        top = max(readable, key=lambda cid: row.get(cid, 0.0))
        if top == concern_id and row.get(concern_id, 0.0) >= preset.meaning_threshold:
            return True
    return False


def states_shared_fact(
    row: Mapping[str, float], top: str, shared: Collection[str], preset: UserPreset
) -> bool:
    """Whether a sentence read likeliest as ``top`` plainly states a fact of ``shared``.

    ``shared`` are the concerns whose facts answer the one under discussion
    (:attr:`~dialogue_gym.cards.card.Concern.answered_with`); the sentence states one when it reads
    likeliest as it, at the reader's own line (``preset.meaning_threshold``).
    """
    return top in shared and row.get(top, 0.0) >= preset.meaning_threshold


def arguments_for(
    p: Perception, concern_id: str, preset: UserPreset, shared: Collection[str] = ()
) -> int:
    """How many of the turn's sentences each read as an answer to ``concern_id``.

    A sentence does when ``concern_id`` is its likeliest concern, at least
    ``preset.focus_threshold``: "They're audited by outside firms every year. Watchdogs rate
    them highly. About 85 percent goes to programs." gives a user who asked whether the
    charity is legit three reasons, not one. So does a sentence that plainly states a fact of
    a ``shared`` concern (:func:`states_shared_fact`).
    """
    if p.meaning is None:
        return 0

    def answers(row: Mapping[str, float]) -> bool:
        if not row:
            return False
        top = max(row, key=lambda cid: row[cid])
        if top == concern_id:
            return row[concern_id] >= preset.focus_threshold
        return states_shared_fact(row, top, shared, preset)

    clauses = p.meaning.clauses or ((),) * len(p.meaning.per_sentence)
    # A sentence that joins reasons with semicolons or ", and" gives as many as its clauses
    # that each answer the concern, and at least the one it gives read whole.
    return sum(
        max(int(answers(row)), sum(answers(c) for c in parts))
        for row, parts in zip(p.meaning.per_sentence, clauses, strict=True)
    )
