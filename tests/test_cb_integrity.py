"""CraigslistBargain integrity (issue 13): capitulating is not winning, one argument a turn.

* A deal at the listing price has utility 0: SL 0 and, with the shipped strict card
  (``judge.success.inclusive = false``), no success — its AT counts as T.
* The paper's inclusive convention stays reachable (``DealJudge(card, inclusive=True)``).
* SL (PPDPP's sale-to-list ratio) is in the per-episode records, ``summary.json``, the console
  table and the md/csv/HTML reports for CB, and absent for other tasks; CB rows rank by SL.
* The embedded seller credits one argument per turn, with 1/k of its gain when the turn touches
  k arguments (stuffing every reason in, or rotating two per turn); stuffing also costs a
  little mood.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import json
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dialogue_gym
from dialogue_gym import metrics
from dialogue_gym.cards.card import CardError, load_card, parse_card
from dialogue_gym.evaluation.run import EPISODES_FILE, SUMMARY_FILE, evaluate
from dialogue_gym.judges.base import Exchange
from dialogue_gym.judges.deal import DealJudge
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.plugins.cb.seller import HARD, Listing, SellerUser
from dialogue_gym.report import csv_table, html_report, load_run, markdown_table
from dialogue_gym.text.prices import asking_price_in, format_price, mask_prices, offer_in
from dialogue_gym.users.base import UserTurn
from dialogue_gym.users.persona import persona_bank

GREETING = "Hi! Is this still available?"
ARGUE_CONDITION = "I noticed some scratches and wear, so it isn't really like new anymore."
STUFFED = (
    "I noticed some scratches and wear, so it isn't really like new anymore. I've seen the same "
    "model listed for quite a bit less nearby. I can pick it up today and pay in cash. My budget "
    "is really tight right now."
)
PRIV = {"listing_price": 500.0, "buyer_target": 350.0, "deal": True, "deal_price": 450.0}
OPENING = [("system", GREETING), ("user", "Hi! It's the bike. I'm asking $500.")]


class ListPriceBuyer:
    """The exploit: "Is it still available?" then "Deal at $LISTING"."""

    def __init__(self, card: Any = None, **kwargs: Any) -> None:
        self.listing: float | None = None

    def reset(self, seed: int | None = None) -> None:
        self.listing = None

    def act(self, observation: dict[str, Any]) -> str:
        replies = [t["text"] for t in observation["history"] if t["speaker"] == 1]
        if not replies:
            return GREETING
        if self.listing is None:
            self.listing = asking_price_in(replies[0])
        return f"Deal at {format_price(self.listing or 0.0)}."


EXPLOIT = f"{__file__}:ListPriceBuyer"


@pytest.fixture(scope="module")
def card():
    return load_card("cb")


@pytest.fixture(scope="module")
def encoder():
    return make_encoder("minilm")


@pytest.fixture(scope="module")
def seller_factory(card, encoder):
    listing = Listing(
        id="T-1",
        category="bikes",
        title="Trek FX 3 hybrid bike",
        price=500.0,
        buyer_target=350.0,
        bottom_quantile=0.5,
        highlight="It rides smooth.",
        flaw="some rust on the chain",
    )
    persona = dataclasses.replace(persona_bank(card)[0], concerns=(("condition", 0.9),))

    def factory(preset="hard", seed=0):
        seller = SellerUser(card, encoder, preset=preset, personas=(persona,), listings=(listing,))
        seller.reset(np.random.default_rng(seed))
        return seller

    return factory


def _exchange(card, history, privileged):
    turn = UserTurn(history[-1][1], "agree", card.target, True)
    return Exchange(
        index=len(history) // 2,
        history=tuple(history),
        system=history[-2][1],
        user=history[-1][1],
        turn=turn,
        privileged=privileged,
    )


# -- the judge: a deal at the listing price is not a success -----------------------------------


def test_card_is_strict_and_other_cards_stay_inclusive(card):
    assert card.success_judge.inclusive is False and card.success_judge.threshold == 0.0
    assert not card.success_judge.passes(0.0) and card.success_judge.passes(0.01)
    assert load_card("p4g").success_judge.inclusive is True  # the default, backwards compatible


def test_inclusive_field_is_validated():
    from importlib import resources

    import tomllib

    text = (resources.files("dialogue_gym.catalog") / "cb.toml").read_text("utf-8")
    data = tomllib.loads(text)
    data["judge"]["success"]["inclusive"] = "no"
    with pytest.raises(CardError, match="inclusive"):
        parse_card(data)
    del data["judge"]["success"]["inclusive"]
    assert parse_card(data).success_judge.inclusive is True  # a card without the field


def test_list_price_acceptance_scores_sl_zero_and_is_no_success(card):
    history = [*OPENING, ("system", "Deal at $500."), ("user", "Deal at $500. It's yours.")]
    judgment = DealJudge(card).judge(_exchange(card, history, {**PRIV, "deal_price": 500.0}))
    assert judgment.label == "deal" and judgment.deal_price == 500.0
    assert judgment.utility == 0.0
    assert not judgment.success
    step = {"success": judgment.success, **judgment.details}
    assert metrics.sl_from_steps([step]) == 0.0
    # The paper's convention (MASP C.7: utility >= 0) stays reachable.
    assert (
        DealJudge(card, inclusive=True)
        .judge(_exchange(card, history, {**PRIV, "deal_price": 500.0}))
        .success
    )


def test_a_deal_below_the_listing_is_a_success(card):
    history = [*OPENING, ("system", "Would you take $490?"), ("user", "Deal at $490.")]
    judgment = DealJudge(card).judge(_exchange(card, history, {**PRIV, "deal_price": 490.0}))
    assert judgment.success and judgment.utility == pytest.approx(10 / 150)


def test_buyer_accepting_a_lower_counter_succeeds_with_its_sl():
    env = dialogue_gym.make("CB-hard", encoder="minilm", privileged=True)
    env.reset(seed=3)
    steps = []
    *_, infos = env.step({"system": GREETING})
    steps.append(infos["system"])
    listing = infos["system"]["privileged"]["listing_price"]
    target = infos["system"]["privileged"]["buyer_target"]
    counter = listing
    # One argument per turn (unvoiced ones earn part of their weight) until the seller moves.
    for argument, fraction in zip(STUFFED.split(". ")[:3], (0.7, 0.72, 0.74), strict=True):
        offer = format_price(round(fraction * listing))
        obs, *_, infos = env.step({"system": f"{argument.rstrip('.')}. Would you take {offer}?"})
        steps.append(infos["system"])
        counter = offer_in(obs["system"]["history"][-1]["text"], listing) or listing
        if counter < listing:
            break
    assert counter < listing
    _, _, term, _, infos = env.step({"system": "Okay, you've got a deal at your price."})
    steps.append(infos["system"])
    info = infos["system"]
    assert term["system"] and info["success"] and info["deal_price"] == counter
    expected = (counter - listing) / (target - listing)
    assert info["utility"] == pytest.approx(expected) and expected > 0
    assert metrics.sl_from_steps(steps) == pytest.approx(expected)
    assert info["episode"]["success_turn"] == len(steps)


def test_the_exploit_runs_to_T_with_sl_zero(tmp_path):
    result = evaluate(
        EXPLOIT, "CB-hard", episodes=3, env_kwargs={"encoder": "hashing"}, progress=False
    )
    for record in result.records:
        assert record["success"] is False and record["turns"] == record["T"] == 8
        assert "deal" in record["labels"]  # a deal was struck — at the listing price
        assert record["sl"] == 0.0
    row = result.summaries[0]
    assert row["sr"] == 0.0 and row["at"] == 8.0 and row["sl"] == 0.0


# -- SL everywhere for CB, nowhere else --------------------------------------------------------


@pytest.fixture(scope="module")
def cb_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cb") / "run"
    evaluate(
        [EXPLOIT, "scripted"],
        "CB-hard",
        episodes=4,
        out=out,
        env_kwargs={"encoder": "hashing"},
        progress=False,
    )
    return out


@pytest.fixture(scope="module")
def p4g_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("p4g") / "run"
    evaluate(
        "scripted",
        "P4G-hard",
        episodes=2,
        out=out,
        env_kwargs={"encoder": "hashing"},
        agent_kwargs={"encoder": "hashing"},
        progress=False,
    )
    return out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (path / EPISODES_FILE).read_text().splitlines()]


def test_sl_in_cb_records_summary_and_tables(cb_run):
    records = _lines(cb_run)
    assert all(isinstance(r["sl"], float) for r in records)
    summaries = json.loads((cb_run / SUMMARY_FILE).read_text())["summaries"]
    for row in summaries:
        assert row["sl"] is not None and len(row["sl_ci"]) == 2
        mine = [r["sl"] for r in records if r["agent"] == row["agent"]]
        assert row["sl"] == pytest.approx(sum(mine) / len(mine))
    md = markdown_table(cb_run)
    header = md.splitlines()[0]
    assert "| SR@8 [95% CI] | SL [95% CI] | AT [95% CI] |" in header
    rows = list(csv.DictReader(io.StringIO(csv_table(cb_run))))
    assert all(r["sl"] != "" and r["sl_ci_low"] != "" for r in rows)
    html = html_report(cb_run)
    assert "SL [95% CI]" in html and "sale-to-list" in html


def test_no_sl_outside_negotiation(p4g_run):
    records = _lines(p4g_run)
    assert all("sl" not in r for r in records)
    row = json.loads((p4g_run / SUMMARY_FILE).read_text())["summaries"][0]
    assert "sl" not in row and "sl_ci" not in row
    assert "SL" not in markdown_table(p4g_run).splitlines()[0]
    assert all(r["sl"] == "" for r in csv.DictReader(io.StringIO(csv_table(p4g_run))))
    assert "SL [95% CI]" not in html_report(p4g_run)
    table = metrics.format_table(metrics.rank_rows([{"agent": "a", "env_id": "P4G", **row}]))
    assert " SL " not in table.splitlines()[0]


def test_cli_table_shows_sl_for_cb(tmp_path, capsys):
    from dialogue_gym.cli.commands import main

    args = ["eval", "CB-hard", "--agent", EXPLOIT, "--agent", "scripted", "--episodes", "2"]
    code = main([*args, "--encoder", "hashing", "--no-progress", "--out", str(tmp_path / "run")])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0]
    assert header.index("SR@8") < header.index("SL") < header.index("AT")
    body = lines[2:4]
    assert body[0].startswith("scripted") and body[1].startswith(EXPLOIT)  # ranked by SL


# -- ranking: CB by SL, the AT of a capitulation wins nothing ----------------------------------


def _row(agent: str, env_id: str, sr: float, at: float, sl: float | None = None):
    row: dict[str, Any] = {"agent": agent, "env_id": env_id, "sr": sr, "at": at, "T": 8}
    if sl is not None:
        row.update(sl=sl, sl_ci=[sl, sl])
    return row


def test_rank_rows_orders_cb_by_sl_and_leaves_others():
    rows = [
        _row("fast", "CB-hard-v0", sr=1.0, at=2.0, sl=0.0),
        _row("fast", "P4G-hard-v0", sr=0.2, at=7.0),
        _row("good", "CB-hard-v0", sr=0.8, at=6.5, sl=0.3),
        _row("good", "P4G-hard-v0", sr=0.9, at=4.0),
        _row("mid", "CB-hard-v0", sr=0.9, at=6.0, sl=0.3),
    ]
    ranked = metrics.rank_rows(rows)
    assert [(r["agent"], r["env_id"]) for r in ranked] == [
        ("mid", "CB-hard-v0"),  # same SL as "good", higher SR
        ("fast", "P4G-hard-v0"),
        ("good", "CB-hard-v0"),
        ("good", "P4G-hard-v0"),
        ("fast", "CB-hard-v0"),  # SR 1.0 and AT 2 from capitulating: last
    ]
    assert rows[0]["agent"] == "fast"  # the input is not reordered


def test_report_leaderboard_ranks_cb_by_sl(tmp_path):
    def record(agent: str, episode: int, success_turn: int | None, sl: float) -> dict[str, Any]:
        n = success_turn or 8
        return {
            "agent": agent,
            "env_id": "CB-hard-v0",
            "episode": episode,
            "seed": episode,
            "success": success_turn is not None,
            "success_turn": success_turn,
            "turns": n,
            "T": 8,
            "q": [1] * n,
            "errored": False,
            "sl": sl,
        }

    records = [record("capitulator", i, 2, 0.0) for i in range(4)]
    records += [record("haggler", i, 7 if i else None, 0.4 if i else 0.0) for i in range(4)]
    run = tmp_path / "run"
    run.mkdir()
    (run / EPISODES_FILE).write_text("\n".join(json.dumps(r) for r in records) + "\n")
    md = markdown_table(run).splitlines()
    assert md[2].startswith("| haggler | CB-hard-v0 | 0.75 [") and "| 0.30 [" in md[2]
    assert md[3].startswith("| capitulator |")
    rows = list(csv.DictReader(io.StringIO(csv_table(run))))
    assert [r["agent"] for r in rows] == ["haggler", "capitulator"]
    html = html_report(load_run(run))
    assert html.index("haggler") < html.index("capitulator")


def test_worst_case_reports_sl_for_cb(tmp_path):
    result = evaluate(
        "scripted",
        ["CB-soft", "CB-hard"],
        episodes=2,
        env_kwargs={"encoder": "hashing"},
        progress=False,
    )
    worst = result.worst_case()["scripted"]["CB"]
    assert set(worst) == {"sr", "rcsr", "sl"}
    env_id, value = worst["sl"]
    by_env = {row["env_id"]: row["sl"] for row in result.summaries}
    assert value == pytest.approx(min(by_env.values())) and by_env[env_id] == value


# -- the seller: one argument per turn ----------------------------------------------------------


def _credited(events) -> list[str]:
    return [e for e in events if e.startswith("addressed:")]


def test_two_arguments_in_one_turn_credit_only_one(seller_factory):
    seller = seller_factory()
    seller.respond(GREETING)
    turn = seller.respond(f"{STUFFED} Would you take $350?")
    assert len(_credited(turn.events)) == 1 and "multi_topic" in turn.events
    assert sum(arg.progress for arg in seller.arguments.values()) == 1
    concerns = seller.privileged()["concerns"]
    assert sum(c["progress"] for c in concerns.values()) <= 1


ONE_REASON = {
    "condition": ARGUE_CONDITION,
    "market": "I've seen the same model listed for quite a bit less nearby.",
    "convenience": "I can pick it up today and pay in cash.",
    "budget": "My budget is really tight right now.",
}


def test_stuffing_splits_the_turns_credit_and_costs_mood(seller_factory):
    """A reason thrown in among k weighs its score's share (about 1/k) of the same reason
    made on its own."""
    stuffed, single = seller_factory(), seller_factory()
    for seller in (stuffed, single):
        seller.respond(GREETING)
    start = stuffed.ask
    text = f"{STUFFED} Would you take $350?"
    turn = stuffed.respond(text)
    credited = _credited(turn.events)[0].split(":", 1)[1]
    # What the seller perceives: the turn with its price masked.
    seen = stuffed.analyzer.perceive(mask_prices(text, 500.0))
    touched = stuffed.reader.touched(seen, stuffed.negotiation)
    # by prototypes or by meaning, whichever is higher
    scores = stuffed.reader.scores(seen, stuffed.negotiation)
    share = scores[credited] / sum(scores[cid] for cid in touched)
    assert len(touched) >= 2 and credited in touched
    single_turn = single.respond(f"{ONE_REASON[credited]} Would you take $350?")
    assert _credited(single_turn.events) == [f"addressed:{credited}"]
    assert "multi_topic" not in single_turn.events
    gained_stuffed, gained_single = start - stuffed.ask, start - single.ask
    assert gained_stuffed > 0
    assert gained_stuffed == pytest.approx(gained_single * share, rel=1e-6)
    assert share < 1.5 / len(touched)  # about 1/k: every reason in one breath dilutes each
    assert stuffed.mood == pytest.approx(single.mood - HARD.stuffing_mood)


def test_two_reasons_a_turn_in_rotation_earn_less_than_one_a_turn(seller_factory):
    """Rotating two fresh reasons per turn concedes less than one reason per turn."""
    rotating, focused = seller_factory(), seller_factory()
    for seller in (rotating, focused):
        seller.respond(GREETING)
    pairs = [("condition", "market"), ("convenience", "budget")]
    for a, b in pairs:
        turn = rotating.respond(f"{ONE_REASON[a]} {ONE_REASON[b]} Would you take $350?")
        # One argument taken: credited, or set aside when this seller gives it no weight.
        heard = _credited(turn.events) + [e for e in turn.events if e.startswith("dismissed:")]
        assert "multi_topic" in turn.events and len(heard) == 1
    for cid, _ in pairs:
        focused.respond(f"{ONE_REASON[cid]} Would you take $350?")
    assert focused.ask < rotating.ask < 500.0


def test_a_turn_making_one_reason_keeps_its_credit(card, encoder):
    """The closed-loop buyer makes one reason per turn: the split costs it (almost) nothing."""
    from dialogue_gym_agents.baselines.bargain import ScriptedBuyer

    seller = SellerUser(card, encoder, preset="hard")
    for cid, lines in ScriptedBuyer.ARGUMENTS.items():
        for line in lines:
            seen = seller.analyzer.perceive(f"{line} Would you take [PRICE]?")
            assert seller.reader.touched(seen, seller.negotiation) == [cid], line
            assert seller.reader.share(seen, cid, seller.negotiation) == 1.0
    side = seller.analyzer.perceive(ScriptedBuyer.ARGUMENTS["convenience"][2])
    if len(seller.reader.touched(side, seller.negotiation)) > 1:  # a faint side match costs little
        assert seller.reader.share(side, "convenience", seller.negotiation) > 0.6


def test_ties_go_to_the_personas_own_concern(seller_factory):
    seller = seller_factory()  # the persona's concern: condition (strength 0.9)
    scores = {"condition": 0.70, "market": 0.71, "convenience": 0.3, "budget": 0.3}
    anti = dict.fromkeys(scores, 0.0)
    state = seller.negotiation

    def turn(unlock: dict[str, float]) -> types.SimpleNamespace:
        # Scores by prototypes only: no meaning reading.
        return types.SimpleNamespace(
            unlock=unlock, anti=anti, meaning=None, addressing=lambda c: 0.0
        )

    # Two arguments touched: the decision costs the turn a little mood (multi_topic).
    assert seller.reader.argument(turn(scores), state) == ("condition", 2)
    clear = dict(scores, market=0.80)  # not a tie: the best argument wins
    assert seller.reader.argument(turn(clear), state)[0] == "market"
    side = dict(scores, condition=0.45)  # below threshold: touched once, no stuffing
    assert seller.reader.argument(turn(side), state) == ("market", 1)


def test_an_exhausted_best_argument_earns_nothing(seller_factory):
    seller = seller_factory()
    seller.respond(GREETING)
    seller.arguments["condition"].progress = seller.arguments["condition"].needed
    ask = seller.ask
    turn = seller.respond(ARGUE_CONDITION)
    assert "exhausted:condition" in turn.events and not _credited(turn.events)
    assert seller.ask == ask


def test_seller_reads_prices_on_the_normalized_view(seller_factory):
    seller = seller_factory()
    seller.respond(GREETING)
    seller.respond("Would you take $4\u200b50?")  # a zero-width space inside the number
    assert seller.last_offer == 450.0


def test_inclusive_judge_through_make():
    env = dialogue_gym.make(
        "CB-hard", encoder="hashing", success_judge=functools.partial(DealJudge, inclusive=True)
    )
    env.reset(seed=0)
    env.step({"system": GREETING})
    listing = asking_price_in(env.history[-1][1])
    _, _, term, _, infos = env.step({"system": f"Deal at {format_price(listing)}."})
    assert term["system"] and infos["system"]["success"]  # the paper's convention


def test_an_argument_answering_what_the_seller_voiced_earns_more_than_one_recited_blind(
    seller_factory,
):
    voiced, blind = seller_factory(), seller_factory()
    for seller in (voiced, blind):
        seller.respond(GREETING)
    voiced.arguments["condition"].voiced = True  # the seller raised the wear itself
    blind.arguments["condition"].voiced = False  # it has not (yet) said it cares
    start = voiced.ask
    assert blind.ask == pytest.approx(start)
    for seller in (voiced, blind):
        turn = seller.respond(f"{ARGUE_CONDITION} Would you take $350?")
        assert _credited(turn.events) == ["addressed:condition"]
    assert "proactive:condition" in turn.events  # the blind one
    gained_voiced, gained_blind = start - voiced.ask, start - blind.ask
    assert gained_blind > 0
    assert gained_blind == pytest.approx(gained_voiced * HARD.proactive_credit, rel=0.05)


def test_a_hard_seller_is_moved_only_by_reasons_it_cares_about(seller_factory):
    """The persona holds only 'condition': a market argument earns a hard seller's concession no
    more than a bare offer does (as a cognitive user credits nothing for a concern it does not
    hold), while a soft seller still gives way to it — its bias, which RCSR discounts."""
    market = "I've seen the same model listed for quite a bit less nearby. Would you take $350?"
    for preset in ("hard", "soft"):
        argued, bare = seller_factory(preset), seller_factory(preset)
        for seller in (argued, bare):
            seller.respond(GREETING)
        turn = argued.respond(market)
        bare.respond("Would you take $350?")
        assert f"{'dismissed' if preset == 'hard' else 'addressed'}:market" in turn.events
        if preset == "hard":
            assert argued.ask == pytest.approx(bare.ask)
        else:  # the soft seller's bias: it gives way, and that concession is not a reason
            assert argued.ask < bare.ask - 1e-6
            assert not turn.justified and "unreasoned_concession" in turn.events
    own = seller_factory("soft")
    own.respond(GREETING)
    turn = own.respond(f"{ARGUE_CONDITION} Would you take $350?")  # its own concern: a reason
    assert "addressed:condition" in turn.events and turn.justified
