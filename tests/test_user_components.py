"""The cognitive user's components: perception, concern tracking, decision and wording.

Each is a small class behind a Protocol, composed by :class:`CognitiveUser`; these tests use
them one at a time and swap them, as a user of the library building its own user would.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.users import CognitiveUser
from dialogue_gym.users.analysis import Perception, UtteranceAnalyzer
from dialogue_gym.users.answers import arguments_for
from dialogue_gym.users.concerns import PARTIAL, RESOLVED, UNRESOLVED, ConcernTracker
from dialogue_gym.users.decision import DecisionContext, ThresholdDecision
from dialogue_gym.users.perception import UserPerception
from dialogue_gym.users.persona import persona_bank
from dialogue_gym.users.presets import card_preset


@pytest.fixture(scope="module")
def card():
    return load_card("p4g")


@pytest.fixture(scope="module")
def analyzer(card):
    return UtteranceAnalyzer.for_user(card, make_encoder("hashing"))


def _addressing(analyzer: UtteranceAnalyzer, concern_id: str) -> Perception:
    """A perception that addresses ``concern_id`` alone, well past every threshold."""
    p = analyzer.perceive("Some turn.")
    unlock = dict.fromkeys(p.unlock, 0.0)
    unlock[concern_id] = 1.0
    return dataclasses.replace(p, unlock=unlock, anti=dict.fromkeys(p.anti, 0.0), meaning=None)


def test_tracker_remembers_partial_and_resolved_progress(card, analyzer) -> None:
    tracker = ConcernTracker(card, card_preset(card, "hard"))
    persona = persona_bank(card)[0]
    tracker.begin(persona)
    cid, state = next(iter(tracker.states.items()))
    state.needed = 2
    assert tracker.voice(cid) is False  # voiced for the first time: not answered yet
    events: list[str] = []
    reasoned, costs = tracker.credit(_addressing(analyzer, cid), events, False, False)
    assert reasoned and f"addressed:{cid}" in events and costs == []
    assert state.status == PARTIAL
    assert tracker.voice(cid) is True  # voiced again after a partial answer: a reaction
    tracker.credit(_addressing(analyzer, cid), [], False, False)
    assert state.status == RESOLVED and cid in tracker.resolved()
    # A resolved concern stays resolved: more turns on it credit nothing and move nothing.
    again: list[str] = []
    assert tracker.credit(_addressing(analyzer, cid), again, False, False)[0] is False
    assert state.status == RESOLVED and not again
    assert tracker.top() != cid
    # A new episode starts from nothing.
    tracker.begin(persona)
    assert all(s.status == UNRESOLVED and not s.voiced for s in tracker.states.values())
    assert not tracker.disclosed


def test_tracker_never_credits_a_repeated_turn(card, analyzer) -> None:
    tracker = ConcernTracker(card, card_preset(card, "hard"))
    tracker.begin(persona_bank(card)[0])
    cid = next(iter(tracker.states))
    assert tracker.credit(_addressing(analyzer, cid), [], True, False)[0] is False


def _context(**changes: object) -> DecisionContext:
    base = DecisionContext(
        willingness=0.9, drift=0.0, blocking=(), helped=True, disclosed=True, asks=1, exchange=3
    )
    return dataclasses.replace(base, **changes)


def test_decision_refuses_an_ask_while_a_concern_blocks_and_agrees_once_none_does(
    card, analyzer
) -> None:
    rule = ThresholdDecision(card, card_preset(card, "hard"))
    ask = dataclasses.replace(analyzer.perceive("Would you donate?"), ask=True)
    rng = np.random.default_rng(0)
    blocked = _context(willingness=0.3, blocking=("trust",))
    assert rule.decide(ask, False, False, "neutral", blocked, rng) == ("refused", True)
    assert rule.decide(ask, True, False, "neutral", _context(), rng) == ("agree", True)
    # Once nothing blocks, the rule never refuses (a refusal then would be blind).
    low = _context(willingness=0.2)
    assert rule.decide(ask, False, True, "refused", low, rng)[0] != "refused"


class _AlwaysAgree:
    def decide(self, p, reasoned, hurt, previous, context, rng, concede=True):
        return "agree", True


class _Echo:
    def begin(self, persona, style, rng, tracker) -> None:
        self.persona = persona

    def reply(self, p, events, stance, repetition, exchange, asks) -> str:
        return f"{self.persona.name} heard {p.words} words and is {stance}"

    def realize_act(self, act, system_text="", exchange=0) -> str:
        return act


def test_cognitive_user_composes_swapped_components(card) -> None:
    user = CognitiveUser(
        card, make_encoder("hashing"), "hard", decision=_AlwaysAgree(), wording=_Echo()
    )
    user.reset(np.random.default_rng(3))
    turn = user.respond("Hello there, how are you today?")
    assert turn.decision == "agree" and user.decision == "agree"
    assert turn.text == f"{user.persona.name} heard 6 words and is agree"
    assert user.realize_act("warm") == "warm"


def test_perception_scores_situational_concerns_only_after_the_story(card) -> None:
    ed = load_card("ed")
    perception = UserPerception(
        ed, UtteranceAnalyzer.for_user(ed, make_encoder("hashing")), card_preset(ed, "hard")
    )
    persona = next(p for p in persona_bank(ed) if p.facts.get("situation"))
    perception.begin(persona, tuple(c for c, _ in persona.concerns))
    story = persona.facts["situation"]
    situational = [c.id for c in ed.concerns if c.situational is not None]
    before = perception.perceive(f"So {story}?", disclosed=False)
    assert all(before.unlock[cid] == 0.0 for cid in situational)
    after = perception.perceive(f"So {story}?", disclosed=True)
    assert any(after.unlock[cid] > 0.0 for cid in situational)


def _argued(analyzer: UtteranceAnalyzer, concern_id: str, sentences: int) -> Perception:
    """A turn about ``concern_id`` alone, each of its ``sentences`` a reason for it."""
    from dialogue_gym.users.meaning import ACTS, TurnMeaning

    p = _addressing(analyzer, concern_id)
    row = dict.fromkeys(p.unlock, 0.02)
    row[concern_id] = 0.8
    meaning = TurnMeaning(
        concerns=row,
        acts=dict.fromkeys(ACTS, 0.0),
        near_miss=0.05,
        sentences=sentences,
        per_sentence=tuple(dict(row) for _ in range(sentences)),
    )
    return dataclasses.replace(p, meaning=meaning)


def test_reasons_joined_by_semicolons_count_clause_by_clause(card, analyzer):
    """Blind play round 6: "Fifty cents buys ... deworming pills ...; small gifts are pooled,
    so they turn into real supplies ..." is two reasons in one sentence; each clause that
    answers the concern counts, and the sentence read whole still counts once."""
    preset = card_preset(card, "hard")
    cid = card.concerns[0].id
    p = _argued(analyzer, cid, 1)
    assert p.meaning is not None
    row, other = p.meaning.per_sentence[0], dict.fromkeys(p.meaning.per_sentence[0], 0.0)
    other[card.concerns[1].id] = 0.9
    two = dataclasses.replace(p.meaning, clauses=((row, row),))
    assert arguments_for(dataclasses.replace(p, meaning=two), cid, preset) == 2
    mixed = dataclasses.replace(p.meaning, clauses=((row, other),))
    assert arguments_for(dataclasses.replace(p, meaning=mixed), cid, preset) == 1
    asides = dataclasses.replace(p.meaning, clauses=((other, other),))
    assert arguments_for(dataclasses.replace(p, meaning=asides), cid, preset) == 1


def test_a_thorough_answer_to_the_worry_under_discussion_counts_each_reason(card, analyzer):
    """Three reasons for the worry the user just voiced earn up to the preset's cap (2); the
    same turn before the user voiced it earns the proactive share of one unit, and a one-reason
    turn one unit."""
    preset = card_preset(card, "hard")
    tracker = ConcernTracker(card, preset)
    tracker.begin(persona_bank(card)[0])
    cid, state = next(iter(tracker.states.items()))
    state.needed = 3
    tracker.credit(_argued(analyzer, cid, 3), [], False, False)  # not voiced: proactive
    assert state.progress == pytest.approx(preset.proactive_credit)
    tracker.voice(cid)
    tracker.voiced_now = [cid]
    tracker.next_reply()  # the user just voiced it: under discussion
    tracker.credit(_argued(analyzer, cid, 3), [], False, False)
    assert state.progress == pytest.approx(preset.proactive_credit + preset.thorough_credit)
    tracker.next_reply()
    before = state.progress
    tracker.credit(_argued(analyzer, cid, 1), [], False, False)
    assert state.progress == pytest.approx(before + 1.0)


def _read_as(
    analyzer: UtteranceAnalyzer, *sentences: dict[str, float], near_miss: float = 0.05
) -> Perception:
    """A turn whose sentences the meaning reader reads with the given scores (0.02 elsewhere),
    with nothing on the cosine path."""
    from dialogue_gym.users.meaning import ACTS, TurnMeaning

    p = analyzer.perceive("Some turn.")
    rows = [dict.fromkeys(p.unlock, 0.02) | scores for scores in sentences or ({},)]
    meaning = TurnMeaning(
        concerns={cid: max(row[cid] for row in rows) for cid in rows[0]},
        acts=dict.fromkeys(ACTS, 0.0),
        near_miss=near_miss,
        sentences=len(rows),
        per_sentence=tuple(rows),
    )
    zero = dict.fromkeys(p.unlock, 0.0)
    return dataclasses.replace(p, unlock=zero, anti=dict(zero), meaning=meaning)


def _tracker_holding(card, *concern_ids: str) -> ConcernTracker:
    from dialogue_gym.users.concerns import ConcernState

    tracker = ConcernTracker(card, card_preset(card, "hard"))
    tracker.begin(persona_bank(card)[0])
    tracker.states = {cid: ConcernState(strength=0.7, needed=2) for cid in concern_ids}
    return tracker


def _voiced_now(tracker: ConcernTracker, concern_id: str) -> None:
    tracker.voice(concern_id)
    tracker.next_reply()  # the user's reply voiced it: under discussion


def test_a_concern_is_answered_with_the_facts_the_card_shares_with_it(card, analyzer):
    """P4G's card says detachment is answered with efficacy's facts: a turn read likeliest as
    efficacy answers a detachment the user just voiced, but not one out of the blue, and a
    concern without that line in the card (trust) is not answered by a turn read as efficacy."""
    assert "efficacy" in card.concern("detachment").answered_with
    concrete = {"efficacy": 0.6, "detachment": 0.2, "trust": 0.2}
    tracker = _tracker_holding(card, "detachment")
    tracker.credit(_read_as(analyzer, concrete), [], False, False)  # not under discussion
    assert tracker.states["detachment"].progress == 0.0
    _voiced_now(tracker, "detachment")
    events: list[str] = []
    tracker.credit(_read_as(analyzer, concrete), events, False, False)
    assert "addressed:detachment" in events and tracker.states["detachment"].progress == 1.0
    other = _tracker_holding(card, "trust")
    _voiced_now(other, "trust")
    assert other.credit(_read_as(analyzer, concrete), [], False, False)[0] is False
    # A sentence that plainly states the shared fact answers it, however faintly it reads as
    # detachment itself (blind round 7, P4G seed 64: "So I'll skip the dramatic pitch and just
    # be concrete: about 50 cents buys a child a year of deworming pills" read 0.10 as
    # detachment); one that only leans towards the fact, below the reader's line, does not.
    plain = _tracker_holding(card, "detachment")
    _voiced_now(plain, "detachment")
    stated = _read_as(analyzer, {"efficacy": 0.8, "detachment": 0.04})
    assert plain.credit(stated, [], False, False)[0]
    faint = _tracker_holding(card, "detachment")
    _voiced_now(faint, "detachment")
    barely = _read_as(analyzer, {"efficacy": 0.25, "detachment": 0.04})
    assert faint.credit(barely, [], False, False)[0] is False
    # An acknowledgement that reads as a near miss, then the fact: the fact's sentence reads as
    # detachment too ("I get that statistics blur together. So forget the big numbers: 50
    # cents is one child's deworming pills for a year.").
    acknowledged = _tracker_holding(card, "detachment")
    _voiced_now(acknowledged, "detachment")
    two = _read_as(
        analyzer, {"detachment": 0.16}, {"efficacy": 0.53, "detachment": 0.16}, near_miss=0.2
    )
    assert acknowledged.credit(two, [], False, False)[0] is True


def test_an_esconv_seeker_who_feels_unheard_hears_a_validation_of_loneliness() -> None:
    """Blind play round 7, ESConv seed 61: "That sounds lonely, when people jump to 'you'll be
    fine' it can feel like they're closing the door on how much it actually hurts" reads as
    isolation; to a seeker who just said nobody listens it is being heard (the card links the
    two), while to one who never said so it is no answer to that worry."""
    esconv = load_card("esconv")
    reader = UtteranceAnalyzer.for_user(esconv, make_encoder("hashing"))
    assert "isolation" in esconv.concern("feeling_unheard").answered_with
    lonely = _read_as(reader, {"isolation": 0.4, "feeling_unheard": 0.1})
    heard = _tracker_holding(esconv, "feeling_unheard")
    _voiced_now(heard, "feeling_unheard")
    events: list[str] = []
    heard.credit(lonely, events, False, False)
    assert "addressed:feeling_unheard" in events
    unasked = _tracker_holding(esconv, "feeling_unheard")
    unasked.credit(lonely, [], False, False)
    assert unasked.states["feeling_unheard"].progress == 0.0


def test_a_shared_fact_beside_the_answer_is_part_of_it_not_a_second_topic(card, analyzer):
    """Affordability is answered with efficacy's facts (the card says so): "No minimum at all.
    50 cents buys a year of deworming pills." to *money is tight* is one answer with two
    reasons (a thorough answer: the shared fact counts as one of its reasons); the same two
    sentences to *is this charity legit?* touch two topics and split the turn."""
    turn = _read_as(analyzer, {"affordability": 0.7}, {"efficacy": 0.7})
    tight = _tracker_holding(card, "affordability")
    _voiced_now(tight, "affordability")
    events: list[str] = []
    tight.credit(turn, events, False, False)
    assert tight.states["affordability"].progress == 2.0 and "multi_topic" not in events
    doubtful = _tracker_holding(card, "trust")
    _voiced_now(doubtful, "trust")
    other = _read_as(analyzer, {"trust": 0.7}, {"efficacy": 0.7})
    events = []
    doubtful.credit(other, events, False, False)
    assert doubtful.states["trust"].progress == 0.5 and "multi_topic" in events


def test_a_point_after_a_lead_in_answers_the_worry_under_discussion() -> None:
    """Blind play round 8, ESConv seed 76: "I do want to gently push back on one thing, though:
    going without proper sleep ... would wear anyone down — struggling with it isn't a sign
    you're handling things worse than a 'normal' person would" to a seeker who blames itself
    read 0.09 as shame whole. A part of a sentence that plainly reads as the worry under
    discussion answers it; one that only leans towards it does not, nor does a plain part on
    a worry nobody raised."""
    esconv = load_card("esconv")
    reader = UtteranceAnalyzer.for_user(esconv, make_encoder("hashing"))
    lead_in = _read_as(reader, {"shame": 0.09, "overwhelm": 0.16})

    def with_parts(*parts: dict[str, float]) -> Perception:
        assert lead_in.meaning is not None
        rows = tuple(dict.fromkeys(lead_in.unlock, 0.02) | part for part in parts)
        return dataclasses.replace(
            lead_in, meaning=dataclasses.replace(lead_in.meaning, points=rows)
        )

    heard = _tracker_holding(esconv, "shame")
    _voiced_now(heard, "shame")
    assert heard.credit(lead_in, [], False, False)[0] is False  # read whole: no answer
    plain = with_parts({"overwhelm": 0.16}, {"shame": 0.46, "hopelessness": 0.11})
    events: list[str] = []
    assert heard.credit(plain, events, False, False)[0] and "addressed:shame" in events
    leaning = _tracker_holding(esconv, "shame")
    _voiced_now(leaning, "shame")
    assert leaning.credit(with_parts({"shame": 0.2}), [], False, False)[0] is False
    unasked = _tracker_holding(esconv, "shame")
    unasked.credit(plain, [], False, False)
    assert unasked.states["shame"].progress == 0.0


def test_a_turn_read_as_an_answer_is_no_anti_pattern_however_near_its_words(card, analyzer):
    """Blind play round 9, P4G seed 84: "Exactly, you can keep giving to your church as always.
    So, would you like to name a small amount ...?" is near the card's anti-pattern "giving to
    your church isn't really helping anyone" by closeness (0.62) and took back the credit of a
    settled worry; the meaning reader reads it as an answer to that worry (0.44). A turn that
    the reader does not read as an answer still sets the worry back."""
    for answered, expected in ((0.44, 2.0), (0.05, 1.0)):
        tracker = _tracker_holding(card, "other_causes")
        tracker.states["other_causes"].progress = 2.0  # settled
        turn = _read_as(analyzer, {"other_causes": answered})
        # The turn's best topic by closeness is another one (the small amount it asks for).
        unlock = {**turn.unlock, "affordability": 0.9}
        anti = {**turn.anti, "other_causes": 0.62}
        events: list[str] = []
        tracker.credit(dataclasses.replace(turn, unlock=unlock, anti=anti), events, False, False)
        assert tracker.states["other_causes"].progress == expected, (answered, events)


def test_a_plain_answer_in_one_sentence_answers_the_worry_beside_a_stronger_point() -> None:
    """Blind play round 9, Merchant seed 80: "... the terms are in writing ... every promotion
    order shows the split on your statement ... The first two weekends are a trial and you can
    pause or opt out any day with one tap." reads 0.77 as trust in the platform (which this
    owner never doubted) and 0.61 as *burned by a promotion it could not stop*, the worry it
    had just voiced: that sentence answers it. Out of discussion it does not."""
    merchant = load_card("merchant")
    reader = UtteranceAnalyzer.for_user(merchant, make_encoder("hashing"))
    read = _read_as(reader, {"platform_trust": 0.77}, {"past_promo": 0.61})
    # ... and it is close to the card's own answers on trust (the turn's best topic).
    turn = dataclasses.replace(read, unlock={**read.unlock, "platform_trust": 0.9})
    burned = _tracker_holding(merchant, "past_promo")
    _voiced_now(burned, "past_promo")
    events: list[str] = []
    assert burned.credit(turn, events, False, False)[0] and "addressed:past_promo" in events
    unasked = _tracker_holding(merchant, "past_promo")
    unasked.credit(turn, [], False, False)
    assert unasked.states["past_promo"].progress < 1.0
