"""Calibration on the train splits (issue 15 item 2): the fit registry, ``data fit``, CB,
and the P4G / ESConv readers of real users' text.

Checks that a table round-trips exactly (fit -> write -> reload), that the shipped CB and P4G
tables are what a fresh fit on the project's corpus copies gives, and — by id — that held-out
dialogues never enter a fit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_data import DATA, needs_data

from dialogue_gym.calibration import (
    FITTERS,
    CalibrationError,
    fit,
    ids_sha256,
    load_table,
    shipped_table,
    table_path,
    write_table,
)
from dialogue_gym.cli.commands import main
from dialogue_gym.data import Dialogue, Turn, load_corpus
from dialogue_gym.plugins.cb.calibration import (
    HARD_LEVELS,
    LEVELS,
    MIN_DEALS,
    SOFT_LEVELS,
    deal_price,
)
from dialogue_gym.plugins.cb.seller_presets import HARD, SOFT
from dialogue_gym.plugins.esconv.calibration import SeekerReader, intensity_fall, seeker_replies
from dialogue_gym.plugins.p4g.calibration import turn_stance


def scenario(index: int, listing: float, target: float, split: str = "train") -> Dialogue:
    situation = {"listing_price": listing, "buyer_target": target, "seller_target": listing}
    return Dialogue("cb", f"s{index:03d}", split, (), {"role": "seller"}, situation)


def deal(index: int, listing: float, price: float, verdict: str = "accept") -> Dialogue:
    turns = (
        Turn("system", "Would you take less?"),
        Turn("user", "Maybe."),
        Turn("system", "", "offer"),
        Turn("user", "", verdict),
    )
    situation = {
        "listing_price": listing,
        "buyer_target": 0.5 * listing,
        "seller_target": listing,
        "turn_prices": (None, None, price, None),
    }
    return Dialogue("cb", f"d{index:03d}", "train", turns, {"role": "seller"}, situation)


TARGET_SCENARIOS = [scenario(i, 100.0, 40.0 + i) for i in range(51)]  # ratios 0.40 .. 0.90


def parameters_without_package_version(table: dict) -> dict:
    kept = json.loads(json.dumps(table))
    del kept["provenance"]["code_version"]["dialogue_gym"]
    return kept


# -- the registry and the round trip ---------------------------------------------------------------


def test_cb_is_registered_on_its_corpus():
    assert FITTERS["cb"].corpus == "cb" and FITTERS["cb"].version >= 1


def test_fit_write_reload_gives_identical_parameters(tmp_path: Path):
    table = fit("cb", TARGET_SCENARIOS)
    path = write_table(table, tmp_path)
    assert path == tmp_path / "cb.json"
    assert load_table(path) == table
    again = write_table(fit("cb", TARGET_SCENARIOS), tmp_path / "again")
    assert again.read_bytes() == path.read_bytes()  # deterministic to the byte


def test_provenance_names_the_split_count_and_ids():
    table = fit("cb", TARGET_SCENARIOS)
    provenance = table["provenance"]
    assert provenance["corpus"] == "cb" and provenance["split"] == "train"
    assert provenance["n_dialogues"] == 51
    assert provenance["ids_sha256"] == ids_sha256(TARGET_SCENARIOS)
    assert provenance["ids_sha256"] == ids_sha256(TARGET_SCENARIOS[::-1])  # order-free
    assert set(provenance["code_version"]) == {"dialogue_gym", "fitter"}


def test_fit_refuses_any_held_out_dialogue_by_id():
    held_out = scenario(99, 100.0, 70.0, split="valid")
    with pytest.raises(CalibrationError, match=r"train split only.*'s099'"):
        fit("cb", [*TARGET_SCENARIOS, held_out])
    with pytest.raises(CalibrationError, match="no train dialogues"):
        fit("cb", [])
    with pytest.raises(CalibrationError, match="no fitter"):
        fit("nope", TARGET_SCENARIOS)
    other = Dialogue("p4g", "p1", "train", (), {}, {})
    with pytest.raises(CalibrationError, match="fits cb dialogues"):
        fit("cb", [other])


def test_load_table_rejects_what_is_not_a_table(tmp_path: Path):
    (tmp_path / "x.json").write_text('{"task": "cb"}')
    with pytest.raises(CalibrationError, match="not a calibration table"):
        load_table(tmp_path / "x.json")


# -- the CB fitter ---------------------------------------------------------------------------------


def test_cb_floors_come_from_the_buyer_target_quantiles_without_deals():
    parameters = fit("cb", TARGET_SCENARIOS)["parameters"]
    assert parameters["basis"] == "buyer_target"
    assert parameters["levels"] == list(LEVELS)
    assert parameters["buyer_target_ratio"]["n"] == 51
    assert parameters["deal_ratio"] == {"n": 0, "n_above_listing": 0, "quantiles": None}
    # Ratios 0.40 .. 0.90 evenly: the q-quantile is 0.40 + 0.5 q.
    soft, hard = parameters["floor_range"]["soft"], parameters["floor_range"]["hard"]
    assert soft == pytest.approx([0.40 + 0.5 * q for q in SOFT_LEVELS])
    assert hard == pytest.approx([0.40 + 0.5 * q for q in HARD_LEVELS])
    assert soft[1] <= hard[0]  # soft and hard stay distinct


def test_cb_floors_come_from_real_deal_prices_when_the_train_split_has_them():
    deals = [deal(i, 200.0, 120.0 + i) for i in range(MIN_DEALS + 1)]  # ratios 0.60 .. 0.85
    no_deal = deal(900, 200.0, 150.0, verdict="reject")
    above = deal(901, 200.0, 210.0)
    parameters = fit("cb", [*deals, no_deal, above, *TARGET_SCENARIOS])["parameters"]
    assert parameters["basis"] == "deal_price"
    assert parameters["deal_ratio"]["n"] == MIN_DEALS + 1
    assert parameters["deal_ratio"]["n_above_listing"] == 1
    assert parameters["floor_range"]["hard"] == pytest.approx([0.725, 0.825])
    # Too few deals: the buyer targets again.
    few = fit("cb", [*deals[:5], *TARGET_SCENARIOS])["parameters"]
    assert few["basis"] == "buyer_target" and few["deal_ratio"]["n"] == 5


def test_deal_price_is_the_accepted_last_offer():
    assert deal_price(deal(1, 100.0, 80.0)) == 80.0
    assert deal_price(deal(2, 100.0, 80.0, verdict="reject")) is None
    assert deal_price(scenario(3, 100.0, 70.0)) is None


def test_cocoa_loader_keeps_offer_prices(tmp_path: Path):
    record = {
        "uuid": "C1",
        "scenario": {
            "kbs": [
                {"personal": {"Role": "buyer", "Target": 80}, "item": {"Price": 100}},
                {"personal": {"Role": "seller", "Target": 100}, "item": {"Price": 100}},
            ]
        },
        "events": [
            {"agent": 0, "action": "message", "data": "$85?", "metadata": {"price": 85}},
            {"agent": 0, "action": "offer", "data": {"price": 90, "sides": None}},
            {"agent": 1, "action": "accept", "data": None},
        ],
    }
    folder = tmp_path / "craigslist_bargain" / "cocoa"
    folder.mkdir(parents=True)
    (folder / "train.json").write_text(json.dumps([record]))
    (dialogue,) = load_corpus("cb", tmp_path, split="train")
    assert dialogue.situation["turn_prices"] == (85.0, 90.0, None)
    assert deal_price(dialogue) == 90.0


# -- the shipped table and the world ---------------------------------------------------------------


def test_the_seller_presets_read_the_shipped_table():
    table = shipped_table("cb")
    assert HARD.floor_range == tuple(table["parameters"]["floor_range"]["hard"])
    assert SOFT.floor_range == tuple(table["parameters"]["floor_range"]["soft"])
    assert SOFT.floor_range[1] <= HARD.floor_range[0]
    assert table["provenance"]["split"] == "train"


@needs_data
def test_the_shipped_table_equals_a_fresh_fit_on_the_corpus_copies():
    train = load_corpus("cb", DATA, split="train")
    fresh = fit("cb", train)
    assert parameters_without_package_version(fresh) == parameters_without_package_version(
        shipped_table("cb")
    )


@needs_data
def test_held_out_dialogues_never_enter_the_cb_fit():
    train = load_corpus("cb", DATA, split="train")
    held_out = load_corpus("cb", DATA, split="valid") + load_corpus("cb", DATA, split="test")
    train_ids = {d.id for d in train}
    assert held_out and not train_ids & {d.id for d in held_out}
    assert {d.split for d in train} == {"train"}
    # The shipped table's ids are exactly the train split's.
    assert shipped_table("cb")["provenance"]["ids_sha256"] == ids_sha256(train)
    assert shipped_table("cb")["provenance"]["ids_sha256"] != ids_sha256([*train, *held_out])
    with pytest.raises(CalibrationError, match="train split only"):
        fit("cb", held_out)


# -- dialogue-gym data fit -------------------------------------------------------------------------


@needs_data
def test_data_fit_writes_the_shipped_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["data", "fit", "cb", "--data", str(DATA), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "5,202 cb train records" in out and "floor_range" in out
    written = load_table(tmp_path / "cb.json")
    assert parameters_without_package_version(written) == parameters_without_package_version(
        shipped_table("cb")
    )


def test_data_fit_fails_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["data", "fit", "nope", "--data", str(tmp_path)]) == 1
    assert "no fitter for ['nope']" in capsys.readouterr().err
    assert main(["data", "fit", "cb", "--data", str(tmp_path), "--out", str(tmp_path)]) == 1
    assert "dialogue-gym data fit: error: cb:" in capsys.readouterr().err


# -- P4G and ESConv: the readers of real users' text -----------------------------------------------


def p4g_dialogue(index: int, split: str = "train") -> Dialogue:
    """A tiny annotated P4G dialogue whose persuadee states each stance once."""
    turns = (
        Turn("system", "Hello! Have you heard of Save the Children?", "greeting"),
        Turn("user", "Hi there, no I have not.", "greeting+neutral-to-inquiry"),
        Turn("system", "Would you like to donate to them?", "proposition-of-donation"),
        Turn("user", "That sounds wonderful, what a great cause.", "positive-reaction-to-donation"),
        Turn("system", "How much would you give?", "proposition-of-donation"),
        Turn("user", "I will donate $1 of my payment.", "agree-donation+provide-donation-amount"),
        Turn("system", "Could you give a bit more?", "proposition-of-donation"),
        Turn("user", "No, I will not give more than that.", "disagree-donation-more"),
    )
    return Dialogue("p4g", f"p{index:03d}", split, turns, {"donation": 1.0}, {})


def esconv_dialogue(index: int, fall: int | None, split: str = "train") -> Dialogue:
    """A tiny ESConv dialogue: a distressed opening, a thankful closing, a survey fall."""
    turns = (
        Turn("user", "hi"),  # before the supporter's first turn: not a reply
        Turn("system", "Hello, how are you feeling today?"),
        Turn("user", "I am so stressed about losing my job."),
        Turn("user", "I cannot sleep at all."),
        Turn("system", "That sounds really hard. What happened?"),
        Turn("user", "My boss fired me and I feel anxious and sad."),
        Turn("system", "Maybe you could update your resume and talk to a friend."),
        Turn("user", "That is a good idea, I will try that."),
        Turn("system", "I am glad, take care of yourself."),
        Turn("user", "Thank you so much, I feel better now. Bye!"),
    )
    seeker = {"initial_emotion_intensity": "5"}
    if fall is not None:
        seeker["final_emotion_intensity"] = str(5 - fall)
    return Dialogue(
        "esconv", f"e{index:03d}", split, turns, {}, {"survey_score": {"seeker": seeker}}
    )


P4G_TRAIN = [p4g_dialogue(i) for i in range(6)]
ESCONV_TRAIN = [esconv_dialogue(i, 1 + i % 4) for i in range(12)]


def test_p4g_and_esconv_are_registered_with_their_formats():
    assert FITTERS["p4g"].corpus == "p4g" and FITTERS["p4g"].format == "annotated"
    assert FITTERS["esconv"].corpus == "esconv" and FITTERS["esconv"].format is None


def test_p4g_turn_stances_follow_the_act_rule():
    stances = [turn_stance(t) for t in P4G_TRAIN[0].turns if t.role == "user"]
    assert stances == ["neutral", "positive", "agree", "refused"]
    # A stated amount wins over a partial refusal in the same turn.
    assert turn_stance(Turn("user", "x", "disagree-donation-more+provide-donation-amount")) == (
        "agree"
    )


@pytest.mark.parametrize(("task", "train"), [("p4g", P4G_TRAIN), ("esconv", ESCONV_TRAIN)])
def test_reader_tables_fit_write_reload_identically(task: str, train: list, tmp_path: Path):
    table = fit(task, train)
    path = write_table(table, tmp_path)
    assert load_table(path) == table
    again = write_table(fit(task, train[::-1]), tmp_path / "again")
    assert again.read_bytes() == path.read_bytes()  # deterministic, independent of order


@pytest.mark.parametrize(
    ("task", "train", "held_out"),
    [
        ("p4g", P4G_TRAIN, p4g_dialogue(99, split="test")),
        ("esconv", ESCONV_TRAIN, esconv_dialogue(99, 2, split="valid")),
    ],
)
def test_reader_fits_refuse_held_out_dialogues_by_id(task: str, train: list, held_out: Dialogue):
    with pytest.raises(CalibrationError, match=f"train split only.*'{held_out.id}'"):
        fit(task, [*train, held_out])


def test_p4g_fit_needs_the_annotated_acts():
    unlabelled = [
        Dialogue("p4g", d.id, "train", tuple(Turn(t.role, t.text) for t in d.turns), {}, {})
        for d in P4G_TRAIN
    ]
    with pytest.raises(CalibrationError, match="annotated"):
        fit("p4g", unlabelled)


def test_esconv_fit_reads_replies_and_survey_falls():
    assert seeker_replies(ESCONV_TRAIN[0])[0] == (
        "I am so stressed about losing my job. I cannot sleep at all."
    )
    assert intensity_fall(ESCONV_TRAIN[0]) == 1
    assert intensity_fall(esconv_dialogue(1, None)) is None
    parameters = fit("esconv", [*ESCONV_TRAIN, esconv_dialogue(50, None)])["parameters"]
    assert parameters["fall"]["n_dialogues"] == 12  # the one without a final score is left out
    assert parameters["closing"]["n_replies"] == 13 * 2 * parameters["closing"]["edge_replies"]
    reader = SeekerReader(fit("esconv", ESCONV_TRAIN))
    closing = reader.distribution([("system", "Take care."), ("user", "Thank you, bye!")])
    opening = reader.distribution([("system", "Hi."), ("user", "I am so stressed and sad.")])
    assert set(closing) == {"neutral", "positive", "agree"}
    assert sum(closing.values()) == pytest.approx(1.0)
    assert closing["neutral"] < opening["neutral"]


@needs_data
def test_the_shipped_p4g_table_equals_a_fresh_fit_on_the_corpus_copies():
    train = load_corpus("p4g", DATA, split="train", format="annotated")
    fresh = fit("p4g", train)
    assert parameters_without_package_version(fresh) == parameters_without_package_version(
        shipped_table("p4g")
    )


@needs_data
def test_held_out_dialogues_never_enter_the_p4g_fit():
    annotated = load_corpus("p4g", DATA, format="annotated")
    train = [d for d in annotated if d.split == "train"]
    held_out = [d for d in annotated if d.split != "train"]
    assert held_out and not {d.id for d in train} & {d.id for d in held_out}
    # The validity benchmark's held-out P4G dialogues (every format) are not in the table.
    full_held_out = load_corpus("p4g", DATA, split="valid") + load_corpus("p4g", DATA, split="test")
    assert not {d.id for d in train} & {d.id for d in full_held_out}
    provenance = shipped_table("p4g")["provenance"]
    assert provenance["ids_sha256"] == ids_sha256(train)
    assert provenance["ids_sha256"] != ids_sha256(annotated)
    with pytest.raises(CalibrationError, match="train split only"):
        fit("p4g", held_out)


@needs_data
def test_held_out_dialogues_never_enter_the_esconv_fit(tmp_path: Path):
    assert not table_path("esconv").exists()  # CC BY-NC 4.0: fitted at first use, not shipped
    train = [d for d in load_corpus("esconv", DATA, split="train") if d.turns]
    held_out = load_corpus("esconv", DATA, split="valid") + load_corpus(
        "esconv", DATA, split="test"
    )
    failed = [d for d in load_corpus("esconv", DATA, split="unsplit", format="original")]
    held_ids = {d.id for d in held_out} | {d.id for d in failed}
    assert not {d.id for d in train} & held_ids
    assert main(["data", "fit", "esconv", "--data", str(DATA), "--out", str(tmp_path)]) == 0
    table = load_table(tmp_path / "esconv.json")
    assert table["provenance"]["ids_sha256"] == ids_sha256(train)
    assert table["provenance"]["n_dialogues"] == len(train) == 910
    with pytest.raises(CalibrationError, match="train split only"):
        fit("esconv", held_out)
