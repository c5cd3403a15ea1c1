"""``dialogue-gym train masp``: MASP (Algorithm 1) with strategy-level or LoRA causal-LM policies.

Phases (each one's checkpoint is published atomically in the run folder ``--out``):

0. **Mentalization** (``phase0-mentalizers``): a silver BDI cache — episodes in the embedded
   world (``CognitiveUser`` oracle states after every prefix; soft and hard users; random and
   scripted systems, plus a planner with ``--silver-planner``), and with ``--silver`` the LLM
   annotator's cache of a corpus (``dialogue-gym annotate``) — split by persona (dialogue) into
   train and held-out; the BDI prior (the initial states of the train split); the teacher
   ``F(h, p_u, g)`` and the student ``M(h)`` trained with the paper's losses
   (:mod:`dialogue_gym_agents.mentalization`). Their errors on held-out prefixes are printed
   and logged.
1. **Warm starts** (``phase1-warmstart``): the system policy cloned from the corpus's
   strategy-annotated persuader turns (the planner's data and label mapping; ``--system-bc
   scripted``: the task's scripted agent in the phase-0 episodes, each of its utterances
   labelled with the nearest strategy template — for tasks without a corpus) and the user
   policy cloned from the simulator's response acts; both are frozen as KL references.
2. **Alternating self-play** (``iter-0001``, ...): per outer iteration, roll out groups of
   episodes (same episode seed per group) with the user policy frozen and update the system
   with GRPO on ``r_S = w_prog·Δs − w_inf·‖ẑ − z‖²_A`` (it hands the env its student
   estimate); roll out against the updated system and update the user on
   ``r_U = −w_prog·Δs + w_rat·q`` through the env's external user seat (the user's stated
   stance is its decision; the simulator's stance is the rational reference the rationality
   judge compares it with); refresh the student on the self-play prefixes with teacher
   targets mixed with real silver prefixes. The reward side (teacher, progress, rationality)
   is frozen and stop-gradient.

The learning dynamics (rollout SR, RCSR and mean reward per iteration for the system and the
user updates, the paper's Table 6) go to ``scalars.csv`` and TensorBoard and are printed at the
end. **Resuming**: rerunning the same command reuses every phase checkpoint whose settings are
unchanged and continues after the last complete iteration (each iteration is seeded by its
index and carries the optimizer states, so a resumed run equals an uninterrupted one); a larger
``--iterations`` continues training. Changed settings are refused unless ``--overwrite``.

**Two parameterizations, one trainer** (``--policy``). ``strategy`` (default): small torch
networks choosing the system's strategy and the user's response act, as above. ``lm``: LoRA
causal LMs in both seats (:mod:`dialogue_gym_agents.lm.masp_lm`) — phase 0 is the same,
phase 1 loads the ``sft-lora`` checkpoints ``--system-init`` / ``--user-init`` (or fresh adapters
on ``--model``) as warm starts and frozen references, and phase 2 runs the same
:class:`SelfPlay` loop and :func:`~dialogue_gym_agents.training.selfplay.grpo_update` on
token-level log-probs, with the B.5 prompt conditioning and rollouts generated locally or on a
vLLM server (``--rollout-backend``); the adapters are saved in every checkpoint.

Example::

    dialogue-gym train masp --task P4G --out runs/masp-p4g --iterations 20
    dialogue-gym eval P4G-hard --agent masp:runs/masp-p4g
    dialogue-gym train masp --task P4G --policy lm --system-init SYS --user-init USR --out OUT
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F

from dialogue_gym import metrics
from dialogue_gym.cards import TaskCard, load_card
from dialogue_gym.env import CORPORA, DialogueEnv
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym.mind.latent import LatentSpace, RewardWeights
from dialogue_gym.users.cognitive import USER_ACTS, CognitiveUser
from dialogue_gym.users.persona import Persona, persona_bank
from dialogue_gym_agents.baselines import RandomAgent
from dialogue_gym_agents.dispatch import scripted
from dialogue_gym_agents.masp import (
    ITERATION_PREFIX,
    KIND,
    PHASE0_DIR,
    PHASE1_DIR,
    MASPModels,
    build_features,
    iteration_dir,
    load_models,
    save_models,
)
from dialogue_gym_agents.mentalization import (
    HistoryFeaturizer,
    LearnedStudent,
    LearnedTeacher,
    MentalizerNet,
    Mentalizers,
    PrefixData,
    SilverTrajectory,
    mentalizer_errors,
    read_jsonl,
    train_student,
    train_teacher,
    write_jsonl,
)
from dialogue_gym_agents.strategy_level import (
    GRPOPolicy,
    Seat,
    StrategyPolicy,
    StrategySystemSeat,
    StrategyUserSeat,
    SystemFeatures,
    UserFeatures,
)
from dialogue_gym_agents.training.checkpoint import (
    MANIFEST,
    Checkpoint,
    CheckpointError,
    CheckpointMismatchError,
    CheckpointWriter,
    load_checkpoint,
)
from dialogue_gym_agents.training.cli import run_trainer
from dialogue_gym_agents.training.config import TrainConfig, config_to_dict, option
from dialogue_gym_agents.training.corpora import (
    PLANNER_FORMATS,
    TRAIN_SPLITS,
    LabelMapper,
    corpus_of,
    load_training_dialogues,
)
from dialogue_gym_agents.training.seeding import (
    RunGenerators,
    derive_seed,
    generators,
    torch_threads,
)
from dialogue_gym_agents.training.selfplay import Rollout, grpo_update, play
from dialogue_gym_agents.training.tracking import SCALARS_FILE, TB_DIR, RunLogger, progress_bar

__all__ = [
    "MASPConfig",
    "SelfPlay",
    "behaviour_clone",
    "collect_silver",
    "main",
    "phase_config",
    "system_bc_examples",
    "train_masp",
    "user_bc_examples",
]

SILVER_FILE, OPTIM_FILE = "silver.jsonl", "optim.pt"
SERVED_DIR = "served-adapters"
"""Scratch folder of the adapter versions pushed to a vLLM rollout server (removed at the end)."""
P0, P1, P2 = {"phase": 0}, {"phase": 1}, {"phase": 2}
# Inherited settings that shape every phase; the others (out, logging) shape none.
_INHERITED = ("task", "seed", "encoder")


@dataclasses.dataclass
class MASPConfig(TrainConfig):
    """MASP: mentalizers, behaviour-cloned warm starts, alternating GRPO self-play."""

    # -- phase 0: mentalization
    silver_episodes: int = option(240, "embedded-world episodes of the silver cache", metadata=P0)
    silver_users: tuple[str, ...] = option(
        ("soft", "hard"), "user presets the silver episodes alternate over", metadata=P0
    )
    silver_planner: str | None = option(
        None, "a planner checkpoint to add to the silver episodes' system policies", metadata=P0
    )
    silver: str | None = option(
        None, "also an LLM-annotated corpus cache (dialogue-gym annotate --out DIR)", metadata=P0
    )
    heldout_fraction: float = option(
        0.2, "share of personas (corpus dialogues) held out for mentalizer metrics", metadata=P0
    )
    mentalizer_hidden: int = option(256, "hidden width of the teacher and student", metadata=P0)
    mentalizer_epochs: int = option(40, "epochs of teacher and of student training", metadata=P0)
    mentalizer_lr: float = option(1e-3, "Adam learning rate of the mentalizers", metadata=P0)
    mentalizer_batch: int = option(16, "teacher minibatch, in dialogues", metadata=P0)
    lambda_reg: float = option(1.0, "teacher regression weight λ_reg", metadata=P0)
    lambda_dyn: float = option(1.0, "teacher dynamics weight λ_dyn", metadata=P0)
    # -- phase 1: warm starts
    policy: Literal["strategy", "lm"] = option(
        "strategy",
        "policy parameterization: strategy-level networks (fast, CPU) or LoRA causal LMs "
        "(--model, --system-init, --user-init; the paper's setting)",
        metadata=P1,
    )
    hidden_sizes: tuple[int, ...] = option((64, 64), "hidden widths of both policies", metadata=P1)
    system_bc: Literal["corpus", "scripted"] = option(
        "corpus",
        "system warm start: the corpus's strategy labels, or the scripted agent's phase-0 turns "
        "labelled with their nearest strategy template (tasks without a corpus)",
        metadata=P1,
    )
    split: str | None = option(None, "corpus split for the system warm start", metadata=P1)
    format: str | None = option(None, "corpus format with strategy labels", metadata=P1)
    max_dialogues: int | None = option(None, "clone from at most this many dialogues", metadata=P1)
    user_bc_users: tuple[str, ...] = option(
        ("hard",), "simulator presets whose response acts the user clones", metadata=P1
    )
    bc_epochs: int = option(30, "behaviour-cloning epochs (each policy)", metadata=P1)
    bc_lr: float = option(1e-3, "Adam learning rate of behaviour cloning", metadata=P1)
    bc_batch_size: int = option(64, "behaviour-cloning minibatch size", metadata=P1)
    # -- phase 1 with --policy lm
    system_init: str | None = option(
        None,
        "--policy lm: sft-lora checkpoint of the system seat (warm start and KL reference; "
        "default: a fresh adapter on --model)",
        metadata=P1,
    )
    user_init: str | None = option(
        None,
        "--policy lm: sft-lora checkpoint of the user seat (default: a fresh adapter on --model)",
        metadata=P1,
    )
    model: str = option(
        "smollm2",
        "--policy lm: base model of fresh adapters (smollm2 or an HF folder)",
        metadata=P1,
    )
    lora_r: int = option(16, "--policy lm: rank of fresh adapters", metadata=P1)
    lora_alpha: float = option(32.0, "--policy lm: alpha of fresh adapters", metadata=P1)
    reference: Literal["copy", "base"] = option(
        "copy",
        "--policy lm: KL reference: copy (frozen warm-start adapter) or base (adapter off)",
        metadata=P1,
    )
    dtype: Literal["float32", "bfloat16", "float16"] = option(
        "float32", "--policy lm: weight dtype (bfloat16 on GPUs)", metadata=P1
    )
    # -- phase 2: self-play
    iterations: int = option(20, "outer self-play iterations K (a larger K continues a run)")
    opponent: Literal["policy", "simulator"] = option(
        "policy",
        "who plays the user in self-play: the trained user policy (MASP), or the simulator "
        "itself (no user updates: the train-against-simulator ablation)",
        metadata=P2,
    )
    selfplay_user: Literal["soft", "hard"] = option(
        "hard",
        "simulator preset behind the user seat (its mind dynamics and rational reference; the "
        "opponent itself with --opponent simulator)",
        metadata=P2,
    )
    update_user: bool = option(
        True, "update the user policy (off: it stays the warm start)", metadata=P2
    )
    reward_teacher: Literal["learned", "oracle"] = option(
        "learned",
        "the reward-side state: the frozen learned teacher, or the simulator's oracle state",
        metadata=P2,
    )
    groups: int = option(8, "episode groups per rollout (one episode seed each)", metadata=P2)
    group_size: int = option(4, "rollouts per group (GRPO's G)", metadata=P2)
    update_epochs: int = option(4, "GRPO epochs per rollout", metadata=P2)
    minibatch_size: int | None = option(
        None, "GRPO minibatch size in steps (default: 64; 8 with --policy lm)", metadata=P2
    )
    system_lr: float | None = option(
        None,
        "Adam learning rate of the system policy (default: 3e-4; 1e-5 with --policy lm)",
        metadata=P2,
    )
    user_lr: float | None = option(
        None,
        "Adam learning rate of the user policy (default: 3e-4; 1e-5 with --policy lm)",
        metadata=P2,
    )
    clip: float = option(0.2, "GRPO ratio clip ε", metadata=P2)
    beta: float = option(0.04, "KL coefficient β to the warm-start reference", metadata=P2)
    gamma: float = option(0.97, "return discount γ", metadata=P2)
    w_prog: float = option(1.0, "progress weight w_prog", metadata=P2)
    w_inf: float = option(0.25, "inference-error weight w_inf", metadata=P2)
    w_rat: float = option(0.5, "rationality weight w_rat", metadata=P2)
    max_grad_norm: float = option(1.0, "gradient-norm clip of the GRPO updates", metadata=P2)
    student_refresh_epochs: int = option(
        2, "student epochs per iteration on self-play + real prefixes (0: no refresh)", metadata=P2
    )
    real_fraction: float = option(
        0.5, "share of real (silver) prefixes in the student refresh mix", metadata=P2
    )
    student_lr: float = option(3e-4, "Adam learning rate of the student refresh", metadata=P2)
    threads: int | None = option(
        None,
        "torch CPU threads while training (default: 1 for strategy-level networks, where it is "
        "fastest; torch's own count with --policy lm); restored after",
    )
    # -- phase 2 with --policy lm
    temperature: float = option(0.75, "--policy lm: system rollout temperature", metadata=P2)
    user_temperature: float = option(
        0.9, "--policy lm: user rollout temperature (the paper's simulator's)", metadata=P2
    )
    max_new_tokens: int = option(64, "--policy lm: longest reply, in tokens", metadata=P2)
    max_length: int = option(
        512, "--policy lm: prompt + reply tokens (the oldest turns are dropped)", metadata=P2
    )
    eval_temperature: float = option(
        0.3, "--policy lm: the trained agent's temperature at evaluation (MASP's decoding)"
    )
    device: str = option("auto", "--policy lm: torch device: auto, cpu, cuda, cuda:1")
    lm_batch_size: int = option(8, "--policy lm: rows per local generate call")
    rollout_backend: str | None = option(
        None,
        "--policy lm: openai:NAME: sample the system's rollouts on an OpenAI-compatible server "
        "(vLLM) that serves the current system adapter as NAME (default: local transformers)",
    )
    user_rollout_backend: str | None = option(
        None, "--policy lm: openai:NAME for the user's rollouts (default: local transformers)"
    )
    base_url: str | None = option(None, "the rollout server's URL (http://127.0.0.1:8000/v1)")
    sync_adapter: bool = option(
        True, "with a rollout backend: push each update's adapter to the vLLM server"
    )

    def __post_init__(self) -> None:
        positive = (
            "silver_episodes", "mentalizer_hidden", "mentalizer_batch", "bc_batch_size",
            "groups", "group_size", "update_epochs", "minibatch_size", "threads",
        )  # fmt: skip
        for name in positive:
            value = getattr(self, name)  # minibatch_size and threads: None is the default
            if value is not None and value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
        for name in ("mentalizer_epochs", "bc_epochs", "iterations", "student_refresh_epochs"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 0")
        if not 0.0 < self.heldout_fraction < 1.0:
            raise ValueError("--heldout-fraction must be in (0, 1)")
        if not 0.0 <= self.real_fraction < 1.0:
            raise ValueError("--real-fraction must be in [0, 1)")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"--gamma must be in [0, 1], got {self.gamma}")
        if self.clip <= 0 or self.beta < 0:
            raise ValueError("--clip must be > 0 and --beta >= 0")
        for name in ("silver_users", "user_bc_users"):
            bad = [u for u in getattr(self, name) if u not in ("soft", "hard")]
            if bad or not getattr(self, name):
                raise ValueError(f"--{name.replace('_', '-')} takes soft and/or hard, got {bad}")
        if not set(self.user_bc_users) <= set(self.silver_users):
            raise ValueError("--user-bc-users must be among --silver-users")
        if not self.hidden_sizes or min(self.hidden_sizes) < 1:
            raise ValueError("--hidden-sizes must be one or more positive widths")
        for name in ("system_lr", "user_lr"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be > 0")
        if self.policy == "lm":
            for name in ("max_new_tokens", "lora_r", "lm_batch_size"):
                if getattr(self, name) < 1:
                    raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
            if self.max_length <= self.max_new_tokens + 16:
                raise ValueError(
                    "--max-length must leave room for a prompt (> --max-new-tokens + 16)"
                )
            for name in ("temperature", "user_temperature", "eval_temperature"):
                if getattr(self, name) < 0:
                    raise ValueError(f"--{name.replace('_', '-')} must be >= 0")
            if self.opponent != "policy":
                raise ValueError("--policy lm trains an LM user: it needs --opponent policy")
            for flag, spec in (
                ("--rollout-backend", self.rollout_backend),
                ("--user-rollout-backend", self.user_rollout_backend),
            ):
                if spec is not None and (not spec.startswith("openai:") or spec == "openai:"):
                    raise ValueError(f"{flag} must be openai:NAME, got {spec!r}")
                if spec is not None and not self.base_url:
                    raise ValueError(f"{flag} needs --base-url (the server's URL)")
        elif (
            self.system_init or self.user_init or self.rollout_backend or self.user_rollout_backend
        ):
            raise ValueError(
                "--system-init, --user-init and the rollout backends are for LM policies: use "
                "them with --policy lm"
            )

    def learning_rate(self, seat: str) -> float:
        """The Adam learning rate of ``seat`` (``--system-lr``/``--user-lr`` or the default)."""
        value = self.system_lr if seat == "system" else self.user_lr
        if value is not None:
            return float(value)
        return 1e-5 if self.policy == "lm" else 3e-4


def phase_config(config: MASPConfig, phase: int) -> dict[str, Any]:
    """The settings phase ``phase``'s checkpoint depends on (it and the earlier phases)."""
    values = config_to_dict(config)
    keep = set(_INHERITED)
    keep |= {f.name for f in dataclasses.fields(config) if f.metadata.get("phase", 9) <= phase}
    if phase >= 1 or config.silver is not None:  # the corpora are read by --silver and phase 1
        keep.add("data")
    return {name: values[name] for name in sorted(keep)}


# -- setup -----------------------------------------------------------------------------------------


def _setup(config: MASPConfig) -> tuple[TaskCard, int, Encoder]:
    """Validates what can fail before any training."""
    card = load_card(config.task)
    if card.user_model != "cognitive":
        raise ValueError(
            f"MASP's strategy-level user policy words its acts with the cognitive user; task "
            f"{card.id!r} has the {card.user_model!r} user model"
        )
    if config.system_bc == "corpus":
        try:
            corpus_of(card.id)
        except ValueError as exc:
            raise ValueError(f"{exc}: warm-start the system with --system-bc scripted") from None
    if config.silver is not None and not (Path(config.silver) / "silver.jsonl").is_file():
        raise FileNotFoundError(f"--silver {config.silver}: no silver.jsonl there")
    if config.policy == "lm":
        from dialogue_gym_agents.lm.grpo import check_policy_sources

        inits = {"system": config.system_init, "user": config.user_init}
        check_policy_sources(card, inits, config.model, config.device)
    return card, int(card.max_exchanges), make_encoder(config.encoder)


_OWN = (PHASE0_DIR, PHASE1_DIR, SCALARS_FILE, TB_DIR, SERVED_DIR)


def _is_own(name: str) -> bool:
    """Whether a run-folder entry is one this trainer writes (checkpoints, logs, staging)."""
    if name.startswith("."):
        name = name[1:].split(".partial-")[0].split(".old-")[0]
    suffix = name[len(ITERATION_PREFIX) :]
    return name in _OWN or (name.startswith(ITERATION_PREFIX) and suffix.isdigit())


def _prepare_run_folder(out: Path, overwrite: bool) -> None:
    """Creates the run folder; refuses foreign content; with ``overwrite`` clears the old run."""
    if out.exists() and not out.is_dir():
        raise CheckpointError(f"--out {out} is a file")
    if (out / MANIFEST).is_file():
        raise CheckpointError(
            f"--out {out} is a checkpoint folder, not a MASP run folder: choose another --out"
        )
    if out.exists():
        foreign = sorted(p.name for p in out.iterdir() if not _is_own(p.name))
        if foreign:
            raise CheckpointError(
                f"--out {out} holds files a MASP run does not write ({', '.join(foreign[:5])}); "
                "refusing to use it: choose another --out"
            )
        if overwrite:
            for entry in out.iterdir():
                if entry.is_dir():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
    out.mkdir(parents=True, exist_ok=True)


def _reuse(folder: Path, card: TaskCard, config: MASPConfig, phase: int) -> Checkpoint | None:
    """The checkpoint at ``folder`` when it exists and was made with the same settings.

    Raises:
        CheckpointMismatchError: It exists but was trained with other settings.
        CorruptCheckpointError: It is incomplete or altered.
    """
    if not folder.exists() or config.overwrite:
        return None
    ckpt = load_checkpoint(folder, kind=KIND, card=card)
    stored = dict(ckpt.info.get("phase_config", {}))
    current = phase_config(config, phase)
    changed = sorted(k for k in set(stored) | set(current) if stored.get(k) != current.get(k))
    if changed:
        raise CheckpointMismatchError(
            f"{folder} was trained with other settings ({', '.join(changed)} differ): rerun "
            "with the same options to resume, pass --overwrite to retrain, or choose another --out"
        )
    return ckpt


def _commit(
    out: Path,
    name: str,
    card: TaskCard,
    config: MASPConfig,
    models: MASPModels,
    phase: int,
    info: dict[str, Any],
    extra: dict[str, Any] | None = None,
    lm_policies: Mapping[str, Any] | None = None,
) -> Path:
    """Publishes one phase/iteration checkpoint atomically (``extra``: file name → object).

    ``lm_policies`` (``--policy lm``): the seats' LM policies, saved as adapters next to the
    mentalizers.
    """
    with CheckpointWriter(out / name, overwrite=True) as writer:
        files, shapes = save_models(writer.path, models)
        if lm_policies:
            from dialogue_gym_agents.lm.masp_lm import save_lm_policies

            files += save_lm_policies(writer.path, lm_policies)
        for file, payload in (extra or {}).items():
            if file == SILVER_FILE:
                write_jsonl(writer.path / file, payload)
            else:
                torch.save(payload, writer.path / file)
            files.append(file)
        return writer.commit(
            KIND,
            card,
            config_to_dict(config),
            files,
            info={**shapes, **info, "phase_config": phase_config(config, phase)},
            extra_versions=("transformers", "peft") if lm_policies else (),
        )


# -- phase 0: silver cache and mentalizers ---------------------------------------------------------


def persona_split(card: TaskCard, heldout_fraction: float) -> dict[str, tuple[Persona, ...]]:
    """The card's persona bank split into ``train`` and ``heldout`` (stably, by persona id)."""
    bank = persona_bank(card)
    held = {p.id for p in bank if derive_seed(0, "persona", p.id) % 1000 < 1000 * heldout_fraction}
    split = {
        "train": tuple(p for p in bank if p.id not in held),
        "heldout": tuple(p for p in bank if p.id in held),
    }
    if not split["train"] or not split["heldout"]:
        raise ValueError(f"--heldout-fraction leaves no {card.id} personas on one side")
    return split


def _user_act(decision: str, voiced: bool) -> str:
    """The response act a simulator reply realizes (the user's behaviour-cloning label)."""
    acts = {"refused": "refuse", "positive": "warm", "agree": "agree"}
    return acts.get(decision, "voice" if voiced else "hold")


def silver_episode(
    env: DialogueEnv, policy: Any, seed: int, key: str, split: str, user: str, policy_name: str
) -> SilverTrajectory:
    """One embedded-world episode with the simulator's (oracle) state after every prefix."""
    observations, _ = env.reset(seed=seed)
    if callable(getattr(policy, "reset", None)):
        policy.reset(seed=seed)
    states, prefixes, acts = [env.user.state], [len(env.history)], []
    voiced = {cid: c["voiced"] for cid, c in env.user.privileged()["concerns"].items()}
    record: dict[str, Any] = {}
    while env.agents:
        observations, _, _, _, infos = env.step({"system": policy.act(observations["system"])})
        privileged = infos["system"]["privileged"]
        states.append(BDI.from_dict(privileged["bdi"]))
        prefixes.append(len(env.history))
        now = {cid: c["voiced"] for cid, c in privileged["concerns"].items()}
        acts.append(_user_act(privileged["decision"], any(now[c] > voiced[c] for c in now)))
        voiced = now
        record = infos["system"].get("episode", record)
    return SilverTrajectory(
        key=key,
        profile=env.user.profile(),
        turns=tuple(env.history),
        prefixes=tuple(prefixes),
        states=tuple(states),
        user_acts=tuple(acts),
        split=split,
        user=user,
        policy=policy_name,
        rcsr=bool(metrics.rc_success_within(record, env.max_exchanges)),
    )


def collect_silver(
    card: TaskCard, encoder: Encoder, T: int, config: MASPConfig
) -> list[SilverTrajectory]:
    """The silver cache: embedded-world episodes (+ an annotated corpus with ``--silver``)."""
    personas = persona_split(card, config.heldout_fraction)
    envs = {
        (user, split): DialogueEnv(
            card,
            user=CognitiveUser(card, encoder, preset=user, personas=personas[split]),
            encoder=encoder,
            privileged=True,
            max_exchanges=T,
            env_id=f"{card.id}-{user}-silver",
        )
        for user in config.silver_users
        for split in ("train", "heldout")
    }
    policies: list[tuple[str, Any]] = [
        ("random", RandomAgent(card)),
        ("scripted", scripted(card, encoder=encoder)),
    ]
    if config.silver_planner is not None:
        from dialogue_gym_agents.planner import planner

        policies.append(("planner", planner(card, checkpoint=config.silver_planner)))
    silver: list[SilverTrajectory] = []
    bar = progress_bar(config.silver_episodes, "silver episodes", config.progress, unit="ep")
    f = config.heldout_fraction
    for episode in range(config.silver_episodes):
        split = "heldout" if int((episode + 1) * f) > int(episode * f) else "train"
        user = config.silver_users[episode % len(config.silver_users)]
        name, policy = policies[(episode // len(config.silver_users)) % len(policies)]
        key = f"{card.id}/{user}/{name}/{episode}"
        seed = derive_seed(config.seed, "silver", episode)
        silver.append(silver_episode(envs[(user, split)], policy, seed, key, split, user, name))
        bar.update(1)
    bar.close()
    if config.silver is not None:
        silver += corpus_silver(card, config)
    return silver


def corpus_silver(card: TaskCard, config: MASPConfig) -> list[SilverTrajectory]:
    """Trajectories of an LLM-annotated corpus cache (``dialogue-gym annotate``).

    Raises:
        ValueError: No dialogue of the task's training split is in the cache.
    """
    from dialogue_gym.annotate import annotation_prefixes, prefix_history, profile_text
    from dialogue_gym.mentalizers.llm import SilverCache

    cache = SilverCache.load(config.silver or "")
    corpus = CORPORA[card.id]
    out: list[SilverTrajectory] = []
    for dialogue in load_training_dialogues(card.id, config.data, split=config.split):
        prefixes = [
            k
            for k in annotation_prefixes(dialogue)
            if cache.get(dialogue.id, k, corpus) is not None
        ]
        if not prefixes:
            continue
        held = derive_seed(0, "dialogue", dialogue.id) % 1000 < 1000 * config.heldout_fraction
        out.append(
            SilverTrajectory(
                key=f"{corpus}:{dialogue.id}",
                profile=profile_text(dialogue) or "",
                turns=tuple(prefix_history(dialogue, len(dialogue.turns))),
                prefixes=tuple(prefixes),
                states=tuple(cache.get(dialogue.id, k, corpus) for k in prefixes),  # type: ignore[misc]
                split="heldout" if held else "train",
                user="corpus",
            )
        )
    if not out:
        raise ValueError(f"--silver {config.silver} annotates no {corpus} training dialogue")
    return out


def train_mentalizers(
    card: TaskCard,
    encoder: Encoder,
    T: int,
    silver: Sequence[SilverTrajectory],
    config: MASPConfig,
    run: RunGenerators,
) -> tuple[Mentalizers, dict[str, float]]:
    """Trains the teacher, then the student on its targets; returns them and held-out errors."""
    featurizer, latent = HistoryFeaturizer(card, encoder, T), LatentSpace(encoder)
    train = [t for t in silver if t.split == "train"]
    train_data = PrefixData.build(train, featurizer, latent)
    heldout_data = PrefixData.build([t for t in silver if t.split == "heldout"], featurizer, latent)
    a_diag = torch.as_tensor(latent.a_diag, dtype=torch.float32)
    n_in = featurizer.n_history + featurizer.n_context
    teacher = MentalizerNet(n_in, latent.size, config.mentalizer_hidden, generator=run.torch)
    teacher_curve = train_teacher(
        teacher, train_data, a_diag, config.mentalizer_epochs, config.mentalizer_lr,
        config.mentalizer_batch, run.torch, config.lambda_reg, config.lambda_dyn,
    )  # fmt: skip
    student = MentalizerNet(featurizer.n_history, latent.size, config.mentalizer_hidden, run.torch)
    with torch.no_grad():
        targets = teacher(train_data.teacher_x)
    student_curve = train_student(
        student, train_data.student_x, targets, a_diag, config.mentalizer_epochs,
        16 * config.mentalizer_batch, run.torch,
        torch.optim.Adam(student.parameters(), lr=config.mentalizer_lr),
    )  # fmt: skip
    prior = list({tuple(t.states[0].to_dict().items()): t.states[0] for t in train}.values())
    cache = [s for t in silver for s in t.states]
    mentalizers = Mentalizers(
        card, featurizer, latent, teacher.eval(), student.eval(), prior, cache
    )
    errors = mentalizer_errors(teacher, student, heldout_data, a_diag)
    mean = train_data.target.mean(dim=0)
    constant = ((heldout_data.target - mean) ** 2 * a_diag).sum(dim=-1).mean()
    errors.update(
        constant_error=float(constant),
        teacher_train_loss=teacher_curve[-1] if teacher_curve else float("nan"),
        student_train_loss=student_curve[-1] if student_curve else float("nan"),
        train_prefixes=float(len(train_data.target)),
        prior_records=float(len(prior)),
    )
    return mentalizers, errors


# -- phase 1: warm starts --------------------------------------------------------------------------


def _as_observation(history: Sequence[tuple[str, str]], exchange: int) -> dict[str, Any]:
    turns = tuple({"speaker": int(r != "system"), "text": t} for r, t in history)
    return {"history": turns, "role": 0, "exchange": exchange}


def system_bc_examples(
    episodes: Iterable[Sequence[tuple[str, str, np.ndarray | None]]],
    features: SystemFeatures,
    student: LearnedStudent,
    T: int,
) -> tuple[np.ndarray, np.ndarray]:
    """System features (with the student's ẑ) and soft strategy targets of labelled turns.

    Args:
        episodes: Dialogues as ``(role, text, target)`` turns; ``target`` is a distribution
            over the card's strategies for labelled system turns, else ``None``.
        features: The system features (reset per dialogue).
        student: The student mentalizer.
        T: The exchange budget (later system turns are skipped).
    """
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for turns in episodes:
        features.reset()
        history: list[tuple[str, str]] = []
        exchange = 0
        for role, text, target in turns:
            if role == "system":
                if exchange >= T:
                    break
                if target is not None:
                    observation = _as_observation(history, exchange)
                    xs.append(features.observe(observation, student.predict(history)))
                    ys.append(target)
                    features.record(target)
                exchange += 1
            if text:
                history.append((role, text))
    k = features.strategy.counts.shape[0]
    if not xs:
        return np.zeros((0, features.n_features), np.float32), np.zeros((0, k), np.float32)
    return np.stack(xs).astype(np.float32), np.stack(ys).astype(np.float32)


def user_bc_examples(
    trajectories: Iterable[SilverTrajectory], features: UserFeatures
) -> tuple[np.ndarray, np.ndarray]:
    """User features before each simulator reply and the one-hot act it realized."""
    xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    for trajectory in trajectories:
        for k, act in enumerate(trajectory.user_acts):
            start = trajectory.prefixes[k]
            observation = {
                **_as_observation(trajectory.turns[: start + 1], k),
                "role": 1,
                "state": trajectory.states[k].render(),
            }
            xs.append(features.observe(observation))
            ys.append(np.eye(len(USER_ACTS), dtype=np.float32)[USER_ACTS.index(act)])
    if not xs:
        raise ValueError("no simulator replies to clone the user from")
    return np.stack(xs).astype(np.float32), np.stack(ys)


def behaviour_clone(
    policy: StrategyPolicy,
    X: np.ndarray,
    Y: np.ndarray,
    epochs: int,
    lr: float,
    batch_size: int,
    generator: torch.Generator,
) -> dict[str, float]:
    """Cross-entropy on (soft) targets; returns the last epoch's loss and accuracy.

    Accuracy counts a prediction right when the argmax action has target mass.
    """
    inputs, targets = torch.as_tensor(X), torch.as_tensor(Y)
    optimizer = torch.optim.Adam(policy.trainable_parameters(), lr=lr)
    stats = {"loss": float("nan"), "accuracy": float("nan"), "examples": float(len(X))}
    for _ in range(epochs):
        order = torch.randperm(len(inputs), generator=generator)
        total, right = 0.0, 0.0
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            logits = policy.net(inputs[rows])
            loss = F.cross_entropy(logits, targets[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach()) * len(rows)
            right += float((targets[rows].gather(1, logits.argmax(1, keepdim=True)) > 0).sum())
        stats.update(loss=total / len(inputs), accuracy=right / len(inputs))
    return stats


def _system_bc_data(
    card: TaskCard,
    models: MASPModels,
    silver: Sequence[SilverTrajectory],
    config: MASPConfig,
    run: RunGenerators,
) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    student = LearnedStudent(models.mentalizers)
    T = models.mentalizers.featurizer.max_exchanges
    if config.system_bc == "corpus":
        dialogues = load_training_dialogues(
            card.id,
            config.data,
            split=config.split or TRAIN_SPLITS.get(card.id, "train"),
            format=config.format or PLANNER_FORMATS.get(card.id),
            max_dialogues=config.max_dialogues,
            rng=run.numpy,
        )
        mapper = LabelMapper(card)
        episodes = [
            [(t.role, t.text, mapper(t.acts) if t.role == "system" else None) for t in d.turns]
            for d in dialogues
        ]
        X, Y = system_bc_examples(episodes, models.system_features, student, T)
        source = {"source": "corpus", "dialogues": len(dialogues), **mapper.report()}
    else:
        chosen = [t for t in silver if t.split == "train" and t.policy == "scripted"]
        label = _nearest_strategy(card, models.mentalizers.featurizer.encoder)
        episodes = [
            [(r, x, label(x) if r == "system" else None) for r, x in t.turns] for t in chosen
        ]
        X, Y = system_bc_examples(episodes, models.system_features, student, T)
        source = {"source": "scripted", "dialogues": len(chosen)}
    if len(X) == 0:
        raise ValueError(
            f"no labelled {card.id} system turn to clone (source: {config.system_bc}); try "
            "more --silver-episodes or the other --system-bc"
        )
    return X, Y, source


def _nearest_strategy(card: TaskCard, encoder: Encoder) -> Callable[[str], np.ndarray]:
    """``label(text)``: the one-hot strategy whose template is most similar to ``text``."""
    owners = [i for i, s in enumerate(card.strategies) for _ in s.templates]
    rows = np.asarray(encoder.encode([t for s in card.strategies for t in s.templates]))
    eye = np.eye(len(card.strategies), dtype=np.float32)

    def label(text: str) -> np.ndarray:
        return eye[owners[int(np.argmax(rows @ np.asarray(encoder.encode([text]))[0]))]]

    return label


def warm_start(
    card: TaskCard,
    models: MASPModels,
    silver: Sequence[SilverTrajectory],
    config: MASPConfig,
    run: RunGenerators,
) -> dict[str, Any]:
    """Clones the system and the user policy and freezes them as references (in ``models``)."""
    X, Y, source = _system_bc_data(card, models, silver, config, run)
    models.system = StrategyPolicy(X.shape[1], Y.shape[1], config.hidden_sizes, run.torch)
    system = behaviour_clone(
        models.system, X, Y, config.bc_epochs, config.bc_lr, config.bc_batch_size, run.torch
    )
    chosen = [t for t in silver if t.split == "train" and t.user in config.user_bc_users]
    Xu, Yu = user_bc_examples(chosen, models.user_features)
    models.user = StrategyPolicy(Xu.shape[1], len(USER_ACTS), config.hidden_sizes, run.torch)
    user = behaviour_clone(
        models.user, Xu, Yu, config.bc_epochs, config.bc_lr, config.bc_batch_size, run.torch
    )
    models.system.freeze_reference()
    models.user.freeze_reference()
    acts = Yu.sum(axis=0)
    user["act_shares"] = {
        a: float(n / max(acts.sum(), 1)) for a, n in zip(USER_ACTS, acts, strict=True)
    }
    return {"system": {**system, **source}, "user": user}


# -- phase 2: alternating self-play ----------------------------------------------------------------


class SelfPlay:
    """Alternating GRPO self-play (Algorithm 1, lines 5–19) over a fixed set of envs.

    Args:
        card: The task card.
        models: The warm-started models (updated in place).
        silver: The silver cache (its train prefixes are the student refresh's real mix).
        config: The run's config.
        optim_state: Optimizer states of a previous iteration (resuming).
        policies: The ``system`` and ``user`` policies to train (default: the strategy-level
            ones in ``models``) — any :class:`~dialogue_gym_agents.strategy_level.GRPOPolicy`,
            e.g. a LoRA causal LM.
        seats: ``seats(env) -> {"system": Seat, "user": Seat}`` connecting those policies to
            one env (default: the strategy-level seats).
        on_update: Called as ``on_update(seat, policy)`` after each GRPO update (e.g. pushing
            an LM adapter to the vLLM server that samples the rollouts).
    """

    def __init__(
        self,
        card: TaskCard,
        models: MASPModels,
        silver: Sequence[SilverTrajectory],
        config: MASPConfig,
        optim_state: dict[str, Any] | None = None,
        policies: Mapping[str, GRPOPolicy] | None = None,
        seats: Callable[[DialogueEnv], Mapping[str, Seat]] | None = None,
        on_update: Callable[[str, GRPOPolicy], Any] | None = None,
    ) -> None:
        self.card, self.models, self.config = card, models, config
        self.on_update = on_update
        self.policies = dict(policies or {"system": models.system, "user": models.user})
        if any(self.policies.get(seat) is None for seat in ("system", "user")):
            raise ValueError("self-play needs a system and a user policy (run the warm start)")
        mentalizers = models.mentalizers
        encoder = mentalizers.featurizer.encoder
        T = mentalizers.featurizer.max_exchanges
        self.selfplay_user = config.opponent == "policy"
        teacher = LearnedTeacher(mentalizers) if config.reward_teacher == "learned" else None
        weights = RewardWeights(config.w_prog, config.w_inf, config.w_rat, config.gamma)
        personas = persona_split(card, config.heldout_fraction)["train"]
        self.envs: list[DialogueEnv] = []
        self.seats: dict[str, list[Seat]] = {"system": [], "user": []}
        make_seats = seats or self.strategy_seats
        for _ in range(config.groups * config.group_size):
            user = CognitiveUser(card, encoder, preset=config.selfplay_user, personas=personas)
            env = DialogueEnv(
                card,
                user=user,
                encoder=encoder,
                external=("system", "user") if self.selfplay_user else ("system",),
                teacher=teacher,
                max_exchanges=T,
                weights=weights,
                env_id=f"{card.id}-{config.selfplay_user}-selfplay",
            )
            self.envs.append(env)
            for name, seat in make_seats(env).items():
                self.seats[name].append(seat)
        system, user = self.policies["system"], self.policies["user"]
        self.system_opt = torch.optim.Adam(
            system.trainable_parameters(), lr=config.learning_rate("system")
        )
        self.user_opt = torch.optim.Adam(
            user.trainable_parameters(), lr=config.learning_rate("user")
        )
        self.student_opt = torch.optim.Adam(mentalizers.student.parameters(), lr=config.student_lr)
        if optim_state is not None:
            self.system_opt.load_state_dict(optim_state["system"])
            self.user_opt.load_state_dict(optim_state["user"])
            self.student_opt.load_state_dict(optim_state["student"])
        self.real = [(h, t.profile) for t in silver if t.split == "train" for h in t.histories()]
        heldout = [t for t in silver if t.split == "heldout"]
        self.heldout = PrefixData.build(heldout, mentalizers.featurizer, mentalizers.latent)

    def strategy_seats(self, env: DialogueEnv) -> dict[str, Seat]:
        """The strategy-level seats of one env (the system's features count its strategies)."""
        mentalizers = self.models.mentalizers
        T = mentalizers.featurizer.max_exchanges
        system_features, _ = build_features(self.card, mentalizers, T)
        student = LearnedStudent(mentalizers)
        return {
            "system": StrategySystemSeat(self.card, system_features, student, True),
            "user": StrategyUserSeat(self.models.user_features, env.user),  # type: ignore[arg-type]
        }

    def optim_state(self) -> dict[str, Any]:
        """The optimizer states (saved with each iteration, for exact resumption)."""
        return {
            "system": self.system_opt.state_dict(),
            "user": self.user_opt.state_dict(),
            "student": self.student_opt.state_dict(),
        }

    def rollout(self, k: int, learner: str, generator: torch.Generator) -> Rollout:
        """Groups of episodes (one seed per group) with ``learner``'s steps kept."""
        config = self.config
        seeds, groups, seat_seeds = [], [], []
        for g in range(config.groups):
            seed = derive_seed(config.seed, "episode", k, learner, g)
            for member in range(config.group_size):
                seeds.append(seed)
                groups.append(g)
                seat_seeds.append(derive_seed(seed, "seat", member))
        seats = {"system": self.seats["system"]}
        if self.selfplay_user:
            seats["user"] = self.seats["user"]
        return play(
            self.envs, seeds, groups, seats, self.policies, learner, generator, config.gamma,
            seat_seeds,
        )  # fmt: skip

    def refresh_student(
        self, prefixes: Sequence[tuple[Any, str]], generator: torch.Generator
    ) -> float:
        """Student epochs on self-play prefixes + real prefixes, with frozen teacher targets."""
        config, mentalizers = self.config, self.models.mentalizers
        n_real = round(len(prefixes) * config.real_fraction / (1.0 - config.real_fraction))
        picks = (
            torch.randint(len(self.real), (n_real,), generator=generator).tolist()
            if self.real
            else []
        )
        mix = [*prefixes, *(self.real[i] for i in picks)]
        histories, profiles = [h for h, _ in mix], [p for _, p in mix]
        inputs = torch.as_tensor(mentalizers.featurizer.history(histories))
        targets = torch.as_tensor(mentalizers.teacher_z(histories, profiles), dtype=torch.float32)
        mentalizers.student.train()
        curve = train_student(
            mentalizers.student, inputs, targets, mentalizers.a_diag,
            config.student_refresh_epochs, 256, generator, self.student_opt,
        )  # fmt: skip
        mentalizers.student.eval()
        return curve[-1] if curve else 0.0

    def iteration(self, k: int) -> dict[str, float]:
        """One outer iteration: system update, user update, student refresh."""
        config, models = self.config, self.models
        generator = torch.Generator().manual_seed(derive_seed(config.seed, "iteration", k))
        update = {
            "epochs": config.update_epochs,
            "minibatch_size": config.minibatch_size or (8 if config.policy == "lm" else 64),
            "clip": config.clip,
            "beta": config.beta,
            "generator": generator,
            "max_grad_norm": config.max_grad_norm,
        }
        point: dict[str, float] = {"iteration": float(k)}
        system_rollout = self.rollout(k, "system", generator)
        point.update({f"system_{n}": v for n, v in system_rollout.stats().items()})
        stats = grpo_update(self.policies["system"], self.system_opt, system_rollout, **update)
        point.update({f"system_grpo_{n}": v for n, v in stats.items()})
        if self.on_update is not None:
            self.on_update("system", self.policies["system"])
        prefixes = list(system_rollout.prefixes)
        if self.selfplay_user and config.update_user:
            user_rollout = self.rollout(k, "user", generator)
            point.update({f"user_{n}": v for n, v in user_rollout.stats().items()})
            stats = grpo_update(self.policies["user"], self.user_opt, user_rollout, **update)
            point.update({f"user_grpo_{n}": v for n, v in stats.items()})
            if self.on_update is not None:
                self.on_update("user", self.policies["user"])
            prefixes += user_rollout.prefixes
        if config.student_refresh_epochs > 0:
            point["student_refresh_loss"] = self.refresh_student(prefixes, generator)
        mentalizers = models.mentalizers
        if len(self.heldout.target):
            errors = mentalizer_errors(
                mentalizers.teacher, mentalizers.student, self.heldout, mentalizers.a_diag
            )
            point["student_heldout_error"] = errors["student_error"]
        return point


# -- the trainer -----------------------------------------------------------------------------------


CURVE_COLUMNS = (
    ("system_sr", "sys SR"),
    ("system_rcsr", "sys RCSR"),
    ("system_reward", "sys r_S"),
    ("system_episode_reward", "sys Σr_S"),
    ("user_sr", "usr SR"),
    ("user_reward", "usr r_U"),
    ("user_q", "usr q"),
    ("system_grpo_kl", "KL sys"),
    ("user_grpo_kl", "KL usr"),
    ("student_heldout_error", "M err"),
)


def lm_warm_start(card: TaskCard, config: MASPConfig) -> tuple[dict[str, Any], dict[str, Any]]:
    """Phase 1 with ``--policy lm``: both seats' LM policies, frozen as KL references.

    Each comes from its ``sft-lora`` checkpoint (``--system-init``, ``--user-init``) or is a
    fresh adapter on ``--model``.

    Returns:
        The policies and, per seat, what it was built from (recorded in the checkpoints).
    """
    from dialogue_gym_agents.lm.grpo import build_policy

    policies, bases = {}, {}
    for seat, init, temperature in (
        ("system", config.system_init, config.temperature),
        ("user", config.user_init, config.user_temperature),
    ):
        policies[seat], bases[seat] = build_policy(
            seat=seat,
            init=init,
            model=config.model,
            lora_r=config.lora_r,
            lora_alpha=config.lora_alpha,
            seed=derive_seed(config.seed, "phase1"),
            device=config.device,
            dtype=config.dtype,
            card=card,
            temperature=temperature,
            max_new_tokens=config.max_new_tokens,
            reference=config.reference,
            batch_size=config.lm_batch_size,
        )
    return policies, bases


def _lm_setup(
    ckpt: Checkpoint, card: TaskCard, models: MASPModels, config: MASPConfig, served: Path
) -> tuple[
    dict[str, Any] | None,
    Callable[[DialogueEnv], Mapping[str, Seat]] | None,
    Callable[[str, Any], Any] | None,
]:
    """``--policy lm``: the LM policies of ``ckpt``, their seats and the adapter-sync hook.

    With rollout backends, each seat's policy samples on its server, and (with
    ``--sync-adapter``) its adapter is pushed there now and after every update (version folders
    under ``served``). Strategy-level runs get ``(None, None, None)``.
    """
    if config.policy != "lm":
        return None, None, None
    from dialogue_gym.backends import make_backend
    from dialogue_gym_agents.lm.masp_lm import lm_seats, load_lm_policies
    from dialogue_gym_agents.lm.policy import VLLMAdapterSync

    specs = {"system": config.rollout_backend, "user": config.user_rollout_backend}
    in_flight = config.groups * config.group_size  # one request per env at a time
    backends = {
        seat: make_backend(spec, base_url=config.base_url, max_concurrency=in_flight)
        for seat, spec in specs.items()
        if spec
    }
    policies = load_lm_policies(
        ckpt,
        temperatures={"system": config.temperature, "user": config.user_temperature},
        max_new_tokens=config.max_new_tokens,
        device=config.device,
        dtype=config.dtype,
        batch_size=config.lm_batch_size,
        backends=backends,
    )
    student = LearnedStudent(models.mentalizers)
    budget = config.max_length - config.max_new_tokens
    syncs = {
        seat: VLLMAdapterSync(str(config.base_url), str(spec).split(":", 1)[1], served)
        for seat, spec in specs.items()
        if spec and config.sync_adapter
    }

    def push(seat: str, policy: Any) -> None:
        if seat in syncs:
            syncs[seat](policy)

    for seat, policy in policies.items():
        push(seat, policy)  # the server samples from the policy being trained from the start
    return policies, lm_seats(card, student, policies, budget), push if syncs else None


def format_curve(curve: Sequence[dict[str, float]]) -> str:
    """The learning dynamics as a text table (one row per outer iteration)."""
    header = ["iter", *(title for _, title in CURVE_COLUMNS)]
    rows = [
        [
            str(int(p["iteration"])),
            *(f"{p[key]:.3f}" if key in p else "-" for key, _ in CURVE_COLUMNS),
        ]
        for p in curve
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in [header, *rows]
    )


def _log_point(log: RunLogger, point: dict[str, float], step: int) -> None:
    log.log_dict({k: v for k, v in point.items() if k != "iteration"}, step, prefix="selfplay/")


def train_masp(config: MASPConfig, stream: Any = None) -> Path:
    """Runs (or resumes) all three phases; returns the last checkpoint folder.

    Raises:
        ValueError: Bad options, a task without the needed corpus or user model.
        CheckpointError: ``--out`` holds foreign files, or checkpoints made with other
            settings (without ``--overwrite``), or corrupt ones.
        FileNotFoundError: Missing corpus or silver files.
    """
    out_stream = stream or sys.stdout
    card, T, encoder = _setup(config)
    out = Path(config.out).expanduser()
    _prepare_run_folder(out, config.overwrite)

    def say(text: str) -> None:
        print(text, file=out_stream, flush=True)

    threads = config.threads or (torch.get_num_threads() if config.policy == "lm" else 1)
    with torch_threads(threads), RunLogger(out, tensorboard=config.tensorboard) as log:
        # Phase 0: silver cache, BDI prior, teacher and student.
        phase0 = _reuse(out / PHASE0_DIR, card, config, 0)
        if phase0 is None:
            run = generators(derive_seed(config.seed, "phase0"))
            silver = collect_silver(card, encoder, T, config)
            mentalizers, errors = train_mentalizers(card, encoder, T, silver, config, run)
            models = MASPModels(mentalizers, None, None, *build_features(card, mentalizers, T))
            extra = {SILVER_FILE: [t.to_json() for t in silver]}
            info = {"phase": "mentalization", "mentalizers": errors, "silver": len(silver)}
            phase0 = load_checkpoint(_commit(out, PHASE0_DIR, card, config, models, 0, info, extra))
            log.log_dict(errors, 0, prefix="mentalizers/")
        silver = [SilverTrajectory.from_json(r) for r in read_jsonl(phase0.file(SILVER_FILE))]
        errors = dict(phase0.info["mentalizers"])
        say(
            f"phase 0: {len(silver)} silver dialogues; held-out prefixes "
            f"({int(errors['prefixes'])}): teacher error {errors['teacher_error']:.4f}, "
            f"student error {errors['student_error']:.4f} (constant predictor "
            f"{errors['constant_error']:.4f}; A-metric)"
        )
        cache = [s for t in silver for s in t.states]
        # Phase 1: behaviour-cloned warm starts, frozen as references.
        phase1 = _reuse(out / PHASE1_DIR, card, config, 1)
        if phase1 is None and config.policy == "lm":
            models = load_models(phase0, card, cache)
            policies, bases = lm_warm_start(card, config)
            info = {"phase": "warmstart", "mentalizers": errors, "bc": bases, "lm_policies": bases}
            phase1 = load_checkpoint(
                _commit(out, PHASE1_DIR, card, config, models, 1, info, lm_policies=policies)
            )
            del policies  # phase 2 loads them back from the checkpoint (as a resumed run does)
        elif phase1 is None:
            models = load_models(phase0, card, cache)
            bc = warm_start(
                card, models, silver, config, generators(derive_seed(config.seed, "phase1"))
            )
            info = {"phase": "warmstart", "mentalizers": errors, "bc": bc}
            phase1 = load_checkpoint(_commit(out, PHASE1_DIR, card, config, models, 1, info))
            for seat in ("system", "user"):
                log.log_dict(
                    {k: v for k, v in bc[seat].items() if isinstance(v, float)}, 0, f"bc_{seat}/"
                )
        bc = phase1.info["bc"]
        if config.policy == "lm":
            say(
                "phase 1: LM policies (frozen as KL references) — "
                + "; ".join(
                    f"{seat}: {bc[seat]['init'] or 'a fresh adapter on ' + bc[seat]['model']}"
                    for seat in ("system", "user")
                )
            )
        else:
            say(
                f"phase 1: system cloned on {int(bc['system']['examples'])} turns (accuracy "
                f"{bc['system']['accuracy']:.2f}), user on {int(bc['user']['examples'])} "
                f"replies (accuracy {bc['user']['accuracy']:.2f})"
            )
        # Phase 2: alternating self-play, resumed after the last complete iteration.
        last, start = phase1, 1
        done = sorted(p for p in out.glob(f"{ITERATION_PREFIX}[0-9]*") if (p / MANIFEST).is_file())
        if done and not config.overwrite:
            last = _reuse(done[-1], card, config, 2) or phase1
            start = int(last.info["iteration"]) + 1
        models = load_models(last, card, cache)
        optim_state = None
        curve: list[dict[str, float]] = list(last.info.get("curve", []))
        if start > 1:
            optim_state = torch.load(last.file(OPTIM_FILE), map_location="cpu", weights_only=True)
            say(f"resuming after iteration {start - 1}")
        if start <= config.iterations:
            lm_policies, seats, push = _lm_setup(last, card, models, config, out / SERVED_DIR)
            selfplay = SelfPlay(card, models, silver, config, optim_state, lm_policies, seats, push)
            bar = progress_bar(
                config.iterations - start + 1, "self-play", config.progress, unit="iter"
            )
            for k in range(start, config.iterations + 1):
                point = selfplay.iteration(k)
                curve.append(point)
                info = {
                    "phase": "selfplay",
                    "iteration": k,
                    "curve": curve,
                    "mentalizers": errors,
                    "bc": bc,
                }
                if lm_policies:
                    info["lm_policies"] = phase1.info["lm_policies"]
                extra = {OPTIM_FILE: selfplay.optim_state()}
                folder = _commit(
                    out, iteration_dir(k), card, config, models, 2, info, extra, lm_policies
                )
                last = load_checkpoint(folder)
                _log_point(log, point, k)  # after the commit: a resumed run logs no duplicates
                bar.set_postfix(
                    sys_sr=f"{point['system_sr']:.2f}", usr_sr=f"{point.get('user_sr', 0):.2f}"
                )
                bar.update(1)
            bar.close()
            shutil.rmtree(out / SERVED_DIR, ignore_errors=True)  # vLLM holds what it loaded
        if curve:
            say("learning dynamics (self-play rollouts per outer iteration):")
            say(format_curve(curve))
        return last.path


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``dialogue-gym train masp OPTIONS``.

    Returns:
        0 on success (usage errors raise ``SystemExit``/``ValueError``).
    """
    return run_trainer(MASPConfig, train_masp, argv, prog=prog or "dialogue-gym train masp")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
