"""The support tasks: ESConv and EmpatheticDialogues cards, and the embedded worlds telling good
support from bad (100 seeded episodes each, default MiniLM encoder)."""

import re
from pathlib import Path

import pytest

from dialogue_gym.cards.card import load_card
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.users import persona_bank
from dialogue_gym_agents.baselines.empathetic import ScriptedListener
from dialogue_gym_agents.baselines.reflection import second_person
from dialogue_gym_agents.baselines.support import DismissiveAgent

EPISODES = 100

ESCONV_STRATEGIES = (
    "Question",
    "Restatement or Paraphrasing",
    "Reflection of feelings",
    "Self-disclosure",
    "Affirmation and Reassurance",
    "Providing Suggestions",
    "Information",
    "Others",
)
ED_STRATEGIES = (
    "questioning",
    "acknowledging",
    "agreeing",
    "consoling",
    "encouraging",
    "sympathizing",
    "suggesting",
    "wishing",
)
LABELS = {"worse": -1.0, "same": -0.5, "somewhat_better": 0.5, "resolved": 1.0}
STANCES = {
    "refused": "worse",
    "neutral": "same",
    "positive": "somewhat_better",
    "agree": "resolved",
}


class GenericSympathy:
    """A listener who greets and then only offers stock sympathy (never anything specific)."""

    LINES = (
        "Oh no, I'm so sorry to hear that.",
        "That sounds really hard.",
        "I can imagine how you feel.",
        "Aw, I hope things get better for you.",
        "That's really something. I'm sure it'll all work out.",
        "I hear you. That must be a lot.",
        "Sending you a big hug.",
        "Wow, that's a lot to deal with.",
    )

    def __init__(self, card, seed=None):
        self.reset(seed)

    def reset(self, seed=None):
        self.turn = 0

    def act(self, observation):
        self.turn += 1
        if self.turn == 1:
            return "Hi! How are you doing today?"
        return self.LINES[(self.turn - 2) % len(self.LINES)]


GENERIC = f"{Path(__file__).resolve()}:GenericSympathy"


# -- the cards ---------------------------------------------------------------------------------


def test_esconv_card():
    card = load_card("esconv")
    assert card.id == "ESConv"
    assert (card.system_role, card.user_role) == ("supporter", "help-seeker")
    assert card.strategy_names == ESCONV_STRATEGIES
    assert [s.name for s in card.strategies if s.asks] == ["Providing Suggestions"]
    assert all(7 <= len(s.templates) <= 10 for s in card.strategies)
    judge = card.success_judge
    assert dict(judge.labels) == LABELS
    assert (judge.rule, judge.threshold) == ("mean", 0.5)
    assert dict(judge.decision_labels) == STANCES
    assert "Patient's issue been solved" in judge.question
    target = card.target
    assert (target.receptivity, target.confidence, target.valence) == (1.0, 0.7, 0.4)
    assert "suggestion" in target.intention
    assert card.decision_trigger == "ask"
    assert len(card.concerns) >= 6
    assert {c.facet for c in card.concerns} == {"psychological", "operational", "financial"}
    assert {"problem", "situation", "emotion"} <= set(card.personas.slots)


def test_ed_card():
    card = load_card("ed")
    assert card.id == "ED"
    assert (card.system_role, card.user_role) == ("listener", "speaker")
    assert card.strategy_names == ED_STRATEGIES
    assert not any(s.asks for s in card.strategies)
    judge = card.success_judge
    assert dict(judge.labels) == LABELS
    assert (judge.rule, judge.success_label) == ("label", "resolved")
    assert dict(judge.decision_labels) == STANCES
    assert "generic sympathetic response is at most somewhat_better" in judge.question
    target = card.target
    assert (target.receptivity, target.confidence, target.valence) == (0.8, 0.6, 0.3)
    assert card.decision_trigger == "any"
    assert len(card.personas.slots["situation"]) >= 60
    # The strongest blocker is met only by talking about the speaker's own situation.
    heard = card.concern("feeling_heard")
    assert heard.situational is not None and heard.blocking_weight == 1.0


@pytest.mark.parametrize("name", ["esconv", "ed"])
def test_persona_replies_are_filled(name):
    card = load_card(name)
    bank = persona_bank(card)
    assert len({p.id for p in bank}) == len(bank) >= 200
    assert all("{" not in p.background for p in bank)
    facts = set(bank[0].facts) | {"concern_voice", "name"}
    for key, templates in card.replies.items():
        for template in templates:
            assert set(re.findall(r"{(\w+)}", template)) <= facts, (key, template)


def test_reflections_turn_first_person_into_second():
    assert second_person("I had to put my dog to sleep and I'm devastated") == (
        "you had to put your dog to sleep and you're devastated"
    )
    assert second_person("i was so scared.") == "you were so scared"


def test_scripted_listener_reflects_the_speakers_own_words():
    card = load_card("ed")
    listener, dismissive = ScriptedListener(card, seed=0), DismissiveAgent(card, seed=0)
    history = ({"speaker": 0, "text": listener.act({"history": (), "exchange": 0})},)
    story = (
        "Hi. I watched my daughter graduate from nursing school on Saturday, and I was so proud."
    )
    observation = {"history": (*history, {"speaker": 1, "text": story}), "exchange": 1}
    reply = listener.act(observation)
    assert "your daughter graduate from nursing school" in reply
    assert dismissive.act(observation) and dismissive.act(observation)


# -- the embedded worlds tell good support from bad ----------------------------------------------


def _table(agents, env_ids):
    result = evaluate(agents, env_ids, episodes=EPISODES, progress=False)
    return {(row["agent"], row["env_id"].split("-v")[0]): row for row in result.summaries}


@pytest.fixture(scope="module")
def esconv():
    return {
        **_table(["scripted", "dismissive"], ["ESConv-hard"]),
        **_table(["dismissive"], ["ESConv-soft"]),
    }


@pytest.fixture(scope="module")
def ed():
    return {
        **_table(["scripted", "dismissive", GENERIC], ["ED-hard"]),
        **_table(["dismissive"], ["ED-soft"]),
    }


def test_esconv_scripted_supporter_beats_dismissive_on_hard_seekers(esconv):
    scripted, dismissive = esconv["scripted", "ESConv-hard"], esconv["dismissive", "ESConv-hard"]
    assert scripted["sr"] >= dismissive["sr"] + 0.3
    assert scripted["rcsr"] >= scripted["sr"] - 0.1  # helped for real, not by concessions
    assert dismissive["sr"] <= 0.15


def test_esconv_soft_seekers_are_biased_and_rcsr_catches_it(esconv):
    soft, hard = esconv["dismissive", "ESConv-soft"], esconv["dismissive", "ESConv-hard"]
    assert soft["sr"] >= hard["sr"] + 0.3
    assert soft["rcsr"] <= soft["sr"] - 0.3


def test_ed_scripted_listener_beats_dismissive_on_hard_speakers(ed):
    scripted, dismissive = ed["scripted", "ED-hard"], ed["dismissive", "ED-hard"]
    assert scripted["sr"] >= dismissive["sr"] + 0.3
    assert scripted["rcsr"] >= scripted["sr"] - 0.1


def test_ed_generic_sympathy_never_resolves_hard_speakers(ed):
    generic, scripted = ed[GENERIC, "ED-hard"], ed["scripted", "ED-hard"]
    assert generic["sr"] <= 0.1
    assert scripted["sr"] >= generic["sr"] + 0.3


def test_ed_soft_speakers_are_biased_and_rcsr_catches_it(ed):
    soft, hard = ed["dismissive", "ED-soft"], ed["dismissive", "ED-hard"]
    assert soft["sr"] >= hard["sr"] + 0.3
    # RCSR discounts at least half of the biased successes (issue 13 lowered soft SR, so an
    # absolute gap of 0.3 no longer fits: SR 0.46, RCSR 0.17 at the time of writing).
    assert soft["rcsr"] <= 0.5 * soft["sr"]
