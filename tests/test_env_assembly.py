"""The env is assembled from built parts, not configured (issue 36 item 2).

``DialogueEnv`` receives eight built parts and changes nothing outside itself; ``make`` and
``DialogueEnv.from_options`` assemble the parts from the keyword options every spec and caller
used before; ``DialogueEnv(...)`` with those keyword options still works, with a
``DeprecationWarning``.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import pytest

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.env.components import assemble_env
from dialogue_gym.env.dialogue_env import DialogueEnv
from dialogue_gym.env.parts import EnvOptions, EnvParts, Judges, LLMLink, Mind, Seats
from dialogue_gym.judges import default_success_judge
from dialogue_gym.judges.embedded import StateRationalityJudge
from dialogue_gym.mentalizers import OracleTeacher
from dialogue_gym.mind.encoders import make_encoder
from dialogue_gym.mind.latent import LatentSpace, RewardWeights
from dialogue_gym.mind.threads import THREADS_ENV
from dialogue_gym.users import build_user
from dialogue_gym.users.cognitive import CognitiveUser

SAYS = (
    "Hi! Have you heard of Save the Children?",
    "Even a dollar buys a child a meal; you can see where every cent goes.",
    "Would you donate $1 today?",
)


def _transcript(env: Any, seed: int = 3) -> list[Any]:
    env.reset(seed=seed)
    out: list[Any] = []
    for text in SAYS * 3:
        if not env.agents:
            break
        _, rewards, _, _, infos = env.step({"system": text})
        out.append((round(rewards["system"], 9), infos["system"]["success"], infos["system"]["q"]))
    return [*out, list(env.history)]


def _parts(card: str = "p4g", **kwargs: Any) -> EnvParts:
    """Parts built by hand, as a caller holding ready components would."""
    task = load_card(card)
    encoder = make_encoder("hashing")
    return EnvParts(
        card=task,
        user=build_user(task, encoder, kwargs.pop("preset", "hard")),
        judges=Judges(default_success_judge(task), StateRationalityJudge(task)),
        mind=Mind(LatentSpace(encoder)),
        **kwargs,
    )


def test_the_constructor_takes_at_most_eight_parts() -> None:
    params = list(inspect.signature(DialogueEnv.__init__).parameters)[1:]
    assert len(params) <= 8, params
    assert params == ["card", "user", "judges", "mind", "reward", "seats", "options", "llm"]
    assert list(inspect.signature(DialogueEnv).parameters) == params  # not the metaclass's


def test_an_env_built_from_parts_plays_like_make() -> None:
    made = dialogue_gym.make("P4G-hard", encoder="hashing")
    built = DialogueEnv(**_parts(options=EnvOptions(env_id="P4G-hard-v0")).as_kwargs())
    assert _transcript(built) == _transcript(made)
    assert built.env_id == made.env_id == "P4G-hard-v0"


def test_make_assembles_the_same_components_as_before() -> None:
    env = dialogue_gym.make(
        "P4G-soft",
        encoder="hashing",
        max_exchanges=5,
        privileged=True,
        weights={"w_prog": 2.0, "w_inf": 0.1, "w_rat": 0.3, "gamma": 0.9},
        alphas=(0.5, 1.0, 2.0),
        render_mode="ansi",
        max_utterance_chars=300,
    )
    card = load_card("p4g")
    assert env.card == card and env.env_id == "P4G-soft-v0"
    assert env.max_exchanges == 5 and env.privileged and env.render_mode == "ansi"
    assert env.max_utterance_chars == 300 and env.action_space("system").max_length == 300
    assert env.weights == RewardWeights(2.0, 0.1, 0.3, 0.9)
    assert env.encoder is make_encoder("hashing") and env.latent.encoder is env.encoder
    assert env.latent._scale.tolist() == pytest.approx([0.5**0.5, 1.0, 2.0**0.5])
    assert type(env.user) is CognitiveUser and env.user.preset.name == "soft"
    assert type(env.success_judge) is type(default_success_judge(card))
    assert type(env.rationality_judge) is StateRationalityJudge
    assert type(env.teacher) is OracleTeacher and env.student is None
    assert env.external == ("system",) and env.system_policy is None
    assert env.backend is None and not env._owns_backend and env._openings == {}
    assert env.card.max_exchanges == 8 and dialogue_gym.make("P4G-soft").max_exchanges == 8


def test_make_assembles_llm_components_and_owns_only_what_it_built() -> None:
    from dialogue_gym.backends import make_backend
    from dialogue_gym.judges.llm import LLMRationalityJudge, LLMSuccessJudge

    env = dialogue_gym.make("P4G-hard", encoder="hashing", judges="llm", backend="fake")
    assert isinstance(env.success_judge, LLMSuccessJudge)
    assert isinstance(env.rationality_judge, LLMRationalityJudge)
    assert env.backend is not None and env._owns_backend
    env.close()
    backend = make_backend("fake")
    env = dialogue_gym.make(
        "P4G-hard", encoder="hashing", judges="llm", backend=backend, success_judge=None
    )
    assert env.backend is backend and not env._owns_backend
    env = dialogue_gym.make(
        "P4G-hard",
        encoder="hashing",
        external=("system", "user"),
        success_judge=StateRationalityJudge,  # a class: called with the card
    )
    assert env.external == ("system", "user")
    assert type(env.success_judge) is StateRationalityJudge


@pytest.fixture
def torch_threads(monkeypatch: pytest.MonkeyPatch):
    torch = pytest.importorskip("torch")
    for name in (THREADS_ENV, "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    before = torch.get_num_threads()
    yield torch
    torch.set_num_threads(before)


def test_building_an_env_leaves_the_thread_setting_alone(torch_threads) -> None:
    parts = assemble_env("p4g", encoder="hashing", threads=3)  # the assembly step applies it
    assert torch_threads.get_num_threads() == 3
    torch_threads.set_num_threads(2)
    env = DialogueEnv(**parts.as_kwargs())
    assert torch_threads.get_num_threads() == 2  # the constructor: no process-wide effect
    env.reset(seed=0)
    env.step({"system": SAYS[0]})
    assert torch_threads.get_num_threads() == 2
    dialogue_gym.make("P4G-hard", encoder="hashing")  # make applies the default: one
    assert torch_threads.get_num_threads() == 1
    dialogue_gym.make("P4G-hard", encoder="hashing", threads=2)
    assert torch_threads.get_num_threads() == 2
    DialogueEnv.from_options("p4g", encoder="hashing", threads=3)
    assert torch_threads.get_num_threads() == 3


def test_the_old_keyword_constructor_still_works_with_a_deprecation_warning() -> None:
    expected = _transcript(DialogueEnv.from_options("p4g", user="soft", encoder="hashing"))
    with pytest.warns(DeprecationWarning, match=r"DialogueEnv\.from_options"):
        env = DialogueEnv(card="p4g", user="soft", encoder="hashing")
    assert _transcript(env) == expected
    with pytest.warns(DeprecationWarning, match="built parts"):
        positional = DialogueEnv("p4g", "soft", "hashing", ("system",))  # the old order
    assert _transcript(positional) == expected
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="external"):
        DialogueEnv("p4g", encoder="hashing", external=())  # old checks, old messages


def test_the_non_deprecated_ways_warn_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        dialogue_gym.make("P4G-hard", encoder="hashing")
        DialogueEnv.from_options("p4g", encoder="hashing", max_exchanges=3)
        DialogueEnv(**_parts().as_kwargs())
        parts = _parts(seats=Seats(), options=EnvOptions(max_exchanges=4))
        env = DialogueEnv(
            parts.card, parts.user, parts.judges, parts.mind, RewardWeights(), parts.seats
        )
        assert env.max_exchanges == 8  # no options given: the card's budget
        env = DialogueEnv(**parts.as_kwargs())
        assert env.max_exchanges == 4


def test_a_subclass_entry_point_is_assembled_too() -> None:
    class Mine(DialogueEnv):
        pass

    spec = dialogue_gym.spec("P4G-hard")
    from dialogue_gym.env.registry import EnvSpec, make, registry

    registry["Mine-hard-v0"] = EnvSpec("Mine-hard-v0", Mine, dict(spec.kwargs))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            env = make("Mine-hard", encoder="hashing")
        assert type(env) is Mine and env.env_id == "Mine-hard-v0"
        assert type(Mine.from_options("p4g", encoder="hashing")) is Mine
    finally:
        del registry["Mine-hard-v0"]


@pytest.mark.parametrize(
    ("make_part", "message"),
    [
        (lambda: Seats(external=()), "non-empty subset"),
        (lambda: Seats(external=("judge",)), "non-empty subset"),
        (lambda: Seats(external=("user",)), "system_policy"),
        (lambda: EnvOptions(render_mode="rgb_array"), "render_mode"),
        (lambda: EnvOptions(max_utterance_chars=0), "max_utterance_chars"),
        (lambda: EnvOptions(max_exchanges=0), "max_exchanges"),
        (lambda: EnvOptions(max_exchanges=True), "max_exchanges"),  # type: ignore[arg-type]
    ],
)
def test_each_part_checks_its_own_values(make_part: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_part()


def test_parts_are_typed_records() -> None:
    parts = _parts(llm=None)
    assert parts.mind.encoder is parts.mind.latent.encoder
    assert isinstance(parts.mind.teacher, OracleTeacher) and parts.mind.student is None
    assert Seats(["system", "user"]).external == ("system", "user")  # type: ignore[arg-type]
    options = EnvOptions(openings={"p1": (("system", "hi"),)})
    with pytest.raises(TypeError):
        options.openings["p2"] = ()  # type: ignore[index]
    link = LLMLink(backend=object())  # type: ignore[arg-type]
    assert not link.owned
    assert set(parts.as_kwargs()) == set(inspect.signature(DialogueEnv.__init__).parameters) - {
        "self"
    }


def test_an_explicit_thread_count_survives_loading_the_encoder(
    torch_threads, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dialogue_gym.env import components as env_components
    from dialogue_gym.mind.threads import apply_threads

    def loading(name: Any) -> Any:  # what loading MiniLM does: apply the default (one)
        apply_threads()
        return make_encoder("hashing")

    monkeypatch.setattr(env_components, "make_encoder", loading)
    assemble_env("p4g", encoder="minilm", threads=2)
    assert torch_threads.get_num_threads() == 2
    assemble_env("p4g", encoder="minilm")
    assert torch_threads.get_num_threads() == 1
