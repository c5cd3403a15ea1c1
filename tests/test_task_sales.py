"""The outbound-sales cards (Merchant, Courier): content, and the embedded world must tell good
selling from bad (100 seeded episodes per agent and user type, default MiniLM encoder)."""

import re
from statistics import mean

import pytest

import dialogue_gym
from dialogue_gym.cards.card import FACETS, REQUIRED_REPLIES, load_card
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.judges.embedded import classify_stance
from dialogue_gym.users import persona_bank

TASKS = ("Merchant", "Courier")
EPISODES = 100


@pytest.fixture(scope="module", params=TASKS)
def card(request):
    return load_card(request.param.lower())


def test_cards_are_registered_as_soft_and_hard_envs():
    for task in TASKS:
        assert {f"{task}-soft-v0", f"{task}-hard-v0"} <= set(dialogue_gym.registry)


def test_card_has_the_required_content(card):
    assert card.id in TASKS
    assert len(card.concerns) >= 8
    assert {c.facet for c in card.concerns} == set(FACETS)
    for concern in card.concerns:
        assert concern.resistance >= 1 and 0 < concern.blocking_weight <= 1
        assert len(concern.voice) >= 4 and len(concern.unlock) >= 4 and len(concern.anti) >= 3
        assert concern.unlock_cues and concern.anti_cues
        assert concern.ack_partial and concern.ack_resolved
    assert 8 <= len(card.strategies) <= 12
    assert sum(s.asks for s in card.strategies) == 1  # one strategy proposes enrollment
    addressed = {cid for s in card.strategies for cid in s.addresses}
    assert addressed == {c.id for c in card.concerns}  # every concern has a strategy for it
    assert set(REQUIRED_REPLIES) <= set(card.replies)
    assert len(card.styles) >= 6 and any(s.lowercase for s in card.styles)
    assert card.success_judge.labels == {
        "refused": -1.0,
        "neutral": -0.5,
        "positive": 0.1,
        "agree": 1.0,
    }
    assert card.success_judge.threshold == 0.6
    assert (card.target.receptivity, card.target.confidence, card.target.valence) == (
        0.9,
        0.8,
        0.4,
    )


def test_persona_bank_is_large_and_uses_every_ingredient(card):
    bank = persona_bank(card)
    assert len(bank) >= 200
    assert {p.style for p in bank} == {s.id for s in card.styles}
    assert {cid for p in bank for cid, _ in p.concerns} == {c.id for c in card.concerns}
    assert len({p.background for p in bank}) >= 190
    assert all(set(p.facts) == set(card.personas.slots) for p in bank)


def test_reply_placeholders_are_defined(card):
    known = {"concern_voice", "name", *card.personas.slots}
    texts = [t for options in card.replies.values() for t in options]
    texts += [t for c in card.concerns for t in (*c.voice, *c.ack_partial, *c.ack_resolved)]
    for text in texts:
        assert set(re.findall(r"{(\w+)}", text)) <= known, text


def test_reply_templates_state_the_stance_they_stand_for(card):
    # The embedded judge reads external replies, and the scripted agent reads every reply,
    # through the card's reply_* cues.
    expected = {
        "agree": "agree",
        "refuse": "refused",
        "pushback": "refused",
        "positive": "positive",
    }
    for key, stance in expected.items():
        for text in card.replies[key]:
            assert classify_stance(text, card) == stance, (key, text)
    for concern in card.concerns:
        for text in concern.ack_resolved:
            assert classify_stance(text, card) == "positive", (concern.id, text)
        for text in (*concern.voice, *concern.ack_partial):
            assert classify_stance(text, card) not in ("agree", "refused"), (concern.id, text)


# -- discrimination ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def results():
    # Both agents on hard users; on soft users only pushy is asserted on, so only it is run.
    hard = [f"{task}-hard" for task in TASKS]
    soft = [f"{task}-soft" for task in TASKS]
    rows: dict[tuple[str, str], dict] = {}
    records: dict[tuple[str, str], list[dict]] = {}
    for agents, env_ids in ((["scripted", "pushy"], hard), (["pushy"], soft)):
        result = evaluate(agents, env_ids, episodes=EPISODES, progress=False)
        rows.update({(row["agent"], row["env_id"]): row for row in result.summaries})
        for record in result.records:
            records.setdefault((record["agent"], record["env_id"]), []).append(record)
    return rows, records


@pytest.mark.parametrize("task", TASKS)
def test_scripted_is_clearly_ahead_of_pushy_on_hard_users(results, task):
    rows, _ = results
    scripted, pushy = rows["scripted", f"{task}-hard-v0"], rows["pushy", f"{task}-hard-v0"]
    assert scripted["sr"] >= 0.45
    assert scripted["sr"] >= pushy["sr"] + 0.3
    assert scripted["rcsr"] >= scripted["sr"] - 0.1  # reasons, not concessions


@pytest.mark.parametrize("task", TASKS)
def test_soft_users_yield_to_pushy_and_rcsr_catches_it(results, task):
    rows, _ = results
    soft, hard = rows["pushy", f"{task}-soft-v0"], rows["pushy", f"{task}-hard-v0"]
    assert soft["sr"] >= hard["sr"] + 0.3
    assert soft["rcsr"] <= soft["sr"] - 0.3


@pytest.mark.parametrize("task", TASKS)
def test_scripted_resolves_and_draws_out_more_concerns_on_hard_users(results, task):
    _, records = results
    scripted, pushy = records["scripted", f"{task}-hard-v0"], records["pushy", f"{task}-hard-v0"]
    assert len(scripted) == len(pushy) == EPISODES
    for metric in ("csr", "proactivity", "proactive_turns"):
        assert all(metric in r for r in scripted + pushy), metric
    assert mean(r["csr"] for r in scripted) >= mean(r["csr"] for r in pushy) + 0.3
    # The scripted agent takes the initiative by asking open questions that draw concerns out
    # (probing) rather than by guessing them (anticipation); both count as initiative turns.
    initiative = mean(r["proactive_turns"] for r in scripted)
    assert initiative >= mean(r["proactive_turns"] for r in pushy) + 1.0
