"""Real episodes: personas and opening contexts drawn from the corpora's held-out splits."""

import os
from pathlib import Path

import pytest

import dialogue_gym
from dialogue_gym.data import DataNotFoundError

DATA = Path(
    os.environ.get("DIALOGUE_GYM_DATA", Path(__file__).resolve().parents[2] / "shared" / "datasets")
)
pytestmark = pytest.mark.skipif(not (DATA / "p4g").exists(), reason=f"no corpora at {DATA}")


def test_p4g_personas_come_from_real_profiles():
    env = dialogue_gym.make("P4G-hard", encoder="hashing", data=DATA / "p4g")
    personas = env.user.personas
    assert len(personas) == 112  # the documented held-out test split of the full data
    assert all(p.id.startswith("p4g:") for p in personas)
    assert all(1 <= len(p.concerns) <= 3 for p in personas)
    # Profiles differ, so the internal layers differ.
    assert len({p.concerns for p in personas}) > 50
    assert len({p.initial_willingness for p in personas}) > 30


def test_real_opening_context_and_determinism():
    kwargs = {"encoder": "hashing", "data": DATA / "p4g", "h0_turns": 2}
    a, b = dialogue_gym.make("P4G-hard", **kwargs), dialogue_gym.make("P4G-hard", **kwargs)
    obs_a, _ = a.reset(seed=3)
    obs_b, _ = b.reset(seed=3)
    history = obs_a["system"]["history"]
    assert [h["speaker"] for h in history] == [0, 1]
    assert obs_a == obs_b and a.user.persona == b.user.persona
    out_a = a.step({"system": "Have you heard of Save the Children?"})
    out_b = b.step({"system": "Have you heard of Save the Children?"})
    assert repr(out_a) == repr(out_b)


def test_esconv_situations_become_facts():
    if "ESConv-hard-v0" not in dialogue_gym.registry:
        pytest.skip("the ESConv card is not shipped")
    env = dialogue_gym.make("ESConv-hard", encoder="hashing", data=DATA / "esconv")
    situations = {p.facts.get("situation") for p in env.user.personas}
    assert len(situations) > 100


def test_data_true_reads_the_environment_variable(monkeypatch):
    monkeypatch.setenv("DIALOGUE_GYM_DATA", str(DATA))
    env = dialogue_gym.make("P4G-hard", encoder="hashing", data=True)
    assert len(env.user.personas) == 112
    monkeypatch.setenv("DIALOGUE_GYM_DATA", "/nonexistent/corpora")
    with pytest.raises(DataNotFoundError):
        dialogue_gym.make("P4G-hard", encoder="hashing", data=True)


def test_tasks_without_a_corpus_say_so(tmp_path):
    with pytest.raises(DataNotFoundError):
        dialogue_gym.make("P4G-hard", encoder="hashing", data=tmp_path)


def test_cb_listings_come_from_the_corpus():
    if "CB-hard-v0" not in dialogue_gym.registry:
        pytest.skip("the CB card is not shipped")
    env = dialogue_gym.make("CB-hard", encoder="hashing", data=DATA / "craigslist_bargain")
    listings = env.user.listings
    assert len(listings) > 700 and all(item.id.startswith("cb:") for item in listings)
    assert all(item.buyer_target < item.price for item in listings)
    env.reset(seed=0)
    env.step({"system": "Hi! Is it still available?"})
    assert env.user.privileged()["listing_price"] == env.user.listing.price
