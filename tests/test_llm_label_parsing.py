"""LLM label parsing never guesses: hedges, echoes, questions and prose are failed votes.

Issue 13 ("a user that cannot be gamed"): an endpoint that echoes the judge's question or
hedges ("I cannot tell whether the persuadee has decided to donate.") used to be read as
``agree``, a success at exchange 1 with nothing flagged. Labels are now read only from the
exact answer format; everything else is unparseable, counted in ``judge_failures``, flagged in
``judge_unparseable`` and never a success.
"""

from __future__ import annotations

import dataclasses

import pytest

import dialogue_gym
from dialogue_gym.backends import FakeBackend
from dialogue_gym.cards.card import load_card
from dialogue_gym.judges.base import Exchange
from dialogue_gym.judges.llm import LLMRationalityJudge, LLMSuccessJudge
from dialogue_gym.llm import parsing, prompts
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.users.base import UserTurn

HEDGE = "I cannot tell whether the persuadee has decided to donate."
KEY_ENV = "DG_LABEL_TEST_KEY"


def options_of(card_id: str) -> dict[str, tuple[str, ...]]:
    card = load_card(card_id)
    return {o.label: (o.answer, *o.aliases) for o in prompts.success_options(card)}


@pytest.fixture(scope="module")
def p4g_options():
    return options_of("p4g")


@pytest.fixture(scope="module")
def esconv_options():
    return options_of("esconv")


# -- parse_label: rejected ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # hedges
        HEDGE,
        "I can't determine whether they agreed.",
        "It is unclear.",
        "Agree, maybe.",
        "Possibly agree",
        "Not sure - positive",
        "Agree. I'm unsure though.",
        "Hard to say; neutral or positive.",
        "It depends on what counts as agreeing.",
        "I don't know.",
        "Insufficient information to decide: neutral.",
        # questions and echoed questions
        "Has the persuadee decided to donate?",
        "Agree?",
        "agree? The persuadee said okay.",
        "Question: Has the persuadee decided to donate part of their task payment?",
        "Answer with exactly one label (refused, neutral, positive, agree) and nothing else.",
        "echo: Conversation so far: <dialogue> (no turns yet) </dialogue>",
        # option lists
        "refused, neutral, positive or agree",
        "agree or positive",
        "agree/positive",
        "Agree / refused",
        "positive (leaning toward agree)",
        # negated labels
        "Not agree",
        "The persuadee did not agree.",
        "Agree - no, they refused.",
        # prose merely mentioning a label
        "I think the persuadee has decided to donate.",
        "The persuadee agreed to hear more.",
        "I'd say neutral.",
        "They seem positive about it.",
        # marker lines that are not exactly one label
        "Answer: agree, they pledged $1",
        "Answer: not agree",
        "Answer: agree\nAnswer: refused",
        "Refused. They declined.\nFinal answer: agree",
        # nothing
        "",
        "   ",
        None,
        "banana",
    ],
)
def test_parse_label_rejects_what_is_not_the_answer_format(p4g_options, text):
    assert parsing.parse_label(text, p4g_options) is None


# -- parse_label: the exact formats ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("agree", "agree"),
        ("Agree.", "agree"),
        ("**AGREE**", "agree"),
        ('"neutral"', "neutral"),
        ("`refused`", "refused"),
        ("Undecided", "neutral"),  # an alias the prompt's meaning uses
        ("Answer: agree", "agree"),
        ("Label: positive.", "positive"),
        ("Final answer: **refused**", "refused"),
        ("The final label is: neutral", "neutral"),
        ("The persuadee pledged $1.\nAnswer: agree", "agree"),
        ("Agree. The persuadee said yes.", "agree"),
        ("agree - because they pledged $1", "agree"),
        ("Agree: they committed to $1.", "agree"),
        ("agree\nThe persuadee pledged $1.", "agree"),
        ("Positive, but they did not agree yet.", "positive"),
        ("Neutral - the persuadee has not refused or decided.", "neutral"),
        ("Agree (committed)", "agree"),
    ],
)
def test_parse_label_reads_the_exact_formats(p4g_options, text, label):
    assert parsing.parse_label(text, p4g_options) == label


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("No, the Patient feels worse.", "worse"),
        ("No, the Patient feels the same", "same"),
        ("No, but the Patient feels better.", "somewhat_better"),
        ("Yes, the Patient's issue has been solved.", "resolved"),
        ("somewhat_better", "somewhat_better"),
        ("Somewhat better", "somewhat_better"),
        ("No, but the Patient feels better. The issue is not solved yet.", "somewhat_better"),
        ("Answer: No, the Patient feels the same.", "same"),
        # rejected
        ("The patient doesn't feel better; they feel the same.", None),
        ("Has the Patient's issue been solved?", None),
        (
            "No, the Patient feels worse; No, the Patient feels the same; No, but the Patient "
            "feels better; Yes, the Patient's issue has been solved.",
            None,
        ),
        ("No, but the Patient feels better. Maybe solved.", None),
        ("No, the Patient feels worse. The issue has been solved.", None),
    ],
)
def test_esconv_alias_sentences(esconv_options, text, label):
    assert parsing.parse_label(text, esconv_options) == label


# -- rationality and deals ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("RATIONAL", 1),
        ("NOT_RATIONAL", -1),
        ("Not rational.", -1),
        ("irrational", -1),
        ("**RATIONAL**", 1),
        ("Answer: NOT_RATIONAL", -1),
        ("RATIONAL. The user updated on a concrete reason.", 1),
        ("NOT_RATIONAL - the user ignored the reason", -1),
        ("RATIONAL. The user was not irrational here.", 1),
        # rejected
        ("RATIONAL or NOT_RATIONAL", None),
        ("RATIONAL/NOT_RATIONAL", None),
        ("Was it rational for the user to respond this way?", None),
        ("RATIONAL?", None),
        ("Maybe RATIONAL.", None),
        ("RATIONAL, probably.", None),
        ("I cannot tell whether the response was rational.", None),
        ("The user is rational.", None),
        ("The response is NOT RATIONAL because it ignores the reason.", None),
        ("RATIONAL. Then again, not rational.", None),
        ("Not NOT_RATIONAL", None),
        ("Answer with exactly one label: RATIONAL or NOT_RATIONAL.", None),
        ("", None),
    ],
)
def test_parse_rationality_is_strict(text, value):
    assert parsing.parse_rationality(text) == value


DEAL = parsing.DealVote


@pytest.mark.parametrize(
    ("text", "vote"),
    [
        ("They have reached a deal at $250.", DEAL(True, 250.0)),
        ("Answer: They have reached a deal at $1,200", DEAL(True, 1200.0)),
        ("They have reached a deal at $320. The buyer accepted.", DEAL(True, 320.0)),
        ("They have not reached a deal.", DEAL(False)),
        ("They have not reached a deal - the seller refused $250.", DEAL(False)),
        ("No deal.", DEAL(False)),
        ("They have reached a deal.", DEAL(True, None)),
        # rejected
        ("I cannot tell whether they have reached a deal.", None),
        ("Have the buyer and seller reached a deal by the end of the conversation?", None),
        ("They have reached a deal at [price].", None),
        ("They have reached a deal at [price]. Otherwise: They have not reached a deal.", None),
        ("They have reached a deal at $300 or they have not reached a deal", None),
        ("Maybe they have reached a deal at $300.", None),
        ("They have reached a deal at $300, probably.", None),
        ("The buyer agreed on a price of $300.", None),
        ("They have reached a deal at $320. Actually they have not reached a deal.", None),
        ("Not sure.", None),
    ],
)
def test_parse_deal_is_strict(text, vote):
    assert parsing.parse_deal(text, reference=400.0) == vote


# -- the judge: failed votes are flagged and never succeed -------------------------------------

HISTORY = (
    ("system", "Would you donate $1 of your payment?"),
    ("user", "Okay, $1 it is."),
)
STATE = BDI("b", "d", "i", 0.5, 0.5, 0.0)


def exchange() -> Exchange:
    turn = UserTurn(HISTORY[-1][1], "agree", STATE, True)
    return Exchange(1, HISTORY, HISTORY[0][1], HISTORY[1][1], turn, {})


def test_unparseable_votes_are_flagged_and_cast_lowest():
    card = load_card("p4g")
    judge = LLMSuccessJudge(card, FakeBackend.scripted(["agree", HEDGE, "Agree?"]))
    judgment = judge.judge(exchange())
    assert judgment.votes == ("agree", "refused", "refused") and judgment.n_failed == 2
    assert judgment.unparseable == (1, 2)
    assert judgment.details == {"judge_unparseable": [1, 2]}
    assert not judgment.success


def test_all_unparseable_is_a_failure_even_when_the_lowest_label_would_pass():
    card = load_card("p4g")
    lenient = dataclasses.replace(card.success_judge, threshold=-1.0)  # refused (-1) passes
    card = dataclasses.replace(card, success_judge=lenient)
    judgment = LLMSuccessJudge(card, FakeBackend.scripted([HEDGE] * 3)).judge(exchange())
    assert judgment.n_failed == 3 and judgment.unparseable == (0, 1, 2)
    assert judgment.score == -1.0 and not judgment.success
    readable = LLMSuccessJudge(card, FakeBackend.scripted(["refused"] * 3)).judge(exchange())
    assert readable.success and readable.n_failed == 0  # the same label, read: a success


def test_rationality_judge_hedge_is_unparseable():
    card = load_card("p4g")
    judge = LLMRationalityJudge(card, FakeBackend.scripted(["Maybe RATIONAL."]))
    assert judge.judge(exchange()) == 0


def test_deal_judge_flags_echoed_template():
    card = load_card("cb")
    backend = FakeBackend.scripted(
        ["They have reached a deal at [price].", *["They have reached a deal at $300."] * 2]
    )
    history = (
        ("user", "It's a Trek bike. I'm asking $400."),
        ("system", "Would you take $300?"),
        ("user", "Deal at $300."),
    )
    turn = UserTurn(history[-1][1], "agree", STATE, True)
    ex = Exchange(1, history, history[1][1], history[2][1], turn, {"listing_price": 400.0})
    judgment = LLMSuccessJudge(card, backend).judge(ex)
    assert judgment.n_failed == 1 and judgment.unparseable == (0,)
    assert judgment.label == "no_deal" and not judgment.success
    assert judgment.details["judge_unparseable"] == [0]


# -- against the real OpenAI-compatible test server --------------------------------------------


def _question_line(body) -> str:
    prompt = body["messages"][-1]["content"]
    return next(line for line in prompt.splitlines() if line.startswith("Question:"))


def _options_line(body) -> str:
    prompt = body["messages"][-1]["content"]
    return next(line for line in prompt.splitlines() if "exactly one label" in line)


REPLIES = {
    "echo": None,  # the server's own echo of the prompt
    "question": _question_line,
    "options": _options_line,
    "hedge": lambda body: HEDGE,
    "hedged_agree": lambda body: "Agree, maybe.",
}


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-label-test-0000")


def _env(server, task: str = "P4G-hard"):
    return dialogue_gym.make(
        task,
        encoder="hashing",
        judges="llm",
        backend="openai:test-judge",
        backend_options={"base_url": server.url, "api_key_env": KEY_ENV, "max_retries": 0},
        cache_mode="off",
    )


@pytest.mark.parametrize("kind", sorted(REPLIES))
def test_echoing_or_hedging_endpoint_never_succeeds(api_key, kind):
    pytest.importorskip("openai")
    from dialogue_gym.testing.server import TestServer

    with TestServer(replies=REPLIES[kind]) as server:
        env = _env(server)
        env.reset(seed=0)
        *_, terminations, _, infos = env.step({"system": "Would you donate $1 of your payment?"})
        replies = [r.body for r in server.chat_requests]
    info = infos["system"]
    assert replies, "the judges asked the server"
    assert info["success"] is False and not terminations["system"]
    assert info["judge_failures"] == len(info["judge_votes"]) == 3
    assert info["judge_unparseable"] == [0, 1, 2]
    assert info["judge_votes"] == ["refused"] * 3  # cast as the lowest label, never positive
    assert info["q"] == 0  # the rationality judge's echo/hedge is unparseable too
    assert env.agents  # the episode goes on: no success at exchange 1


def test_well_formed_endpoint_still_succeeds(api_key):
    pytest.importorskip("openai")
    from dialogue_gym.testing.server import TestServer

    def reply(body):
        system = body["messages"][0]["content"]
        return "RATIONAL" if "NOT_RATIONAL" in system else "Agree. The persuadee said yes."

    with TestServer(replies=reply) as server:
        env = _env(server)
        env.reset(seed=0)
        *_, infos = env.step({"system": "Would you donate $1 of your payment?"})
    info = infos["system"]
    assert info["success"] is True and info["judge_failures"] == 0
    assert info["judge_unparseable"] == [] and info["judge_votes"] == ["agree"] * 3
    assert info["q"] == 1
