"""Calibration on the train splits (issue 15 item 2): the fit registry, ``data fit`` and CB.

Checks that a table round-trips exactly (fit -> write -> reload), that the shipped CB table
is what a fresh fit on the project's corpus copies gives, and — by id — that held-out
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
    write_table,
)
from dialogue_gym.calibration.cb import HARD_LEVELS, LEVELS, MIN_DEALS, SOFT_LEVELS, deal_price
from dialogue_gym.cli import main
from dialogue_gym.data import Dialogue, Turn, load_corpus
from dialogue_gym.users.seller_presets import HARD, SOFT


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
