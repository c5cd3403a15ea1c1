"""MASP: mentalizer losses by hand, every phase with tiny budgets, resume, reload, bad input."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import dialogue_gym
from dialogue_gym.cards.card import load_card
from dialogue_gym.env.dialogue_env import DialogueEnv
from dialogue_gym.env.wrappers.concern_actions import ListeningMoves
from dialogue_gym.mind import BDI, LatentSpace, make_encoder
from dialogue_gym_agents.common.checkpoint import (
    CheckpointError,
    CheckpointMismatchError,
    CheckpointNotFoundError,
    CorruptCheckpointError,
    load_checkpoint,
)
from dialogue_gym_agents.common.tracking import read_scalars
from dialogue_gym_agents.masp.agent import PolicyUser, latest_checkpoint, load_models, masp
from dialogue_gym_agents.masp.config import MASPConfig
from dialogue_gym_agents.masp.mentalizers import (
    BDIRenderer,
    LearnedStudent,
    LearnedTeacher,
    student_loss,
    teacher_loss,
)
from dialogue_gym_agents.masp.selfplay import SelfPlay
from dialogue_gym_agents.masp.silver import SilverTrajectory, read_jsonl
from dialogue_gym_agents.masp.strategy_policy import parse_rendered_bdi
from dialogue_gym_agents.masp.train import main, train_masp
from dialogue_gym_agents.scaffold import CloseScaffold


def tiny(out: Path, **overrides) -> MASPConfig:
    """A run that takes seconds: hashing encoder, few episodes, tiny networks."""
    settings = {
        "task": "P4G",
        "out": out,
        "encoder": "hashing",
        "progress": False,
        "tensorboard": False,
        "silver_episodes": 16,
        "mentalizer_epochs": 2,
        "mentalizer_hidden": 32,
        "hidden_sizes": (16,),
        "bc_epochs": 2,
        "system_bc": "scripted",
        "groups": 2,
        "group_size": 2,
        "update_epochs": 1,
        "iterations": 2,
    }
    return MASPConfig(**{**settings, **overrides})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("masp") / "run"
    train_masp(tiny(out))
    return out


@pytest.fixture(scope="module")
def card():
    return load_card("p4g")


# -- the losses and rendering, by hand -------------------------------------------------------------


def test_teacher_loss_by_hand() -> None:
    a = torch.tensor([0.5, 1.0])
    pred = torch.tensor([[1.0, 0.0], [1.0, 2.0], [0.0, 1.0]], requires_grad=True)
    target = torch.tensor([[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    pairs = torch.tensor([[0, 1], [1, 2]])
    # Regression: ‖(1,0)‖² = 0.5, ‖(0,1)‖² = 1, ‖(0,1)‖² = 1 → mean 2.5/3.
    # Dynamics: ΔF = (0,2), (−1,−1); Δz̄ = (1,1), (−1,−1) → diffs (−1,1), (0,0) → 1.5, 0 → 0.75.
    loss = teacher_loss(pred, target, pairs, a, lambda_reg=2.0, lambda_dyn=0.5)
    assert loss.item() == pytest.approx(2.0 * 2.5 / 3 + 0.5 * 0.75)
    assert teacher_loss(pred, target, pairs[:0], a).item() == pytest.approx(2.5 / 3)
    loss.backward()
    assert pred.grad is not None and pred.grad.abs().sum() > 0


def test_student_loss_stops_the_teachers_gradient() -> None:
    a = torch.tensor([0.25, 1.0])
    student = torch.tensor([[1.0, 1.0], [0.0, 0.0]], requires_grad=True)
    teacher = torch.tensor([[1.0, 0.0], [2.0, 0.0]], requires_grad=True)
    loss = student_loss(student, teacher, a)
    assert loss.item() == pytest.approx((1.0 + 0.25 * 4.0) / 2)  # ‖(0,1)‖²_A, ‖(−2,0)‖²_A
    loss.backward()
    assert teacher.grad is None  # sg(F): only the student learns
    assert student.grad.flatten().tolist() == pytest.approx([0.0, 1.0, -0.5, 0.0])


def test_renderer_finds_records_and_keeps_the_estimates_scalars() -> None:
    latent = LatentSpace(make_encoder("hashing"))
    records = [
        BDI("I doubt charities.", "I want to keep my money.", "I will refuse.", 0.1, 0.2, -0.5),
        BDI("Charities help kids.", "I want to help.", "I will donate now.", 0.9, 0.8, 0.5),
    ]
    renderer = BDIRenderer(records, latent)
    for record in records:
        assert renderer.render(latent.encode(record)) == record
        assert renderer.render_fields(latent.encode(record)) == record
    z = latent.encode(records[1]).copy()
    z[-3:] = [1.7, -0.2, 0.25]  # out-of-range scalars are clipped
    out = renderer.render(z)
    assert out.intention == "I will donate now." and (out.receptivity, out.confidence) == (1.0, 0.0)
    assert out.valence == 0.25


def test_rendered_state_reads_back() -> None:
    state = BDI("Belief text.", "Desire text.", "Intention text.", 0.25, 0.5, -0.75)
    assert parse_rendered_bdi(state.render()) == state
    with pytest.raises(ValueError, match="rendered BDI"):
        parse_rendered_bdi("no state here")


def test_silver_trajectory_round_trip_and_checks() -> None:
    state = BDI("b", "d", "i", 0.5, 0.5, 0.0)
    trajectory = SilverTrajectory(
        "k", "profile", (("system", "hi"), ("user", "hello")), (0, 2), (state, state), ("hold",)
    )
    assert SilverTrajectory.from_json(trajectory.to_json()) == trajectory
    assert trajectory.histories() == [(), (("system", "hi"), ("user", "hello"))]
    with pytest.raises(ValueError, match="one state per prefix"):
        SilverTrajectory("k", "", (), (0, 1), (state,))


# -- every phase, tiny -----------------------------------------------------------------------------


def test_every_phase_leaves_a_checkpoint_and_logs(run_dir: Path, card) -> None:
    names = ["phase0-mentalizers", "phase1-warmstart", "iter-0001", "iter-0002"]
    for name in names:
        ckpt = load_checkpoint(run_dir / name, kind="masp", card=card)
        assert ckpt.info["phase_config"]["task"] == "P4G"
    phase0 = load_checkpoint(run_dir / names[0])
    errors = phase0.info["mentalizers"]
    assert errors["prefixes"] > 0 and math.isfinite(errors["teacher_error"])
    silver = [SilverTrajectory.from_json(r) for r in read_jsonl(phase0.file("silver.jsonl"))]
    assert {t.split for t in silver} == {"train", "heldout"}
    assert {t.user for t in silver} == {"soft", "hard"}
    assert all(len(t.user_acts) == len(t.states) - 1 for t in silver)
    last = load_checkpoint(run_dir / names[-1])
    assert [p["iteration"] for p in last.info["curve"]] == [1.0, 2.0]
    tags = {tag for _, tag, _ in read_scalars(run_dir)}
    for tag in ("mentalizers/student_error", "selfplay/system_sr", "selfplay/user_reward"):
        assert tag in tags
    assert [step for step, _, _ in read_scalars(run_dir, "selfplay/system_sr")] == [1, 2]
    models = load_models(last, card)
    assert models.system is not None and models.user is not None
    shift = sum(
        float((p - q).detach().abs().sum())
        for p, q in zip(
            models.system.net.parameters(), models.system.reference.parameters(), strict=True
        )
    )
    assert shift > 0  # GRPO moved the system away from its frozen warm start


def test_rerun_resumes_after_the_last_iteration_identically(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    for name in ("phase0-mentalizers", "phase1-warmstart", "iter-0001"):
        shutil.copytree(run_dir / name, out / name)
    assert train_masp(tiny(out)) == out / "iter-0002"
    for file in ("system.pt", "user.pt", "student.pt"):
        ours = torch.load(out / "iter-0002" / file, weights_only=True)
        theirs = torch.load(run_dir / "iter-0002" / file, weights_only=True)
        ours, theirs = ours.get("net", ours), theirs.get("net", theirs)
        assert all(torch.equal(ours[k], theirs[k]) for k in ours), file
    # Complete: a rerun trains nothing; another --iterations continues.
    assert train_masp(tiny(out)) == out / "iter-0002"
    with pytest.raises(CheckpointMismatchError, match="clip"):
        train_masp(tiny(out, clip=0.3))


def test_play_pays_each_exchange_to_the_learner(run_dir: Path, card) -> None:
    config = tiny(run_dir)
    ckpt = load_checkpoint(run_dir / "iter-0002")
    silver = [
        SilverTrajectory.from_json(r)
        for r in read_jsonl(run_dir / "phase0-mentalizers" / "silver.jsonl")
    ]
    selfplay = SelfPlay(card, load_models(ckpt, card), silver, config)
    generator = torch.Generator().manual_seed(0)
    for learner, key in (("system", "sum_reward_system"), ("user", "sum_reward_user")):
        rollout = selfplay.rollout(9, learner, generator)
        assert len(rollout.records) == 4
        assert sum(rollout.rewards) == pytest.approx(sum(r[key] for r in rollout.records))
        for group in set(rollout.groups):
            members = [i for i, g in enumerate(rollout.groups) if g == group]
            assert abs(float(np.mean(rollout.advantages[members]))) < 1e-6


def test_a_run_over_listening_moves_clones_scripted_moves_and_plays_them(
    tmp_path: Path, card
) -> None:
    out = tmp_path / "concern"
    train_masp(tiny(out, view="concern", iterations=3, keep_every=2))
    # Every iteration but each second one and the last is deleted once its successor is written.
    assert sorted(p.name for p in out.glob("iter-*")) == ["iter-0002", "iter-0003"]
    ckpt = load_checkpoint(out / "iter-0003", kind="masp", card=card)
    moves = ListeningMoves(card).names
    models = load_models(ckpt, card)
    assert models.system is not None and models.system.n_actions == len(moves)
    assert models.system_features.action_names == moves
    assert any(name.startswith("exchanges_left") for name in models.system_features.names)
    bc = load_checkpoint(out / "phase1-warmstart").info["bc"]["system"]
    assert bc["source"] == "scripted" and bc["examples"] > 0
    agent = masp(card=card, checkpoint=out)
    transcripts = _transcripts(agent)
    assert transcripts == _transcripts(masp(card=card, checkpoint=out))
    said = {text for transcript in transcripts for role, text in transcript if role == "system"}
    wordings = {w for name in moves for w in ListeningMoves(card).wordings(name)}
    # Every system turn is a move's wording or the user's words said back (reflect).
    assert said and all(
        text in wordings or text.startswith("It sounds like ") or text == "I hear you."
        for text in said
    ), said - wordings
    assert agent.last_strategy in moves


def test_listening_moves_need_the_scripted_warm_start(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="system-bc scripted"):
        tiny(tmp_path, view="concern", system_bc="corpus")
    with pytest.raises(ValueError, match="policy strategy"):
        tiny(tmp_path, view="concern", policy="lm")
    with pytest.raises(ValueError, match="keep-every"):
        tiny(tmp_path, keep_every=0)
    with pytest.raises(ValueError, match="user-beta"):
        tiny(tmp_path, user_beta=-0.1)


# -- the agent -------------------------------------------------------------------------------------


def _transcripts(agent, seeds=(0, 1)) -> list[list[tuple[str, str]]]:
    env = dialogue_gym.make("P4G-hard", encoder="hashing")
    out = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        agent.reset(seed=seed)
        while env.agents:
            obs, *_ = env.step({"system": agent.act(obs["system"])})
        out.append(list(env.history))
    return out


def test_reloaded_checkpoints_act_identically(run_dir: Path, card) -> None:
    assert latest_checkpoint(run_dir) == run_dir / "iter-0002"
    first = _transcripts(masp(card=card, checkpoint=run_dir))
    assert first == _transcripts(masp(card=card, checkpoint=run_dir / "iter-0002"))
    sampled = masp(card=card, checkpoint=run_dir, deterministic=False)
    assert _transcripts(sampled) == _transcripts(
        masp(card=card, checkpoint=run_dir, deterministic=False)
    )
    warm = masp(card=card, checkpoint=run_dir / "phase1-warmstart", emit_estimate=True)
    obs, _ = dialogue_gym.make("P4G-hard", encoder="hashing").reset(seed=0)
    action = warm.act(obs["system"])
    assert set(action) == {"utterance", "estimate"} and action["utterance"]


def test_evaluate_resolves_the_masp_agent(run_dir: Path) -> None:
    result = dialogue_gym.evaluate(
        f"masp:{run_dir}", "P4G-hard", episodes=2, env_kwargs={"encoder": "hashing"}, progress=False
    )
    assert len(result.records) == 2 and not any(r["errored"] for r in result.records)


# -- bad input -------------------------------------------------------------------------------------


def test_bad_checkpoints_fail_clearly(run_dir: Path, tmp_path: Path, card) -> None:
    with pytest.raises(CheckpointNotFoundError, match="does not exist"):
        masp(card=card, checkpoint=tmp_path / "nothing")
    with pytest.raises(CheckpointNotFoundError, match="needed"):
        masp(card=card)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointNotFoundError, match="no MASP policy"):
        masp(card=card, checkpoint=tmp_path / "empty")
    with pytest.raises(CheckpointError, match="only the phase-0"):
        masp(card=card, checkpoint=run_dir / "phase0-mentalizers")
    with pytest.raises(CheckpointMismatchError, match="P4G"):
        masp(card=load_card("esconv"), checkpoint=run_dir)
    broken = tmp_path / "broken"
    shutil.copytree(run_dir / "iter-0002", broken)
    (broken / "system.pt").write_bytes(b"not a state dict")
    with pytest.raises(CorruptCheckpointError, match=r"system\.pt"):
        masp(card=card, checkpoint=broken)


def test_bad_options_and_output_folders(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "--group-size" in capsys.readouterr().out
    with pytest.raises(ValueError, match="group-size"):
        tiny(tmp_path, group_size=0)
    with pytest.raises(ValueError, match="soft and/or hard"):
        tiny(tmp_path, silver_users=("medium",))
    with pytest.raises(ValueError, match="user model"):
        train_masp(tiny(tmp_path / "cb", task="CB"))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="does not write"):
        train_masp(tiny(foreign))
    assert (foreign / "notes.txt").read_text() == "mine"


def test_the_trained_user_policy_plays_a_user(run_dir: Path, card) -> None:
    def episode() -> list[tuple[str, str]]:
        env = DialogueEnv.from_options(card, user=PolicyUser(card, run_dir), encoder="hashing")
        env.reset(seed=5)
        while env.agents:
            _, _, _, _, infos = env.step({"system": "Would you donate to Save the Children?"})
            assert "external_reply" in infos["system"]["user_events"]  # judged as said
        return list(env.history)

    transcript = episode()
    assert transcript == episode() and all(text for _, text in transcript)
    with pytest.raises(CheckpointError, match="no user policy"):
        PolicyUser(card, run_dir / "phase0-mentalizers")


def test_close_scaffold_injects_requests_when_due(card) -> None:
    class Talker:
        def act(self, observation):
            return "Save the Children has helped kids for a century."

    scaffold = CloseScaffold(card, Talker())
    scaffold.reset(seed=0)

    def obs(exchange: int, reply: str | None) -> dict:
        history = ({"speaker": 0, "text": "hi"}, {"speaker": 1, "text": reply}) if reply else ()
        return {"history": history, "exchange": exchange}

    asks = {t for s in card.strategies if s.asks for t in s.templates}
    assert scaffold.act(obs(0, None)) not in asks
    assert scaffold.act(obs(1, "Okay, I'm warming up to the idea.")) in asks  # sounds positive
    assert scaffold.act(obs(2, "I'm thinking about it, seriously.")) not in asks  # not twice
    assert scaffold.act(obs(7, "Hm, alright.")) in asks  # the last exchange
    assert scaffold.episode_info() == {"closes_injected": 2}
    with pytest.raises(ValueError, match="request strategy"):
        CloseScaffold(load_card("ed"), Talker())


def test_learned_mentalizers_serve_the_env(run_dir: Path, card) -> None:
    models = load_models(load_checkpoint(run_dir / "iter-0002"), card)
    env = DialogueEnv.from_options(
        card,
        encoder="hashing",
        student=LearnedStudent(models.mentalizers),
        teacher=LearnedTeacher(models.mentalizers),
    )
    obs, _ = env.reset(seed=1)
    assert obs["system"]["estimate"].startswith("Belief: ")  # rendered over the prior
    _, _, _, _, infos = env.step({"system": "Hi! Have you heard of Save the Children?"})
    assert infos["system"]["inference_error"] >= 0.0  # the student's estimate entered r_S
    prior_texts = {r.belief for r in models.mentalizers.prior}
    assert parse_rendered_bdi(obs["system"]["estimate"]).belief in prior_texts
