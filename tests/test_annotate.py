"""The BDI annotator (OBU), the silver-cache run and the ``annotate`` command."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from dialogue_gym.backends import BackendError, FakeBackend
from dialogue_gym.cards.card import load_card
from dialogue_gym.cli import commands as cli
from dialogue_gym.data.records import Dialogue, Turn
from dialogue_gym.mentalizers import Student, Teacher
from dialogue_gym.mentalizers import annotate as annotate_module
from dialogue_gym.mentalizers.annotate import (
    annotate_corpus,
    annotation_prefixes,
    initial_prefix,
    prefix_history,
    profile_text,
)
from dialogue_gym.mentalizers.annotator import AnnotationError, BDIAnnotator
from dialogue_gym.mentalizers.llm import LLMMentalizer, SilverCache
from dialogue_gym.mind.bdi import BDI

DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA")
    or Path(__file__).resolve().parents[2] / "shared" / "datasets"
)
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"corpus copies not found at {DATA}")

GOOD = (
    "Belief: The seeker believes nobody understands them.\n"
    "Desire: To feel heard.\n"
    "Intention: Keep venting.\n"
    "Receptivity: 0.4\nConfidence: 0.2\nValence: -0.6"
)


def obu_responder(messages, params, sample_index):
    """A well-behaved OBU: the state depends on how many turns the prefix has."""
    body = messages[1]["content"]
    turns = len(re.findall(r'^(?:Supporter|Help-seeker|Persuader|Persuadee): "', body, re.M))
    return (
        f"Belief: belief after {turns} turns\nDesire: desire {turns}\nIntention: intention\n"
        f"Receptivity: {min(1.0, 0.1 * turns):.2f}\nConfidence: 0.3\nValence: -0.2"
    )


@pytest.fixture(scope="module")
def esconv():
    return load_card("esconv")


def dialogue(roles, corpus="esconv", profile=None, situation=None):
    turns = tuple(Turn(role, f"turn {i}") for i, role in enumerate(roles))
    return Dialogue(corpus, "d1", "valid", turns, profile or {}, situation or {})


# -- the annotator -----------------------------------------------------------------------------


def test_annotator_reads_six_fields(esconv):
    backend = FakeBackend.scripted([GOOD])
    bdi = BDIAnnotator(esconv, backend).annotate([("user", "I feel awful.")])
    assert bdi == BDI(
        "The seeker believes nobody understands them.",
        "To feel heard.",
        "Keep venting.",
        0.4,
        0.2,
        -0.6,
    )
    call = backend.calls_log[0]
    assert call.component == "mentalizer.obu"
    assert call.params.temperature == 0.2 and call.params.max_tokens == 320
    assert "Oracle Belief Updater" in call.messages[0]["content"]


def test_annotator_retries_once_with_a_format_reminder(esconv):
    backend = FakeBackend.scripted(["Belief: only this", GOOD])
    bdi = BDIAnnotator(esconv, backend).annotate([("user", "Hi")], profile="anxiety")
    assert bdi.desire == "To feel heard."
    retry = backend.calls_log[1].messages
    assert [m["role"] for m in retry[-2:]] == ["assistant", "user"]
    assert retry[-2]["content"] == "Belief: only this"
    assert "could not be read" in retry[-1]["content"] and "desire" in retry[-1]["content"]


def test_annotator_fails_clearly_after_two_bad_outputs(esconv):
    backend = FakeBackend.scripted(["nothing useful", "Belief: x\nDesire: y"])
    with pytest.raises(AnnotationError, match="intention") as info:
        BDIAnnotator(esconv, backend).annotate([])
    assert "intention" in info.value.missing and info.value.output == "Belief: x\nDesire: y"


def test_annotator_propagates_backend_errors(esconv):
    with pytest.raises(BackendError):
        BDIAnnotator(esconv, FakeBackend.scripted([])).annotate([])


# -- prefixes and profiles ---------------------------------------------------------------------


def test_prefixes():
    system_first = dialogue(["system", "user", "user", "system", "user"])
    assert initial_prefix(system_first) == 0
    assert annotation_prefixes(system_first) == [0, 3, 5]
    user_first = dialogue(["user", "system", "user", "system"])
    assert initial_prefix(user_first) == 1 and annotation_prefixes(user_first) == [1, 3]
    assert prefix_history(user_first, 3) == [
        ("user", "turn 0"),
        ("system", "turn 1"),
        ("user", "turn 2"),
    ]
    silent = Dialogue("cb", "c", "test", (Turn("system", "", "offer"),), {}, {})
    assert prefix_history(silent, 1) == [("system", "[offer]")]


def test_profiles_leave_out_outcomes():
    p4g = dialogue(
        ["system"],
        corpus="p4g",
        profile={"donation": 1.5, "intended_donation": 1.0, "age.x": 34.0, "care.x": 5.4},
    )
    text = profile_text(p4g)
    assert "age 34" in text and "care 5.4" in text and "donation" not in text
    esconv = dialogue(
        ["user"],
        profile={"initial_emotion_intensity": 4},
        situation={
            "emotion_type": "anxiety",
            "problem_type": "job crisis",
            "situation": "I lost my job.",
            "survey_score": {"seeker": {"final_emotion_intensity": "1"}},
        },
    )
    text = profile_text(esconv)
    assert "emotion: anxiety" in text and "I lost my job." in text
    assert "final" not in text
    assert profile_text(dialogue(["user"])) is None


# -- the corpus run ----------------------------------------------------------------------------


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


@needs_data
def test_annotate_corpus_writes_silver_and_prior_and_resumes(tmp_path):
    backend = FakeBackend(responder=obu_responder)
    out = tmp_path / "silver"
    result = annotate_corpus("esconv", DATA, "valid", backend, out, limit=3, progress=False)
    assert result.dialogues == 3 and result.failed == 0 and result.skipped == 0
    silver = _lines(out / "silver.jsonl")
    assert len(silver) == result.prefixes == result.written > 3
    keys = [(r["dialogue_id"], r["prefix"]) for r in silver]
    assert len(set(keys)) == len(keys)
    for record in silver:
        assert record["corpus"] == "esconv" and record["split"] == "valid"
        assert {"belief", "desire", "intention", "receptivity", "confidence", "valence"} <= set(
            record
        )
    prior = _lines(out / "prior.jsonl")
    assert [r["dialogue_id"] for r in prior] == list(dict.fromkeys(k[0] for k in keys))
    assert all(r["prefix"] in (0, 1) and r["profile"] for r in prior)
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["annotator"]["component"] == "mentalizer.obu"

    # Resume: nothing new to do, nothing duplicated, no backend calls.
    calls = len(backend.calls_log)
    again = annotate_corpus("esconv", DATA, "valid", backend, out, limit=3, progress=False)
    assert again.written == 0 and again.skipped == result.prefixes
    assert len(backend.calls_log) == calls
    assert len(_lines(out / "silver.jsonl")) == len(silver)

    # A crash mid-write: the last two lines lost, the one before cut short.
    text = (out / "silver.jsonl").read_text("utf-8").splitlines(keepends=True)
    (out / "silver.jsonl").write_text("".join(text[:-3]) + text[-3][:20], encoding="utf-8")
    resumed = annotate_corpus("esconv", DATA, "valid", backend, out, limit=3, progress=False)
    assert resumed.written == 3 and resumed.skipped == result.prefixes - 3
    records = _lines_tolerant(out / "silver.jsonl")
    keys_after = [(r["dialogue_id"], r["prefix"]) for r in records]
    assert sorted(keys_after) == sorted(keys) and len(set(keys_after)) == len(keys_after)

    # The cache built from it.
    cache = SilverCache.load(out)
    assert len(cache) == len(keys)
    dialogue_id, prefix = keys[-1]
    assert cache.get(dialogue_id, prefix) == BDI.from_dict(
        next(r for r in silver if (r["dialogue_id"], r["prefix"]) == keys[-1])
    )
    assert cache.get(dialogue_id, 999) is None
    assert len(cache.prior()) == 3 and len(cache.prior(split="train")) == 0
    assert all(isinstance(b, BDI) for b in cache.prior(corpus="esconv"))


def _lines_tolerant(path: Path) -> list[dict]:
    out = []
    for line in path.read_text("utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


@needs_data
def test_annotate_corpus_logs_unreadable_annotations(tmp_path):
    out = tmp_path / "p4g"
    result = annotate_corpus(
        "p4g", DATA, "test", FakeBackend(), out, limit=1, progress=False
    )  # the default fake answers gibberish
    assert result.failed == result.prefixes and result.written == 0
    errors = _lines(out / "errors.jsonl")
    assert len(errors) == result.prefixes and errors[0]["missing"]
    assert not (out / "prior.jsonl").exists() or not _lines(out / "prior.jsonl")


def test_silver_cache_needs_a_run(tmp_path):
    with pytest.raises(FileNotFoundError, match="annotate"):
        SilverCache.load(tmp_path)


# -- the online mentalizer ---------------------------------------------------------------------


def test_llm_mentalizer_memoizes_and_serves_both_views(esconv):
    backend = FakeBackend(responder=obu_responder)
    mentalizer = LLMMentalizer(esconv, backend)
    assert isinstance(mentalizer, Student) and isinstance(mentalizer, Teacher)
    history = [("user", "I lost my job."), ("system", "That sounds hard.")]
    first = mentalizer.estimate(history)
    assert mentalizer.estimate(list(history)) == first
    assert len(backend.calls_log) == 1

    class User:
        def profile(self):
            return "anxiety about a job crisis"

    teacher = mentalizer.infer(history, User())
    assert teacher == first and len(backend.calls_log) == 2
    assert "anxiety about a job crisis" in backend.calls_log[1].messages[1]["content"]
    with pytest.raises(ValueError):
        LLMMentalizer(esconv)


# -- the command line --------------------------------------------------------------------------


@needs_data
def test_cli_annotate(tmp_path, monkeypatch, capsys):
    import dialogue_gym.backends as backends

    made = []

    def make_backend(spec, cache=None, **kwargs):
        made.append((spec, cache))
        return FakeBackend(responder=obu_responder)

    monkeypatch.setattr(backends, "make_backend", make_backend)
    out = tmp_path / "out"
    argv = ["annotate", "esconv", "--split", "valid", "--backend", "openai:some-model"]
    argv += ["--data", str(DATA), "--out", str(out), "--limit", "2", "--no-progress"]
    argv += ["--cache", str(tmp_path / "obu.sqlite")]
    assert cli.main(argv) == 0
    assert made == [("openai:some-model", str(tmp_path / "obu.sqlite"))]
    printed = capsys.readouterr().out
    assert "annotated" in printed and "silver.jsonl" in printed
    assert len(_lines(out / "prior.jsonl")) == 2
    assert cli.main(argv) == 0  # resumed
    assert "0 annotated" in capsys.readouterr().out


@needs_data
def test_cli_annotate_reports_unreadable_and_usage_errors(tmp_path, capsys):
    out = tmp_path / "fake"
    argv = ["annotate", "esconv", "--split", "valid", "--backend", "fake", "--data", str(DATA)]
    argv += ["--out", str(out), "--limit", "1", "--no-progress"]
    assert cli.main(argv) == 1
    assert "errors.jsonl" in capsys.readouterr().out
    assert cli.main(["annotate", "nosuchcorpus", "--backend", "fake"]) == 2
    assert "unknown corpus" in capsys.readouterr().err
    assert cli.main(["annotate", "esconv", "--backend", "fake", "--limit", "0"]) == 2
    assert annotate_module.ERRORS_FILE == "errors.jsonl"
