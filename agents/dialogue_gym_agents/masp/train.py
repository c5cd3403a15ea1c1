"""``dialogue-gym train masp``: MASP (Algorithm 1) with strategy-level or LoRA causal-LM policies.

Phases (each one's checkpoint is published atomically in the run folder ``--out``):

0. **Mentalization** (``phase0-mentalizers``): a silver BDI cache — episodes in the embedded
   world (``CognitiveUser`` oracle states after every prefix; soft and hard users; random and
   scripted systems, plus a planner with ``--silver-planner``), and with ``--silver`` the LLM
   annotator's cache of a corpus (``dialogue-gym annotate``) — split by persona (dialogue) into
   train and held-out; the BDI prior (the initial states of the train split); the teacher
   ``F(h, p_u, g)`` and the student ``M(h)`` trained with the paper's losses
   (:mod:`dialogue_gym_agents.masp.mentalizers`). Their errors on held-out prefixes are printed
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
causal LMs in both seats (:mod:`dialogue_gym_agents.masp.lm_policy`) — phase 0 is the same,
phase 1 loads the ``sft-lora`` checkpoints ``--system-init`` / ``--user-init`` (or fresh adapters
on ``--model``) as warm starts and frozen references, and phase 2 runs the same
:class:`SelfPlay` loop and :func:`~dialogue_gym_agents.common.selfplay.grpo_update` on
token-level log-probs, with the B.5 prompt conditioning and rollouts generated locally or on a
vLLM server (``--rollout-backend``); the adapters are saved in every checkpoint. The trainer
reaches either only through its :class:`~dialogue_gym_agents.masp.parameterization.
Parameterization` (the sources to check, the thread default, the warm start, the self-play
policies and seats), so it holds no ``if policy == "lm"``.

Example::

    dialogue-gym train masp --task P4G --out runs/masp-p4g --iterations 20
    dialogue-gym eval P4G-hard --agent masp:runs/masp-p4g
    dialogue-gym train masp --task P4G --policy lm --system-init SYS --user-init USR --out OUT
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.mind.encoders import Encoder, make_encoder
from dialogue_gym_agents.common.checkpoint import (
    MANIFEST,
    Checkpoint,
    CheckpointError,
    CheckpointMismatchError,
    CheckpointWriter,
    load_checkpoint,
)
from dialogue_gym_agents.common.cli import run_trainer
from dialogue_gym_agents.common.config import config_to_dict
from dialogue_gym_agents.common.seeding import (
    derive_seed,
    generators,
    torch_threads,
)
from dialogue_gym_agents.common.tracking import SCALARS_FILE, TB_DIR, RunLogger, progress_bar
from dialogue_gym_agents.masp.agent import (
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
from dialogue_gym_agents.masp.config import MASPConfig, phase_config
from dialogue_gym_agents.masp.mentalizers import (
    train_mentalizers,
)
from dialogue_gym_agents.masp.parameterization import parameterization
from dialogue_gym_agents.masp.selfplay import SelfPlay
from dialogue_gym_agents.masp.silver import (
    SilverTrajectory,
    collect_silver,
    read_jsonl,
    write_jsonl,
)
from dialogue_gym_agents.training.corpora import (
    corpus_of,
)

__all__ = ["main", "train_masp"]

SILVER_FILE, OPTIM_FILE = "silver.jsonl", "optim.pt"
SERVED_DIR = "served-adapters"
"""Scratch folder of the adapter versions pushed to a vLLM rollout server (removed at the end)."""


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
    parameterization(config).check_sources(card, config)
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
    saved: Mapping[str, Any] | None = None,
) -> Path:
    """Publishes one phase/iteration checkpoint atomically (``extra``: file name → object).

    ``saved``: policies kept outside ``models`` (``--policy lm``: the seats' LM policies,
    saved as adapters next to the mentalizers).
    """
    with CheckpointWriter(out / name, overwrite=True) as writer:
        files, shapes = save_models(writer.path, models)
        if saved:
            from dialogue_gym_agents.masp.lm_policy import save_lm_policies

            files += save_lm_policies(writer.path, saved)
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
            extra_versions=("transformers", "peft") if saved else (),
        )


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

    policies = parameterization(config)
    threads = config.threads or policies.default_threads()
    with torch_threads(threads), RunLogger(out, tensorboard=config.tensorboard) as log:
        # Phase 0: silver cache, BDI prior, teacher and student.
        phase0 = _reuse(out / PHASE0_DIR, card, config, 0)
        if phase0 is None:
            run = generators(derive_seed(config.seed, "phase0"))
            silver = collect_silver(card, encoder, T, config)
            mentalizers, errors = train_mentalizers(card, encoder, T, silver, config, run)
            features = build_features(card, mentalizers, T, config.view)
            models = MASPModels(mentalizers, None, None, *features)
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
        # Phase 1: warm starts (behaviour cloning, or sft-lora checkpoints), frozen as references.
        phase1 = _reuse(out / PHASE1_DIR, card, config, 1)
        if phase1 is None:
            models = load_models(phase0, card, cache)
            # Phase 0 (shared by both views) has no system policy: the layout is this run's view.
            models.system_features, _ = build_features(card, models.mentalizers, T, config.view)
            start_point = policies.warm_start(card, models, silver, config)
            info = {"phase": "warmstart", "mentalizers": errors, "bc": start_point.bc}
            info.update(start_point.info)
            phase1 = load_checkpoint(
                _commit(out, PHASE1_DIR, card, config, models, 1, info, saved=start_point.saved)
            )
            for seat, scalars in start_point.scalars.items():
                log.log_dict(scalars, 0, f"bc_{seat}/")
            del start_point  # phase 2 loads the policies back from the checkpoint (as on resume)
        bc = phase1.info["bc"]
        say(policies.describe_warm_start(bc))
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
            setup = policies.selfplay_setup(last, card, models, config, out / SERVED_DIR)
            selfplay = SelfPlay(
                card, models, silver, config, optim_state, setup.policies, setup.seats,
                setup.on_update,
            )  # fmt: skip
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
                if setup.saved:
                    info["lm_policies"] = phase1.info["lm_policies"]
                extra = {OPTIM_FILE: selfplay.optim_state()}
                folder = _commit(
                    out, iteration_dir(k), card, config, models, 2, info, extra, setup.saved
                )
                last = load_checkpoint(folder)
                if k > 1 and (k - 1) % config.keep_every:  # written after its successor: safe
                    shutil.rmtree(out / iteration_dir(k - 1), ignore_errors=True)
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
