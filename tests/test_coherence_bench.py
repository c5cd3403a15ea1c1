"""The coherence and skill benchmarks: their counters can fire, and they run."""

from __future__ import annotations

import pytest
from conftest import load_benchmark

from dialogue_gym.cards.card import load_card
from dialogue_gym.users.persona import persona_bank


@pytest.fixture(scope="module")
def coherence():
    return load_benchmark("coherence")


def _record(replies: list[str], events: list[list[str]]) -> dict:
    transcript = []
    for reply in replies:
        transcript += [{"role": "system", "text": "Hi."}, {"role": "user", "text": reply}]
    return {"transcript": transcript, "events": events}


def test_counter_finds_each_kind_of_incoherence(coherence) -> None:
    card = load_card("ed")
    persona = next(p for p in persona_bank(card) if p.facts.get("situation"))
    other = next(v for v in card.personas.slots["situation"] if v != persona.facts["situation"])
    record = _record(
        ["Hello.", "Hello.", f"Well, {other}."],
        [["voiced:feeling_heard"], ["resolved:feeling_heard"], ["voiced:feeling_heard"]],
    )
    kinds = [kind for kind, _ in coherence.incoherences(record, persona, card)]
    assert sorted(kinds) == ["persona contradiction", "re-raised concern", "repeated reply"]
    clean = _record(["Hello.", f"Well, {persona.facts['situation']}."], [[], ["voiced:x"]])
    assert coherence.incoherences(clean, persona, card) == []


def test_coherence_benchmark_runs(coherence, capsys) -> None:
    status = coherence.main(["--envs", "P4G-hard", "--episodes", "1", "--encoder", "hashing"])
    out = capsys.readouterr().out
    assert "6 episodes:" in out and status in (0, 1)


def test_skill_validity_runs_every_arm(capsys) -> None:
    skill = load_benchmark("skill_validity")
    skill.main(["--envs", "CB-hard", "--episodes", "2", "--encoder", "hashing", "--wording", "dev"])
    out = capsys.readouterr().out
    assert "listener, card" in out and "listener, dev" in out and "ratio" in out
