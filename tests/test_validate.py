"""The human-replay validity benchmark (issue 15, item 1) on a tiny fixture corpus.

The fixture: P4G-format dialogues whose ids fall in the train or test split by P4G's id hash.
Donors' persuaders say the keyword MAGIC and donors answer "yes I will donate"; with a keyword
success judge the answer is known exactly (replay AUC 1, SR 0.5, judge agreement 1).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

import dialogue_gym
from dialogue_gym.cli.commands import main
from dialogue_gym.data import Dialogue, Turn, load_corpus, seeds_from
from dialogue_gym.judges.base import Exchange, Judgment
from dialogue_gym.plugins.cb.seller_listings import listings_from_seeds
from dialogue_gym.plugins.p4g.loader import split_of as p4g_split_of
from dialogue_gym.users.corpus import personas_from_seeds
from dialogue_gym.validity import auc, exchanges_of, outcome_of, spearman, validate_dialogues
from dialogue_gym.validity import reference as ref
from dialogue_gym.validity.corpus import parse_splits
from dialogue_gym.validity.stats import bootstrap_cell

DATASETS = Path("/work/shared/datasets")
KEY_ENV = "DG_VALIDATE_TEST_KEY"
YES = "yes I will donate"


def _ids(split: str, count: int) -> list[str]:
    found, i = [], 0
    while len(found) < count:
        candidate = f"fixture-{i:04d}"
        if p4g_split_of(candidate) == split:
            found.append(candidate)
        i += 1
    return found


def _dialogue(dialogue_id: str, donor: bool, amount: float, index: int) -> Dialogue:
    if donor:
        texts = [
            ("system", f"Hello there, friend number {index}. Have you heard of Save the Children?"),
            ("user", "I have, they help kids in need around the world."),
            ("system", "MAGIC: the children really need support, every dollar counts today."),
            ("user", f"Sure, {YES} to the children."),
        ]
    else:
        texts = [
            ("system", f"Hi, friend number {index}, how is your evening going?"),
            ("user", "I am busy and not interested in charity right now."),
            ("system", "Okay, no problem, thanks for chatting with me anyway."),
            ("user", "No thanks, I will keep my money, bye."),
        ]
    # Every turn is unique to its dialogue (the no-leak test compares texts).
    turns = tuple(Turn(role, f"{text} [{index}]") for role, text in texts)
    profile = {"user_id": f"u{index}", "donation": amount, "income.x": 5.0, "care.x": 4.0}
    return Dialogue("p4g", dialogue_id, p4g_split_of(dialogue_id), turns, profile, {})


def fixture_corpus() -> tuple[list[Dialogue], list[Dialogue]]:
    """(held-out test dialogues, train dialogues): 3+3 held out, 6+6 train."""
    test_ids, train_ids = _ids("test", 6), _ids("train", 12)
    amounts = [0.5, 1.0, 2.0, 0.0, 0.0, 0.0]
    held_out = [
        _dialogue(i, a > 0, a, k) for k, (i, a) in enumerate(zip(test_ids, amounts, strict=True))
    ]
    train = [
        _dialogue(i, k % 2 == 0, 1.0 if k % 2 == 0 else 0.0, 100 + k)
        for k, i in enumerate(train_ids)
    ]
    return held_out, train


def write_p4g_full(folder: Path, dialogues: list[Dialogue]) -> Path:
    """Writes dialogues in P4G's FullData format (full_dialog.csv + full_info.csv)."""
    root = folder / "p4g" / "FullData"
    root.mkdir(parents=True)
    with (root / "full_dialog.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["", "Unit", "Turn", "B4", "B2"])
        row = 0
        for d in dialogues:
            for t, turn in enumerate(d.turns):
                writer.writerow([row, turn.text, t // 2, 0 if turn.role == "system" else 1, d.id])
                row += 1
    with (root / "full_info.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["B2", "B3", "B4", "B6", "B7", "income.x", "care.x"])
        for d in dialogues:
            writer.writerow([d.id, "p" + d.id, 0, 0, 2, "", ""])
            writer.writerow([d.id, d.profile["user_id"], 1, d.profile["donation"], 2, 5, 4])
    return folder


class KeywordJudge:
    """Success when the system says MAGIC (replay) or the user says YES (real transcripts)."""

    def __init__(self, card) -> None:
        self.card = card

    def judge(self, exchange: Exchange) -> Judgment:
        hit = "MAGIC" in exchange.system or YES in exchange.user
        label = "agree" if hit else "refused"
        reward = 1.0 if hit else -1.0
        return Judgment(votes=(label,), rewards=(reward,), score=reward, success=hit, label=label)


# -- statistics ------------------------------------------------------------------------------


def test_auc_and_spearman_known_values() -> None:
    assert auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == 0.75
    assert auc([1, 1, 0, 0], [True, False, True, False]) == 0.5  # ties count one half
    assert math.isnan(auc([1, 2], [True, True]))
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    cell = bootstrap_cell(lambda s, y: auc(s, y.astype(bool)), [0, 1, 0, 1], [0, 1, 0, 1])
    assert (cell.value, cell.low, cell.high, cell.n) == (1.0, 1.0, 1.0, 4)


# -- outcomes and exchanges ------------------------------------------------------------------


def test_outcomes_of_each_corpus() -> None:
    def esconv(start, end, failed=False):
        seeker = {"initial_emotion_intensity": start}
        if end is not None:
            seeker["final_emotion_intensity"] = end
        situation = {"survey_score": {"seeker": seeker}, **({"failed": True} if failed else {})}
        return Dialogue("esconv", "e", "test", (), {}, situation)

    assert outcome_of(esconv("5", "2")).success and outcome_of(esconv("5", "2")).amount == 3.0
    assert not outcome_of(esconv("3", "3")).success
    assert outcome_of(esconv("4", None, failed=True)) == outcome_of(esconv("1", None, True))
    assert not outcome_of(esconv("4", None, failed=True)).success
    assert outcome_of(esconv("4", None)) is None

    turns = (
        Turn("system", "hi, would you take 80?"),
        Turn("user", "how about 90"),
        Turn("system", "", "offer"),
        Turn("user", "", "accept"),
    )
    situation = {
        "listing_price": 100.0,
        "buyer_target": 70.0,
        "turn_prices": (None, None, 85.0, None),
    }
    deal = Dialogue("cb", "c", "valid", turns, {}, situation)
    assert outcome_of(deal).success and outcome_of(deal).amount == pytest.approx(0.5)
    assert exchanges_of(deal) == [
        ("hi, would you take 80?", "how about 90"),
        ("I offer $85.", "Deal: I accept $85."),
    ]
    rejected = Dialogue("cb", "c", "valid", (*turns[:3], Turn("user", "", "reject")), {}, situation)
    assert outcome_of(rejected).success is False
    unlabeled = Dialogue("cb", "c", "test", (*turns[:2], Turn("user", "")), {}, {})
    assert outcome_of(unlabeled) is None


def test_exchanges_join_sides_drop_a_user_opening_and_end_with_a_reply() -> None:
    turns = (
        Turn("user", "hello?"),
        Turn("system", "Hi."),
        Turn("system", "How are you?"),
        Turn("user", "Sad."),
        Turn("system", "I am sorry."),
    )
    d = Dialogue("esconv", "x", "test", turns, {}, {})
    assert exchanges_of(d) == [("Hi. How are you?", "Sad."), ("I am sorry.", "")]


def test_parse_splits_refuses_train() -> None:
    assert parse_splits("valid, test,failed") == ("valid", "test", "failed")
    with pytest.raises(ValueError, match="train"):
        parse_splits("test,train")


# -- pinning ---------------------------------------------------------------------------------


def test_reset_pins_the_user_to_a_persona_or_listing() -> None:
    held_out, _ = fixture_corpus()
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    personas = personas_from_seeds(env.card, seeds_from(held_out, env.card.goal))
    for seed in range(3):
        for persona in personas:
            env.reset(seed=seed, options={"persona": persona})
            assert env.user.persona.id == persona.id
    assert len(env.user.personas) > 1  # the pool is restored after the reset
    llm = dialogue_gym.make("P4G-hard", encoder="hashing", user="llm-hard", backend="fake")
    llm.reset(seed=0, options={"persona": personas[2]})
    assert llm.user.persona.id == personas[2].id

    cb = dialogue_gym.make("CB-hard", encoder="hashing")
    situation = {
        "title": "Blue bike",
        "category": "bike",
        "listing_price": 200.0,
        "seller_target": 200.0,
        "buyer_target": 140.0,
    }
    seed = seeds_from([Dialogue("cb", "cb-x", "valid", (), {}, situation)], cb.card.goal)
    listing = listings_from_seeds(cb.card, seed)[0]
    cb.reset(seed=4, options={"listing": listing})
    assert cb.user.listing.id == "cb:cb-x" and cb.user.listing_price == 200.0
    with pytest.raises(ValueError, match="listings pool"):
        env.reset(seed=0, options={"listing": listing})


# -- the text reference never sees a held-out dialogue ----------------------------------------


def test_reference_predictions_never_fit_on_their_own_dialogue() -> None:
    held_out, train = fixture_corpus()
    rows = lambda ds: [(d.id, " ".join(t.text for t in d.turns), outcome_of(d).success) for d in ds]  # noqa: E731
    held_ids = {d.id for d in held_out}
    fitted = ref.predict_held_out(rows(train), rows(held_out))
    assert set(fitted) == held_ids
    for prediction in fitted.values():
        assert prediction.mode == "train" and not (prediction.fitted_on & held_ids)
    # Too few of a class in train: cross-fitting, never on the predicted dialogue itself.
    crossed = ref.predict_held_out(rows(train[:2]), rows(held_out))
    assert crossed
    for dialogue_id, prediction in crossed.items():
        assert prediction.mode == "cross-fit" and dialogue_id not in prediction.fitted_on
    with pytest.raises(ValueError, match="train split"):
        ref.predict_held_out(rows(train), rows([*held_out, train[0]]))


def test_bag_of_words_separates_an_easy_split() -> None:
    texts = ["great yes donate"] * 5 + ["no busy bye"] * 5
    model = ref.BagOfWords().fit(texts, [True] * 5 + [False] * 5)
    p = model.predict(["yes donate please", "busy now bye"])
    assert p[0] > 0.6 > 0.4 > p[1]


# -- the validator on the fixture: a known answer --------------------------------------------


def test_validator_on_the_fixture_has_the_known_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    held_out, train = fixture_corpus()
    fitted_texts: list[str] = []
    original_fit = ref.BagOfWords.fit

    def recording_fit(self, texts, labels):
        fitted_texts.extend(texts)
        return original_fit(self, texts, labels)

    monkeypatch.setattr(ref.BagOfWords, "fit", recording_fit)
    result = validate_dialogues(
        "P4G-soft",
        held_out,
        train,
        env_options={"encoder": "hashing", "success_judge": KeywordJudge},
        baselines=("random",),
        n_resamples=200,
        progress=None,
    )
    cells = result["cells"]
    assert result["counts"]["validated"] == 6
    assert cells["replay AUC: sim success -> real success"]["sim"]["value"] == 1.0
    assert cells["SR@T real people (the data)"]["sim"]["value"] == 0.5
    assert cells["SR@T human replay"]["sim"]["value"] == 0.5
    assert cells["SR@T human replay"]["met"] is True  # soft: within 0.15 of the real rate
    assert cells["SR@T random"]["sim"]["value"] == 0.0
    above_random = cells["SR@T human replay - random"]
    assert above_random["sim"]["value"] == 0.5
    # Six dialogues: the paired CI still reaches 0, so "above random" is not yet shown.
    assert above_random["sim"]["low"] <= 0 and above_random["met"] is False
    assert cells["judge on real transcripts: agreement (accuracy)"]["sim"]["value"] == 1.0
    assert (
        cells["judge on real transcripts: AUC judged success -> real success"]["sim"]["value"]
        == 1.0
    )
    rho = cells["replay rho: sim success ~ real amount"]["sim"]
    expected = spearman([1, 1, 1, 0, 0, 0], [0.5, 1.0, 2.0, 0, 0, 0])
    assert rho["value"] == pytest.approx(expected, abs=1e-4) and rho["n"] == 6
    for name, cell in cells.items():
        # The act-only reference is a reference alone: no simulator figure beside it.
        figure = cell["reference"] if name.startswith("act-only reference") else cell["sim"]
        assert figure["n"] == 6, name
    assert result["transcript_reader"] is None  # the caller chose the success judge
    for row in result["dialogues"]:
        donor = row["real_success"]
        assert row["replay"]["success"] is donor and row["full"]["success"] is donor
        assert row["replay"]["success_turn"] == (2 if donor else None)
        assert row["reference_replay"] is not None
        assert 0.0 <= row["replay"]["start_willingness"] <= 1.0
        replay = row["replay"]
        change = replay["willingness"] - replay["start_willingness"]
        assert replay["willingness_change"] == pytest.approx(change)
    assert "persona AUC: starting willingness -> real success" in cells
    assert "dynamics AUC: willingness change -> real success" in cells
    held_texts = {t.text for d in held_out for t in d.turns}
    assert fitted_texts and not any(
        piece in held_texts for text in fitted_texts for piece in text.split("\n")
    )
    json.dumps(result)  # JSON-ready


class SeedParity:
    """Says MAGIC to the users of even episode seeds only: what it says depends on its user."""

    def __init__(self, card) -> None:
        self.card = card
        self.seed = 0

    def reset(self, seed: int | None = None) -> None:
        self.seed = seed or 0

    def act(self, observation) -> str:
        if self.seed % 2 == 0:
            return "MAGIC: the children really need support."
        return "Thanks for chatting with me this evening."


def test_open_loop_replays_each_baselines_turns_to_the_next_dialogues_user() -> None:
    held_out, train = fixture_corpus()
    kwargs = {
        "env_options": {"encoder": "hashing", "success_judge": KeywordJudge},
        "baselines": (f"{__name__}:SeedParity",),
        "n_resamples": 100,
        "judge_transcripts": False,
        "progress": None,
    }
    result = validate_dialogues("P4G-soft", held_out, train, **kwargs)
    name = f"{__name__}:SeedParity"
    rows = result["dialogues"]
    closed = [row["baselines"][name]["success"] for row in rows]
    opened = [row["open_loop"][name]["success"] for row in rows]
    assert closed == [True, False, True, False, True, False]  # seeds 0..5
    assert [row["open_loop_donor"] for row in rows] == [rows[(k + 1) % 6]["id"] for k in range(6)]
    # Dialogue k hears the turns said to dialogue k + 1's user (the last, the first's).
    assert opened == [closed[(k + 1) % len(rows)] for k in range(len(rows))]
    parts = [part for row in rows for part in (row["replay"], *row["baselines"].values())]
    assert all("said" not in part for part in parts)  # the texts are not kept in the rows
    cells = result["cells"]
    assert cells[f"SR@T {name}, open loop"]["sim"]["value"] == 0.5
    # Human replay succeeds for donors (dialogues 0-2); the open loop for dialogues 1, 3, 5.
    diff = cells[f"SR@T human replay - {name} open loop"]["sim"]
    assert diff["value"] == pytest.approx(0.0) and diff["n"] == 6

    without = validate_dialogues("P4G-soft", held_out, train, open_loop=False, **kwargs)
    assert "open_loop" not in without["dialogues"][0]
    assert not any("open loop" in cell for cell in without["cells"])
    assert without["cells"][f"SR@T {name}"] == result["cells"][f"SR@T {name}"]


def test_open_loop_donors_share_the_situation() -> None:
    from dialogue_gym.validity.open_loop import open_loop_donors

    def seeker(i: int, emotion: str, problem: str) -> Dialogue:
        situation = {"emotion_type": emotion, "problem_type": problem}
        return Dialogue("esconv", f"e{i}", "test", (), {}, situation)

    esconv = dialogue_gym.make("ESConv-hard", encoder="hashing").card
    dialogues = [
        seeker(0, "anxiety", "job crisis"),
        seeker(1, "sadness", "breakup"),
        seeker(2, "anxiety", "job crisis"),
        seeker(3, "anger", "conflict"),
        seeker(4, "sadness", "breakup"),
    ]
    # The next seeker with the same emotion and problem; alone in its situation: the next one.
    assert open_loop_donors(esconv, dialogues) == [2, 4, 0, 4, 1]
    assert open_loop_donors(esconv, dialogues[:1]) == [None]  # one dialogue: itself, another seed
    seller = dialogue_gym.make("CB-hard", encoder="hashing").card
    assert open_loop_donors(seller, dialogues) == [None] * 5  # same listing, another seller


def test_the_embedded_judge_reads_real_transcripts_with_the_tasks_reader() -> None:
    """Opt-in reading of real users' text: on for the full transcripts, nowhere else."""
    from dialogue_gym.judges.embedded import StateSuccessJudge

    held_out, train = fixture_corpus()
    options = {"encoder": "hashing"}
    result = validate_dialogues(
        "P4G-soft",
        held_out,
        train,
        env_options=options,
        baselines=(),
        n_resamples=50,
        progress=None,
    )
    assert result["transcript_reader"] == "PersuadeeReader"
    assert options == {"encoder": "hashing"}  # the caller's options are not touched
    env = dialogue_gym.make("P4G-soft", encoder="hashing")
    assert (
        isinstance(env.success_judge, StateSuccessJudge) and env.success_judge.text_reader is None
    )


def test_validator_refuses_a_held_out_dialogue_in_train() -> None:
    held_out, train = fixture_corpus()
    with pytest.raises(ValueError, match="train split"):
        validate_dialogues(
            "P4G-soft",
            held_out,
            [*train, held_out[0]],
            env_options={"encoder": "hashing"},
            baselines=(),
            progress=None,
        )


# -- the CLI on the fixture ------------------------------------------------------------------


def test_cli_validate_on_the_fixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    held_out, train = fixture_corpus()
    data = write_p4g_full(tmp_path / "data", [*held_out, *train])
    assert {d.id for d in load_corpus("p4g", data, split="test")} == {d.id for d in held_out}
    out_dir = tmp_path / "out"
    argv = [
        "validate",
        "P4G-hard",
        "--data",
        str(data),
        "--encoder",
        "hashing",
        "--out",
        str(out_dir),
        "--resamples",
        "50",
        "--baseline",
        "random",
        "--no-progress",
    ]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "P4G-hard" in printed and "text-only reference" in printed
    assert "SR@T real people (the data)" in printed and "0.50" in printed
    summary = json.loads((out_dir / "validity.json").read_text())
    assert summary["counts"]["validated"] == 6 and summary["splits"] == ["test"]
    # The fixture's turns carry no labels: the P4G card's learned readers give the acts.
    assert summary["reference_modes"] == {
        "system": "train",
        "user": "train",
        "acts": "readers, train",
    }
    lines = (out_dir / "dialogues.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["id"] for line in lines) == sorted(d.id for d in held_out)
    assert "SR@T random, open loop" in printed
    assert main([*argv[:-5], "--limit", "2", "--no-progress", "--no-baselines"]) == 0
    assert "2 validated of 2" in capsys.readouterr().out
    assert main(["validate", "P4G-hard", "--data", str(data), "--split", "train"]) == 2
    assert "train is never held out" in capsys.readouterr().err
    assert main(["validate", "P4G-hard", "--data", str(tmp_path / "nowhere")]) == 2


# -- LLM judges on the OpenAI-compatible test server -------------------------------------------


def test_validator_with_llm_judges_on_the_test_server(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    from dialogue_gym.testing.server import TestServer

    monkeypatch.setenv(KEY_ENV, "sk-validate-test-0000")

    def reply(body):
        system = body["messages"][0]["content"]
        if "NOT_RATIONAL" in system:
            return "RATIONAL"
        said = " ".join(str(m["content"]) for m in body["messages"])
        return "Agree. The persuadee said yes." if YES in said else "Refused."

    held_out, train = fixture_corpus()
    with TestServer(replies=reply) as server:
        result = validate_dialogues(
            "P4G-hard",
            held_out,
            train,
            env_options={
                "encoder": "hashing",
                "judges": "llm",
                "backend": "openai:test-judge",
                "backend_options": {
                    "base_url": server.url,
                    "api_key_env": KEY_ENV,
                    "max_retries": 0,
                },
                "cache_mode": "off",
            },
            baselines=(),
            n_resamples=100,
            progress=None,
        )
        requests = len(server.chat_requests)
    assert requests > 0
    cells = result["cells"]
    assert cells["judge on real transcripts: agreement (accuracy)"]["sim"]["value"] == 1.0
    assert (
        cells["judge on real transcripts: AUC judged success -> real success"]["sim"]["value"]
        == 1.0
    )
    assert cells["SR@T human replay"]["sim"]["value"] == 0.0  # the simulated user never says YES
    assert result["counts"]["validated"] == 6


# -- the real corpora (skipped without them) ---------------------------------------------------


@pytest.mark.skipif(not (DATASETS / "p4g").is_dir(), reason="needs /work/shared/datasets")
def test_real_p4g_held_out_never_in_train_and_runs() -> None:
    from dialogue_gym.validity import validate

    result = validate(
        "P4G-hard",
        DATASETS,
        split="test",
        limit=3,
        encoder="hashing",
        baselines=(),
        n_resamples=20,
        progress=None,
    )
    assert result["counts"]["validated"] == 3
    train_ids = {d.id for d in load_corpus("p4g", DATASETS, split="train")}
    assert not train_ids & {row["id"] for row in result["dialogues"]}
    assert np.isfinite(result["cells"]["SR@T real people (the data)"]["sim"]["value"])


@pytest.mark.skipif(
    not (DATASETS / "craigslist_bargain").is_dir(), reason="needs /work/shared/datasets"
)
def test_real_cb_open_loop_replays_the_same_listing_to_another_seller() -> None:
    from dialogue_gym.validity import validate

    result = validate(
        "CB-hard",
        DATASETS,
        split="valid",
        limit=3,
        encoder="hashing",
        baselines=("scripted",),
        n_resamples=20,
        judge_transcripts=False,
        progress=None,
    )
    rows = result["dialogues"]
    assert rows and all(row["open_loop_donor"] == row["id"] for row in rows)
    assert all(row["open_loop"]["scripted"]["exchanges"] > 0 for row in rows)
    assert "SR@T scripted, open loop" in result["cells"]
