"""Tests for ``dialogue_gym.data``: record types, the four corpus loaders, splits and errors.

The real-corpus tests read the public copies in ``shared/datasets`` beside the repository (or
``$DIALOGUE_GYM_DATA``) and check the record counts of its README; they are skipped when the
folder is absent. Every malformed-input test writes its own small file in ``tmp_path``.
"""

from __future__ import annotations

import codecs
import collections
import csv
import functools
import importlib.util
import json
import os
import pickle
from pathlib import Path

import pytest

from dialogue_gym.data import (
    CorpusError,
    DataNotFoundError,
    Dialogue,
    EpisodeSeed,
    Turn,
    corpus_name,
    data_root,
    find_corpora,
    guess_corpus,
    load_corpus,
    seeds_from,
)
from dialogue_gym.plugins.cb import loader as cb
from dialogue_gym.plugins.ed import loader as ed
from dialogue_gym.plugins.esconv import loader as esconv
from dialogue_gym.plugins.p4g import loader as p4g

DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)
needs_data = pytest.mark.skipif(
    not DATA.is_dir(),
    reason=f"corpus copies not found at {DATA}: put the shared/datasets folder beside the "
    f"repository or set DIALOGUE_GYM_DATA",
)

ESCONV_STRATEGIES = {
    "Question",
    "Restatement or Paraphrasing",
    "Reflection of feelings",
    "Self-disclosure",
    "Affirmation and Reassurance",
    "Providing Suggestions",
    "Information",
    "Others",
}
CB_PPDPP_ACTS = {
    "greet",
    "inquire",
    "inform",
    "propose",
    "counter",
    "counter-noprice",
    "confirm",
    "affirm",
    "deny",
    "agree",
    "disagree",
}
ED_LISTENER_INTENTS = {
    "questioning",
    "acknowledging",
    "agreeing",
    "consoling",
    "encouraging",
    "sympathizing",
    "suggesting",
    "wishing",
}


@functools.cache
def loaded(corpus: str, fmt: str) -> tuple[Dialogue, ...]:
    """Each real format is parsed once per test session."""
    return tuple(load_corpus(corpus, DATA, format=fmt))


def by_split(dialogues: tuple[Dialogue, ...]) -> dict[str, list[Dialogue]]:
    groups: dict[str, list[Dialogue]] = collections.defaultdict(list)
    for d in dialogues:
        groups[d.split].append(d)
    return groups


def n_turns(dialogues: list[Dialogue] | tuple[Dialogue, ...]) -> int:
    return sum(len(d.turns) for d in dialogues)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# -- records ---------------------------------------------------------------------------------------


def test_turn_checks_its_role_and_splits_joined_acts() -> None:
    with pytest.raises(ValueError, match="role"):
        Turn("persuader", "hi")
    assert Turn("system", "hi", "greeting+task-related-inquiry").acts == (
        "greeting",
        "task-related-inquiry",
    )
    assert Turn("user", "hi").acts == ()


def test_records_are_frozen_and_pickle() -> None:
    d = Dialogue("esconv", "x", "train", [Turn("user", "hi")], {"a": 1}, {"b": 2})
    assert isinstance(d.turns, tuple)
    with pytest.raises(AttributeError):
        d.split = "test"  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(d)) == d
    assert d.system_turns == () and d.user_turns == (Turn("user", "hi"),)


def test_seeds_from_keeps_order_profile_and_opening_turns() -> None:
    turns = (Turn("system", "a"), Turn("user", "b"), Turn("system", "c"))
    dialogues = [
        Dialogue("p4g", "d1", "test", turns, {"extrovert.x": 3.0}, {"charity": "x"}),
        Dialogue("p4g", "d2", "test", turns[:1], {}, {}),
    ]
    seeds = seeds_from(dialogues, goal="Get a donation.", h0_turns=2)
    assert [s.dialogue_id for s in seeds] == ["d1", "d2"]
    assert seeds[0] == EpisodeSeed(
        "p4g", "d1", {"extrovert.x": 3.0}, "Get a donation.", turns[:2], {"charity": "x"}
    )
    assert seeds[1].h0 == turns[:1]
    assert seeds_from(dialogues, "g")[0].h0 == ()
    with pytest.raises(ValueError, match="h0_turns"):
        seeds_from(dialogues, "g", h0_turns=-1)


# -- P4G -------------------------------------------------------------------------------------------


@needs_data
def test_p4g_full_counts_roles_and_profile() -> None:
    full = loaded("p4g", "full")
    assert len(full) == 1017
    assert len({d.id for d in full}) == 1017
    assert n_turns(full) == 20_932  # FullData has one row per utterance
    first = full[0]
    assert first.id == "20180904-045349_715_live"
    assert first.turns[0] == Turn("system", "Good morning. How are you doing today?")
    assert first.turns[1] == Turn("user", "Hi. I am doing good. How about you?")
    assert all(t.act is None for d in full for t in d.turns)
    profile = first.profile  # the persuadee (B4 = 1)
    assert profile["user_id"] == "user_1810"
    assert profile["extrovert.x"] == 3.2 and profile["neurotic.x"] == 2.0
    assert profile["care.x"] == 4.0 and profile["security.x"] == 6.0
    assert profile["rational.x"] == 3.5 and profile["intuitive.x"] == 4.0
    assert profile["age.x"] == 50.0 and profile["sex.x"] == "Female"
    assert profile["ideology.x"] == "Conservative" and profile["donation"] == 0.0
    assert first.situation["charity"] == "Save the Children"
    assert first.situation["n_turns"] == 11
    assert first.situation["persuader"]["user_id"] == "user_585"
    # 14 info rows lack demographics; empty cells become None.
    assert sum(d.profile["age.x"] is None for d in full) == 8


@needs_data
def test_p4g_annotated_acts_and_info() -> None:
    annotated = loaded("p4g", "annotated")
    assert len(annotated) == 300
    first = annotated[0]
    assert first.id == "20180719-210146_172_live"
    assert first.turns[0] == Turn("system", "Hello. How are you?", "greeting")
    assert first.turns[1] == Turn("user", "I'm good, how are you doing?", "greeting")
    assert first.turns[2].act == "greeting+other+task-related-inquiry"
    system_acts = {a for d in annotated for t in d.system_turns for a in t.acts}
    user_acts = {a for d in annotated for t in d.user_turns for a in t.acts}
    assert len(system_acts) == 27 and len(user_acts) == 23  # README: 27 er, 23 ee labels
    assert {"logical-appeal", "emotion-appeal", "credibility-appeal"} <= system_acts
    assert "proposition-of-donation" in system_acts and "agree-donation" in user_acts
    assert all(t.act for d in annotated for t in d.turns)
    assert first.profile["intended_donation"] == 2.0  # B5 from 300_info
    assert first.profile["extrovert.x"] == 4.0  # joined from FullData/full_info.csv
    full_ids = {d.id for d in loaded("p4g", "full")}
    assert {d.id for d in annotated} <= full_ids


@needs_data
def test_p4g_gdpzero_json_matches_the_annotated_csv() -> None:
    gdpzero = loaded("p4g", "gdpzero")
    assert len(gdpzero) == 300
    assert sum(d.situation["n_exchanges"] for d in gdpzero) == 3_110
    assert sum(len(d.system_turns) for d in gdpzero) == 3_110  # every exchange has 'er'
    annotated = {d.id: d for d in loaded("p4g", "annotated")}
    assert [d.id for d in gdpzero] == list(annotated)
    same = sum(d.turns == annotated[d.id].turns for d in gdpzero)
    assert same >= 298  # GDP-Zero regrouped the sentences of two dialogues differently


@needs_data
def test_p4g_pickle_is_refused_with_a_pointer_to_the_json() -> None:
    pkl = next(DATA.glob("p4g/**/300_dialog_turn_based.pkl"), None)
    if pkl is None:
        pytest.skip("no .pkl in the data folder")
    with pytest.raises(CorpusError, match=r"refusing to load a Python pickle.*\.json"):
        p4g.load(pkl)
    with pytest.raises(CorpusError, match="pickle"):
        load_corpus("p4g", pkl)


@needs_data
def test_p4g_xlsx_without_openpyxl_says_so(tmp_path: Path) -> None:
    if importlib.util.find_spec("openpyxl") is not None:
        pytest.skip("openpyxl is installed (see test_p4g_xlsx_matches_csv)")
    folder = tmp_path / "AnnotatedData"
    folder.mkdir()
    source = DATA / "p4g/raw_gitlab_mirror/AnnotatedData/300_dialog.xlsx"
    (folder / "300_dialog.xlsx").symlink_to(source)
    with pytest.raises(CorpusError, match=r"openpyxl.*not installed"):
        p4g.load_annotated(folder)
    assert any("openpyxl is not installed" in n for n in p4g.notes(folder))


@needs_data
def test_p4g_xlsx_matches_csv(tmp_path: Path) -> None:
    pytest.importorskip("openpyxl")
    folder = tmp_path / "AnnotatedData"
    folder.mkdir()
    for name in ("300_dialog.xlsx", "300_info.xlsx"):
        (folder / name).symlink_to(DATA / "p4g/raw_gitlab_mirror/AnnotatedData" / name)
    from_xlsx = p4g.load_annotated(folder)
    from_csv = p4g.load_annotated(
        DATA / "p4g/raw_gitlab_mirror/AnnotatedData/300_dialog.csv", info=tmp_path / "none.csv"
    )
    assert from_xlsx == from_csv


@needs_data
def test_p4g_held_out_split_is_deterministic_disjoint_and_documented() -> None:
    full = loaded("p4g", "full")
    groups = by_split(full)
    assert {s: len(v) for s, v in groups.items()} == {"train": 806, "valid": 99, "test": 112}
    ids = {s: {d.id for d in v} for s, v in groups.items()}
    assert not ids["train"] & ids["valid"] and not ids["train"] & ids["test"]
    assert not ids["valid"] & ids["test"]
    assert p4g.split_of("20180904-024226_703_live") == "valid"
    assert p4g.split_of("20180904-100019_870_live") == "test"
    assert p4g.split_of("20180904-045349_715_live") == "train"
    # The same dialogue gets the same split in every format.
    split = {d.id: d.split for d in full}
    assert all(split[d.id] == d.split for d in loaded("p4g", "gdpzero"))
    assert "sha256" in (p4g.__doc__ or "") and "80/10/10" in (p4g.__doc__ or "")
    test = load_corpus("p4g", DATA, split="test")
    assert [d.id for d in test] == [d.id for d in groups["test"]]


# -- ESConv ----------------------------------------------------------------------------------------


@needs_data
def test_esconv_hf_counts_roles_and_fields() -> None:
    hf = loaded("esconv", "hf")
    groups = by_split(hf)
    assert {s: len(v) for s, v in groups.items()} == {"train": 910, "valid": 195, "test": 195}
    assert [n_turns(groups[s]) for s in ("train", "valid", "test")] == [26_648, 5_678, 6_039]
    first = groups["train"][0]
    assert first.id == "hf-train-0000"
    assert first.turns[0] == Turn("user", "Hello good afternoon.")
    assert first.turns[1] == Turn("system", "Hi, good afternoon.", "Question")
    assert first.situation["emotion_type"] == "anxiety"
    assert first.situation["problem_type"] == "job crisis"
    assert first.situation["situation"].startswith("I am on short term disability")
    assert first.situation["experience_type"] == "Current Experience"
    assert first.profile == {"initial_emotion_intensity": 3}
    assert {t.act for d in hf for t in d.system_turns} == ESCONV_STRATEGIES
    assert all(t.act is None for d in hf for t in d.user_turns)


@needs_data
def test_esconv_ppdpp_split_is_the_hf_data_reordered() -> None:
    ppdpp = by_split(loaded("esconv", "ppdpp"))
    assert {s: len(v) for s, v in ppdpp.items()} == {"train": 1040, "valid": 130, "test": 130}
    assert n_turns(ppdpp["train"]) == 30_621
    hf = by_split(loaded("esconv", "hf"))

    def key(ds: list[Dialogue]) -> list[tuple[object, ...]]:
        return [(d.turns, d.situation["situation"], d.situation["emotion_type"]) for d in ds]

    # README: valid = HF valid[0:130]; test = HF valid[130:] + test[:65]; train = rest.
    assert key(ppdpp["valid"]) == key(hf["valid"][:130])
    assert key(ppdpp["test"]) == key(hf["valid"][130:] + hf["test"][:65])
    assert key(ppdpp["train"]) == key(hf["test"][65:] + hf["train"])


@needs_data
def test_esconv_original_schema_failed_conversations() -> None:
    failed = loaded("esconv", "original")
    assert len(failed) == 196
    assert {d.split for d in failed} == {"unsplit"}
    assert all(d.situation["failed"] for d in failed)
    first = failed[0]
    assert first.id == "FailedESConv-0000"
    assert first.turns[:4] == (
        Turn("user", "Hey there"),  # speaker = the seeker; trailing newline stripped
        Turn("user", "How are you?"),
        Turn("system", "hi", "Other"),  # listener = the supporter
        Turn("system", "I AM FINE, AND YOU", "Questions"),
    )
    assert first.profile == {"initial_emotion_intensity": 5}
    assert n_turns(failed) == 5_230


# -- EmpatheticDialogues ---------------------------------------------------------------------------


@needs_data
def test_ed_intents_counts_splits_and_duplicates() -> None:
    intents = loaded("ed", "intents")
    groups = by_split(intents)
    assert {s: len(v) for s, v in groups.items()} == {
        "train": 19_532,
        "valid": 2_769,
        "test": 2_546,
    }
    assert len({d.id for d in intents}) == 24_847 == 24_856 - 9
    assert not any(d.id.endswith(")") for d in intents)
    # README: 107,247 utterances (55,984 speaker + 51,263 listener) including the duplicates.
    with (DATA / "empathetic_dialogues" / ed.SPLITS_FILE).open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    skipped = sum(int(r["n_utterances"]) for r in rows if r["duplicate_of"])
    assert n_turns(intents) + skipped == 107_247
    assert len(rows) == 24_856


@needs_data
def test_ed_roles_acts_and_situation() -> None:
    intents = loaded("ed", "intents")
    first = intents[0]
    assert first.id == "hit:4821_conv:9643" and first.split == "train"
    assert first.situation["emotion"] == "afraid"
    assert first.situation["prompt"] == "When my car caught on fire while driving"
    assert first.turns[0] == Turn("user", "I had my car catch on fire while driving!", "devastated")
    assert first.turns[1] == Turn("system", "Oh my gosh, what did you do?", "questioning")
    # The speaker (user) opens every conversation and the roles alternate.
    assert all(
        t.role == ("user" if i % 2 == 0 else "system")
        for d in intents
        for i, t in enumerate(d.turns)
    )
    listener_acts = {t.act for d in intents for t in d.system_turns}
    assert listener_acts >= ED_LISTENER_INTENTS and "neutral" in listener_acts
    assert len({t.act for d in intents for t in d.turns}) == 41  # README: 41 labels
    plain = loaded("ed", "intents_unannotated")
    assert [d.id for d in plain] == [d.id for d in intents]
    assert all(t.act is None for d in plain[:100] for t in d.turns)
    assert [t.text for t in plain[0].turns] == [t.text for t in first.turns]


def test_ed_per_emotion_file_without_split_file(tmp_path: Path) -> None:
    path = write(
        tmp_path / "proud.csv",
        "Dialog_ID,Type,Actor,Text\n"
        "hit:1_conv:2,situation,none,I won a prize\n"
        'hit:1_conv:2,utterance,speaker,"I won, finally!"\n'
        "hit:1_conv:2,utterance,listener,Congratulations!\n"
        "hit:1_conv:2 (1),situation,none,I won a prize\n"
        "hit:1_conv:2 (1),utterance,speaker,dup\n",
    )
    (dialogue,) = ed.load(path)
    assert dialogue.split == "unknown"
    assert dialogue.situation == {"emotion": "proud", "prompt": "I won a prize"}
    assert dialogue.turns == (Turn("user", "I won, finally!"), Turn("system", "Congratulations!"))


OFFICIAL_HEADER = "conv_id,utterance_idx,context,prompt,speaker_idx,utterance,selfeval,tags\n"


def official_rows(conv: str, emotion: str, prompt: str, utterances: list[str]) -> str:
    return "".join(
        f"{conv},{i},{emotion},{prompt},{100 + i % 2},{u},5|5|5_2|2|5,\n"
        for i, u in enumerate(utterances, start=1)
    )


def test_ed_official_csv_format(tmp_path: Path) -> None:
    folder = tmp_path / "data" / "empathetic_dialogues" / "empatheticdialogues"
    write(
        folder / "train.csv",
        OFFICIAL_HEADER
        + official_rows(
            "hit:0_conv:1",
            "sentimental",
            "I remember going to the fireworks with my best friend_comma_ lots of fun",
            ["I remember going to see the fireworks_comma_ you?", "Was this a friend?", "Yes"],
        )
        + official_rows("hit:0_conv:2", "afraid", "Night noises", ["I heard a noise", "Scary!"]),
    )
    # test.csv rows may carry a ninth field of candidates; it is ignored.
    write(
        folder / "test.csv",
        OFFICIAL_HEADER
        + "hit:9_conv:8,1,proud,Got a job,7,I got the job!,,,cand a|cand b\n"
        + "hit:9_conv:8,2,proud,Got a job,8,Congrats_comma_ well done,,,\n",
    )
    write(folder / "valid.csv", OFFICIAL_HEADER + official_rows("hit:5_conv:6", "sad", "x", ["a"]))
    dialogues = ed.load_official(folder)
    assert [(d.id, d.split) for d in dialogues] == [
        ("hit:0_conv:1", "train"),
        ("hit:0_conv:2", "train"),
        ("hit:5_conv:6", "valid"),
        ("hit:9_conv:8", "test"),
    ]
    first = dialogues[0]
    assert first.situation["emotion"] == "sentimental"
    assert first.situation["prompt"] == (
        "I remember going to the fireworks with my best friend, lots of fun"
    )
    assert first.turns == (
        Turn("user", "I remember going to see the fireworks, you?"),
        Turn("system", "Was this a friend?"),
        Turn("user", "Yes"),
    )
    assert first.profile == {"speaker_id": "101"}
    assert dialogues[-1].turns[1] == Turn("system", "Congrats, well done")
    # Through the data root: the official format is preferred when present.
    root = tmp_path / "data"
    assert ed.detect(root / "empathetic_dialogues") == {
        "official": sorted([folder / "test.csv", folder / "train.csv", folder / "valid.csv"])
    }
    assert [d.id for d in load_corpus("ed", root, split="valid")] == ["hit:5_conv:6"]


def test_ed_official_csv_truncated_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "valid.csv",
        OFFICIAL_HEADER
        + official_rows("hit:1_conv:1", "sad", "p", ["a", "b"])
        + "hit:1_conv:1,3\n",
    )
    with pytest.raises(CorpusError) as info:
        ed.load(path)
    assert info.value.line == 4 and info.value.path == path
    assert f"{path}:4:" in str(info.value) and "at least 6" in str(info.value)
    with pytest.raises(CorpusError, match="official header"):
        ed.load_official(write(tmp_path / "test.csv", "conv_id,foo\nx,y\n"))


# -- CraigslistBargain -----------------------------------------------------------------------------


@needs_data
def test_cb_hf_counts_roles_and_situation() -> None:
    groups = by_split(loaded("cb", "hf"))
    assert {s: len(v) for s, v in groups.items()} == {"valid": 597, "test": 838}
    assert n_turns(groups["valid"]) == 5_475 and n_turns(groups["test"]) == 7_748
    first = groups["valid"][0]
    assert first.turns[0] == Turn("system", "hi there", "intro")  # agent 0 = buyer
    assert first.turns[1] == Turn("user", "Good Day!", "unknown")  # agent 1 = seller
    assert first.turns[-2:] == (Turn("user", "", "offer"), Turn("system", "", "accept"))
    assert first.situation["title"] == "GoPro Hero4 Black + Battery BacPac"
    assert first.situation["category"] == "electronics"
    assert first.situation["listing_price"] == 265.0
    assert first.situation["buyer_target"] == 243.0
    assert first.situation["seller_target"] == 265.0
    assert first.situation["description"].startswith("- HERO4 Black Camera")
    assert first.profile["role"] == "seller" and first.profile["target"] == 265.0
    assert first.profile["bottomline"] is None
    assert all(t.act is None for d in groups["test"] for t in d.turns)  # no labels in test
    categories = {d.situation["category"] for d in groups["valid"]}
    assert categories == {"bike", "car", "electronics", "furniture", "housing", "phone"}


@needs_data
def test_cb_ppdpp_counts_and_acts() -> None:
    groups = by_split(loaded("cb", "ppdpp"))
    assert {s: len(v) for s, v in groups.items()} == {"valid": 188, "test": 188}
    assert n_turns(groups["valid"]) == 1_355 and n_turns(groups["test"]) == 1_389
    first = groups["valid"][0]
    assert first.turns[0] == Turn("system", "hi there", "greet")
    assert first.turns[1] == Turn("user", "Good Day!", "greet")
    assert first.situation["buyer_target"] == 243.0 and first.situation["seller_target"] == 265.0
    assert first.situation["category"] == "electronics" and first.situation["title"] is None
    assert {t.act for d in loaded("cb", "ppdpp") for t in d.turns} == CB_PPDPP_ACTS


@needs_data
def test_cb_scenarios_are_the_train_pool() -> None:
    groups = by_split(loaded("cb", "scenarios"))
    assert {s: len(v) for s, v in groups.items()} == {"train": 5_202, "valid": 597, "test": 809}
    assert all(d.turns == () for v in groups.values() for d in v)
    first = groups["train"][0]
    assert first.id == "train_00000"
    assert first.situation["listing_price"] == 10.0 and first.situation["buyer_target"] == 7.0
    assert first.situation["has_images"] is True
    assert first.situation["category"] == "electronics"
    # No train dialogues exist here, so the train split falls back to the scenarios.
    train = load_corpus("cb", DATA, split="train")
    assert len(train) == 5_202 and train[0].id == "train_00000"


def cocoa_record(uuid: str, seller_first: bool) -> dict[str, object]:
    buyer = {
        "personal": {"Role": "buyer", "Target": 80, "Bottomline": None},
        "item": {"Category": "bike", "Title": "Road bike", "Price": 100, "Description": ["Fast"]},
    }
    seller = {
        "personal": {"Role": "seller", "Target": 100, "Bottomline": None},
        "item": {
            "Category": "bike",
            "Title": "Road bike",
            "Price": 100,
            "Description": ["Fast", "Red"],
            "Images": ["bike/1.jpg"],
        },
    }
    kbs = [seller, buyer] if seller_first else [buyer, seller]
    b, s = (1, 0) if seller_first else (0, 1)
    return {
        "uuid": uuid,
        "scenario": {"uuid": "S1", "category": "bike", "kbs": kbs},
        "events": [
            {"agent": b, "action": "message", "data": "Hi, is it available?", "metadata": None},
            {"agent": s, "action": "message", "data": "Yes, $100.", "metadata": {"intent": "x"}},
            {"agent": b, "action": "offer", "data": {"price": 90, "sides": None}},
            {"agent": s, "action": "accept", "data": None},
        ],
    }


def test_cb_cocoa_parsed_json(tmp_path: Path) -> None:
    folder = tmp_path / "craigslist_bargain" / "cocoa"
    write(folder / "dev.json", json.dumps([cocoa_record("C1", False), cocoa_record("C2", True)]))
    dialogues = load_corpus("cb", tmp_path)
    assert [(d.id, d.split) for d in dialogues] == [("C1", "valid"), ("C2", "valid")]
    for d in dialogues:  # the buyer is the system whichever agent index it has
        assert d.turns == (
            Turn("system", "Hi, is it available?"),
            Turn("user", "Yes, $100.", "x"),
            Turn("system", "", "offer"),
            Turn("user", "", "accept"),
        )
        assert d.situation["description"] == "Fast,Red"
        assert d.situation["buyer_description"] == "Fast"
        assert (d.situation["buyer_target"], d.situation["seller_target"]) == (80.0, 100.0)
        assert d.profile["target"] == 100.0


# -- finding and loading by name -------------------------------------------------------------------


@needs_data
def test_find_corpora_describes_every_format() -> None:
    found = find_corpora(DATA)
    assert list(found) == ["cb", "ed", "esconv", "p4g"]  # the plug-ins' cards, as registered
    assert list(found["p4g"].formats) == ["full", "annotated", "gdpzero"]
    assert list(found["esconv"].formats) == ["hf", "ppdpp", "original"]
    assert list(found["ed"].formats) == ["intents", "intents_unannotated"]
    assert len(found["ed"].formats["intents"]) == 32
    assert list(found["cb"].formats) == ["hf", "ppdpp", "scenarios"]
    assert found["p4g"].path == DATA / "p4g"
    assert any(".pkl" in note and "pickle" in note for note in found["p4g"].notes)


def test_find_corpora_reports_missing_corpora(tmp_path: Path) -> None:
    write(tmp_path / "esconv" / "nested" / "valid.jsonl", json.dumps(ESCONV_RECORD) + "\n")
    found = find_corpora(tmp_path)
    assert found["esconv"].found and found["esconv"].path == tmp_path / "esconv"
    assert found["esconv"].formats == {"hf": (tmp_path / "esconv" / "nested" / "valid.jsonl",)}
    assert not found["p4g"].found and found["p4g"].path is None
    with pytest.raises(DataNotFoundError, match=r"no Persuasion for Good files.*p4g"):
        load_corpus("p4g", tmp_path)
    with pytest.raises(DataNotFoundError, match="split 'test'"):
        load_corpus("esconv", tmp_path, split="test")


def test_data_root_from_env_or_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DIALOGUE_GYM_DATA", raising=False)
    with pytest.raises(DataNotFoundError) as info:
        data_root()
    message = str(info.value)
    assert "DIALOGUE_GYM_DATA" in message and "--data" in message
    assert "DIR/esconv" in message and "DIR/craigslist_bargain" in message
    with pytest.raises(DataNotFoundError, match="does not exist"):
        data_root(tmp_path / "missing")
    write(tmp_path / "esconv" / "test.jsonl", json.dumps(ESCONV_RECORD) + "\n")
    monkeypatch.setenv("DIALOGUE_GYM_DATA", str(tmp_path))
    assert data_root() == tmp_path
    assert [d.id for d in load_corpus("ESConv", split="test")] == ["hf-test-0000"]


def test_names_splits_and_formats_are_validated(tmp_path: Path) -> None:
    assert corpus_name("Empathetic_Dialogues") == "ed"
    assert corpus_name("CraigslistBargain") == "cb" and corpus_name("P4G") == "p4g"
    with pytest.raises(ValueError, match="unknown corpus"):
        corpus_name("multiwoz")
    with pytest.raises(ValueError, match="unknown split"):
        load_corpus("esconv", tmp_path, split="holdout")
    with pytest.raises(ValueError, match="unknown ESConv format"):
        load_corpus("esconv", tmp_path, format="csv")


@needs_data
def test_loading_is_deterministic_and_accepts_single_files() -> None:
    path = DATA / "esconv" / "ppdpp" / "esc-valid.txt"
    once = load_corpus("esconv", path)
    assert once == load_corpus("esconv", path) == list(by_split(loaded("esconv", "ppdpp"))["valid"])
    assert guess_corpus(path) == "esconv"
    assert guess_corpus(DATA / "craigslist_bargain" / "hf_craigslist_bargains") == "cb"


@needs_data
def test_seeds_from_real_dialogues() -> None:
    test = load_corpus("p4g", DATA, split="test")
    seeds = seeds_from(test, goal="Persuade the user to donate.", h0_turns=2)
    assert len(seeds) == 112
    assert all([t.role for t in s.h0] == ["system", "user"] for s in seeds)
    assert all("extrovert.x" in s.profile for s in seeds[:20])


# -- malformed input -------------------------------------------------------------------------------

ESCONV_RECORD = {
    "emotion_type": "anxiety",
    "problem_type": "job crisis",
    "situation": "I may lose my job.",
    "dialog": [
        {"text": "Hi", "speaker": "usr"},
        {"text": "Hello, how are you?", "speaker": "sys", "strategy": "Question"},
    ],
}


def jsonl(*records: object) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_truncated_json_line_names_file_and_line(tmp_path: Path) -> None:
    good = json.dumps(ESCONV_RECORD)
    path = write(tmp_path / "train.jsonl", f"{good}\n{good}\n{good[:40]}\n")
    with pytest.raises(CorpusError) as info:
        esconv.load(path)
    error = info.value
    assert isinstance(error, ValueError)
    assert error.path == path and error.line == 3
    assert str(error).startswith(f"{path}:3: invalid JSON")
    assert pickle.loads(pickle.dumps(error)).line == 3


def test_truncated_json_document_names_the_line(tmp_path: Path) -> None:
    document = json.dumps(
        {
            "d1": {
                "dialog": [{"er": ["Hi."], "ee": ["Hello."]}],
                "label": [{"er": ["greeting"], "ee": ["greeting"]}],
            },
            "d2": {"dialog": [{"er": ["Bye."], "ee": []}]},
        },
        indent=1,
    )
    path = write(tmp_path / "300_dialog_turn_based.json", document[: len(document) // 2])
    with pytest.raises(CorpusError, match="truncated") as info:
        p4g.load(path)
    assert info.value.line is not None and info.value.line > 1
    complete = write(tmp_path / "ok" / "300_dialog_turn_based.json", document)
    d1, d2 = p4g.load(complete)
    assert d1.turns == (Turn("system", "Hi.", "greeting"), Turn("user", "Hello.", "greeting"))
    assert d2.turns == (Turn("system", "Bye."),)


def test_bad_record_in_a_json_list_names_its_line(tmp_path: Path) -> None:
    record = {
        "experience_type": "Current Experience",
        "emotion_type": "sadness",
        "problem_type": "breakup",
        "situation": "s",
        "survey_score": {},
        "dialog": [{"speaker": "seeker", "annotation": {}, "content": "hi"}],
    }
    broken = {k: v for k, v in record.items() if k != "dialog"}
    path = write(tmp_path / "ESConv.json", json.dumps([record, broken], indent=2))
    with pytest.raises(CorpusError, match=r"conversation 1: missing key 'dialog'") as info:
        esconv.load(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[info.value.line - 1].strip() == "{"  # the line where record 1 starts
    assert info.value.line > 10
    bad_speaker = dict(record, dialog=[{"speaker": "robot", "annotation": {}, "content": "x"}])
    write(path, json.dumps([bad_speaker]))
    with pytest.raises(CorpusError, match="unknown speaker 'robot'"):
        esconv.load(path)


def test_missing_csv_columns_name_them(tmp_path: Path) -> None:
    path = write(tmp_path / "full_dialog.csv", ",Unit,Turn,B2\n0,Hi,0,d1\n")
    with pytest.raises(CorpusError) as info:
        p4g.load(path)
    assert info.value.line == 1 and "'B4'" in str(info.value)
    assert f"{path}:1:" in str(info.value)


def test_bad_csv_rows_name_their_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "full_dialog.csv",
        ',Unit,Turn,B4,B2\n0,Hi,0,0,d1\n1,"Hello,\nthere",0,1,d1\n2,Bye,1,0\n',
    )
    with pytest.raises(CorpusError, match="expected 5 fields") as info:
        p4g.load(path)
    assert info.value.line == 5  # the quoted newline makes row 2 span lines 3-4
    write(path, ",Unit,Turn,B4,B2\n0,Hi,0,0,d1\n1,Hello,0,persuadee,d1\n")
    with pytest.raises(CorpusError, match=r"B4.*whole number") as info:
        p4g.load(path)
    assert info.value.line == 3
    write(path, ',Unit,Turn,B4,B2\n0,"Hi,0,0,d1\n')
    with pytest.raises(CorpusError, match=f"{path}:2"):
        p4g.load(path)


def test_wrong_encodings_say_what_was_expected(tmp_path: Path) -> None:
    text = "Dialog_ID,Type,Actor,Text\nhit:1_conv:1,situation,none,Café au lait\n"
    latin1 = write(tmp_path / "latin" / "joyful.csv", text.encode("latin-1"))
    with pytest.raises(CorpusError, match="not valid UTF-8; expected UTF-8") as info:
        ed.load(latin1)
    assert info.value.line == 2 and "latin-1" in str(info.value)
    utf16 = write(tmp_path / "u16" / "train.jsonl", jsonl(ESCONV_RECORD).encode("utf-16"))
    with pytest.raises(CorpusError, match="UTF-16-encoded; expected UTF-8") as info:
        esconv.load(utf16)
    assert info.value.line == 1
    no_bom = write(tmp_path / "u16b" / "train.jsonl", jsonl(ESCONV_RECORD).encode("utf-16-le"))
    with pytest.raises(CorpusError, match="UTF-16"):
        esconv.load(no_bom)
    bom8 = write(tmp_path / "bom" / "train.jsonl", codecs.BOM_UTF8 + jsonl(ESCONV_RECORD).encode())
    assert len(esconv.load(bom8)) == 1  # a UTF-8 byte-order mark is fine


@pytest.mark.parametrize(
    ("corpus", "name"),
    [
        ("p4g", "full_dialog.csv"),
        ("p4g", "300_dialog_turn_based.json"),
        ("esconv", "esc-train.txt"),
        ("esconv", "FailedESConv.json"),
        ("ed", "ed_train.csv"),
        ("cb", "validation.jsonl"),
        ("cb", "train_scenarios.csv"),
    ],
)
def test_empty_files_are_reported(tmp_path: Path, corpus: str, name: str) -> None:
    path = write(tmp_path / name, "\n  \n")
    with pytest.raises(CorpusError, match="the file is empty") as info:
        load_corpus(corpus, path)
    assert info.value.path == path


def test_structural_errors_in_jsonl_name_the_line(tmp_path: Path) -> None:
    bad_turn = dict(ESCONV_RECORD, dialog=[{"speaker": "usr"}])
    path = write(tmp_path / "valid.jsonl", jsonl(ESCONV_RECORD, bad_turn))
    with pytest.raises(CorpusError, match=r"conversation 1, turn 0: missing key 'text'") as info:
        esconv.load(path)
    assert info.value.line == 2
    write(path, jsonl(ESCONV_RECORD, [1, 2]))
    with pytest.raises(CorpusError, match="expected a JSON object, found list"):
        esconv.load(path)
    cb_path = write(tmp_path / "cb-test.txt", jsonl({"item_name": "bike", "dialog": []}))
    with pytest.raises(CorpusError, match="missing key 'seller_price'") as info:
        cb.load(cb_path)
    assert info.value.line == 1
