"""The P4G persona layer fitted on who donated (issue 15, item 2: persona layers).

A fixture fit with a known answer (donation driven by one survey field), fit -> write ->
reload identity, malformed tables refused, held-out dialogues refused by id, the shipped table
equal to a fresh fit on the corpus copies, and the pinned personas' starting willingness.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
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
from dialogue_gym.cards.card import load_card
from dialogue_gym.data import Dialogue, load_corpus, seeds_from
from dialogue_gym.plugins.p4g.persona import (
    SURVEY_FIELDS,
    TABLE,
    DonorPropensity,
    donated,
    shipped_propensity,
    survey_vector,
)
from dialogue_gym.users.corpus import personas_from_seeds


def persuadee(index: int, split: str = "train", **fields: float) -> Dialogue:
    """A P4G dialogue (no turns needed) whose survey is 3 everywhere except ``fields``."""
    profile: dict[str, object] = {f"{name}.x": 3.0 for name in SURVEY_FIELDS}
    profile.update({f"{name}.x": value for name, value in fields.items() if name != "donation"})
    profile["donation"] = fields.get("donation", 0.0)
    return Dialogue("p4g", f"p{index:03d}", split, (), profile, {})


def care_decides(n: int = 200) -> list[Dialogue]:
    """Persuadees who give exactly when their care score is above 3 (plus a little noise)."""
    rng = np.random.default_rng(7)
    out = []
    for i in range(n):
        care = float(rng.uniform(1, 6))
        gave = care > 3.0 if i % 10 else care <= 3.0  # every tenth flips: no perfect separation
        out.append(persuadee(i, care=care, age=20 + i % 40, donation=1.0 if gave else 0.0))
    return out


def test_the_fitter_reads_the_fulldata_train_split():
    fitter = FITTERS[TABLE]
    assert fitter.corpus == "p4g" and fitter.format is None  # FullData: surveys + donations


def test_a_fixture_fit_finds_the_field_that_decides():
    train = care_decides()
    table = fit(TABLE, train)
    weights = dict(zip(SURVEY_FIELDS, table["parameters"]["weights"], strict=True))
    assert max(weights, key=lambda f: abs(weights[f])) == "care" and weights["care"] > 0
    gave = sum(d.profile["donation"] > 0 for d in train)
    assert table["parameters"]["persuadees"] == {"n": 200, "donated": gave}
    assert table["parameters"]["mean"][SURVEY_FIELDS.index("agreeable")] == 3.0
    model = DonorPropensity(table)
    low, high = persuadee(900, care=1.5).profile, persuadee(901, care=5.5).profile
    assert model.probability(high) > 0.6 and model.probability(low) < 0.4
    assert 0.0 <= model.quantile(low) < model.quantile(high) <= 1.0


def test_fit_write_reload_is_identical(tmp_path: Path):
    table = fit(TABLE, care_decides())
    path = write_table(table, tmp_path)
    assert path.name == "p4g-persona.json" and load_table(path) == table
    again = write_table(fit(TABLE, care_decides()[::-1]), tmp_path / "again")
    assert again.read_bytes() == path.read_bytes()  # order-free, deterministic to the byte
    profile = persuadee(5, care=4.2).profile
    assert DonorPropensity(load_table(path)).probability(profile) == DonorPropensity(
        table
    ).probability(profile)


def test_held_out_persuadees_are_refused_by_id():
    with pytest.raises(CalibrationError, match=r"train split only.*'p999'"):
        fit(TABLE, [*care_decides(), persuadee(999, split="valid", donation=1.0)])


def test_a_fit_without_both_outcomes_or_surveys_is_refused():
    nobody_gave = [persuadee(i) for i in range(30)]
    with pytest.raises(CalibrationError, match="both outcomes"):
        fit(TABLE, nobody_gave)
    no_survey = [Dialogue("p4g", f"n{i}", "train", (), {"donation": i % 2}, {}) for i in range(30)]
    with pytest.raises(CalibrationError, match="FullData"):
        fit(TABLE, no_survey)


def test_survey_vector_and_outcome_read_only_what_they_name():
    profile = {"care.x": 5.0, "age.x": 40.0, "donation": 0.5, "sex.x": "Female"}
    vector = survey_vector(profile)
    assert vector[SURVEY_FIELDS.index("care")] == 5.0
    assert sum(v == v for v in vector) == 2  # the others are missing (NaN), donation unread
    assert donated(profile) is True and donated({"donation": 0.0}) is False
    assert donated({}) is None and donated({"donation": float("nan")}) is None


def test_malformed_tables_are_refused():
    good = fit(TABLE, care_decides())

    def broken(**changes: object) -> dict:
        table = json.loads(json.dumps(good))
        table["parameters"].update(changes)
        return table

    for table, message in (
        ({"parameters": {}}, "malformed"),
        (broken(fields=["care"]), "fields"),
        (broken(weights=[0.0]), "one mean"),
        (broken(quantiles={"levels": [0.0, 1.0], "propensity": [0.6, 0.4]}), "increasing"),
    ):
        with pytest.raises(CalibrationError, match=message):
            DonorPropensity(table)
    assert DonorPropensity(good).probability({"sex.x": "Male"}) is None  # no field answered


def test_pinned_personas_start_at_their_fitted_propensity():
    card = load_card("p4g")
    model = shipped_propensity()
    keen = persuadee(1, agreeable=5.0, care=6.0, stimulation=1.0, rational=5.0)
    cool = persuadee(2, agreeable=1.5, care=1.5, stimulation=6.0, rational=1.5)
    empty = Dialogue("p4g", "p003", "valid", (), {"sex.x": "Male", "donation": 1.0}, {})
    personas = personas_from_seeds(card, seeds_from([keen, cool, empty], card.goal))
    for persona, dialogue in zip(personas[:2], (keen, cool), strict=True):
        q = model.quantile(dialogue.profile)
        assert persona.initial_willingness == round(0.1 + 0.35 * q, 3)
    assert personas[0].initial_willingness > personas[1].initial_willingness
    # Nothing the fit reads: the hand-written warmth mix (every trait at its default 0.5).
    assert personas[2].initial_willingness == round(0.1 + 0.35 * 0.5, 3)
    # The donation itself never moves the start.
    gave = dataclasses.replace(cool, profile={**cool.profile, "donation": 5.0})
    again = personas_from_seeds(card, seeds_from([gave], card.goal))[0]
    assert again.initial_willingness == personas[1].initial_willingness


@needs_data
def test_the_shipped_table_is_a_fresh_fit_of_the_train_split_only():
    train = load_corpus("p4g", DATA, split="train")
    held_out = load_corpus("p4g", DATA, split="valid") + load_corpus("p4g", DATA, split="test")
    assert held_out and not {d.id for d in train} & {d.id for d in held_out}
    fresh = fit(TABLE, train)
    shipped = shipped_table(TABLE)
    del fresh["provenance"]["code_version"]["dialogue_gym"]
    del shipped["provenance"]["code_version"]["dialogue_gym"]
    assert fresh == shipped
    assert shipped["provenance"]["ids_sha256"] == ids_sha256(train)
    with pytest.raises(CalibrationError, match="train split only"):
        fit(TABLE, held_out)


@needs_data
def test_the_propensity_separates_train_donors():
    """In-sample on train (held-out figures live in benchmarks/human_validity.py)."""
    from dialogue_gym.validity.stats import auc

    model = shipped_propensity()
    train = [
        d
        for d in load_corpus("p4g", DATA, split="train")
        if donated(d.profile) is not None and model.probability(d.profile) is not None
    ]
    assert len(train) == shipped_table(TABLE)["parameters"]["persuadees"]["n"]
    scores = np.array([model.probability(d.profile) for d in train])
    labels = np.array([bool(donated(d.profile)) for d in train])
    assert auc(scores, labels) > 0.65
    # The quantiles place the train persuadees evenly (the probability integral transform).
    q = np.array([model.quantile(d.profile) for d in train])
    assert abs(float(np.median(q)) - 0.5) < 0.05


@needs_data
def test_the_decision_signal_benchmark_reads_train_only(capsys: pytest.CaptureFixture[str]):
    """benchmarks/p4g_decision_signal.py: three out-of-fold AUCs and the features by outcome."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "p4g_decision_signal.py"
    spec = importlib.util.spec_from_file_location("p4g_decision_signal", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--data", str(DATA), "--encoder", "hashing"]) == 0
    out = capsys.readouterr().out
    train = load_corpus("p4g", DATA, split="train")
    assert f"P4G FullData train: {len(train)} persuadees" in out
    aucs = dict(re.findall(r"^  (survey|persuader turns|both) +([01]\.\d{3})$", out, re.M))
    assert set(aucs) == {"survey", "persuader turns", "both"}
    assert all(0.0 <= float(v) <= 1.0 for v in aucs.values())
    assert "donation-information" in out and "asks read" in out
    words = dict(re.findall(r"^  first (\d) turns +([01]\.\d{3})$", out, re.M))
    assert set(words) == {"1", "2", "4", "8"}
    assert "heaviest words for donated:" in out
    # The ceiling of a judge of stated intention: annotated train dialogues only.
    annotated = load_corpus("p4g", DATA, split="train", format="annotated")
    pattern = r"^stated intention .*, (\d+) annotated train dialogues: AUC (0\.\d\d)"
    stated = re.search(pattern, out, re.M)
    assert stated is not None
    assert 0 < int(stated.group(1)) <= len(annotated)
    assert 0.0 <= float(stated.group(2)) <= 1.0
