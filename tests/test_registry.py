import gymnasium
import pytest

import dialogue_gym
from dialogue_gym.env.gym_views import gymnasium_ids
from dialogue_gym.env.registry import EnvSpec, RegistryError


def test_ids_and_latest_version_resolution():
    assert {"P4G-soft-v0", "P4G-hard-v0"} <= set(dialogue_gym.registry)
    assert dialogue_gym.spec("P4G-hard").id == "P4G-hard-v0"
    dialogue_gym.register(
        "P4G-hard-v7", "dialogue_gym.env.dialogue_env:DialogueEnv", card="p4g", user="hard"
    )
    try:
        assert dialogue_gym.spec("P4G-hard").id == "P4G-hard-v7"
    finally:
        del dialogue_gym.registry["P4G-hard-v7"]
        for gym_id in gymnasium_ids("P4G-hard-v7"):  # its Gymnasium views (gym_views)
            del gymnasium.registry[gym_id]


def test_unknown_id_names_closest():
    with pytest.raises(RegistryError, match="P4G-hard-v0"):
        dialogue_gym.make("P4G-hrad")
    with pytest.raises(TypeError):
        dialogue_gym.spec(3)


def test_duplicate_registration_rejected():
    with pytest.raises(RegistryError, match="already registered"):
        dialogue_gym.register("P4G-hard-v0", "dialogue_gym.env.dialogue_env:DialogueEnv")


def test_spec_is_frozen_and_overrides_merge():
    spec = dialogue_gym.spec("P4G-soft-v0")
    with pytest.raises(AttributeError):
        spec.id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        spec.kwargs["user"] = "hard"  # type: ignore[index]
    resolved = spec.resolved(encoder="hashing")
    assert resolved["user"] == "soft" and resolved["encoder"] == "hashing"
    assert spec.config_hash(encoder="hashing") != spec.config_hash()


def test_bad_id_format():
    with pytest.raises(ValueError, match="Task-user-vN"):
        EnvSpec(id="no_version", entry_point="x:y")


def test_make_passes_overrides_and_rejects_unknown():
    env = dialogue_gym.make("P4G-hard", encoder="hashing", max_exchanges=3)
    assert env.max_exchanges == 3 and env.spec.id == "P4G-hard-v0"
    with pytest.raises(TypeError, match="P4G-hard-v0"):
        dialogue_gym.make("P4G-hard", colour="blue")


def test_pprint_registry(capsys):
    dialogue_gym.pprint_registry()
    out = capsys.readouterr().out
    assert "P4G-soft-v0" in out and "P4G-hard-v0" in out
