"""MASP's settings (``dialogue-gym train masp --help``), grouped by the phase they shape."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from dialogue_gym_agents.common.config import TrainConfig, config_to_dict, option

__all__ = ["MASPConfig", "phase_config"]

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
    view: Literal["strategy", "concern"] = option(
        "strategy",
        "the system's actions with --policy strategy: the card's strategies realized from its "
        "templates (the paper's), or listening moves — answer concern c, probe, acknowledge, "
        "reflect, ask — over the features of what the user's replies showed (docs/views.md; "
        "needs --system-bc scripted)",
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
    opponent_mix: float = option(
        0.0,
        "with --opponent policy: the share of each system rollout's episode groups played "
        "against the simulator instead of the user policy (0: pure self-play, the paper's; "
        "a mixed pool keeps the system learning when the co-trained user stops agreeing)",
        metadata={**P2, "omit_default": True},
    )
    user_opponent_mix: float = option(
        0.0,
        "with --opponent policy: the share of each user rollout's episode groups played "
        "against the `scripted` system instead of the system policy (0: pure self-play; a "
        "fixed competent opponent shows the user the states where agreeing is rational, so it "
        "does not learn to hold out against everyone)",
        metadata={**P2, "omit_default": True},
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
    user_beta: float | None = option(
        None,
        "the user seat's KL coefficient to its warm start (default: --beta); larger keeps the "
        "user policy near the simulator it was cloned from",
        metadata=P2,
    )
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
    keep_every: int = option(
        1,
        "keep every N-th iteration's checkpoint and the last one (each holds the mentalizers and "
        "optimizer states, ~13 MB at the strategy level); the others are deleted once the next "
        "is written",
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
            "groups", "group_size", "update_epochs", "minibatch_size", "threads", "keep_every",
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
        if not 0.0 <= self.opponent_mix <= 1.0:
            raise ValueError(f"--opponent-mix must be in [0, 1], got {self.opponent_mix}")
        if self.opponent_mix > 0 and self.opponent != "policy":
            raise ValueError("--opponent-mix mixes the user policy with the simulator: it needs "
                             "--opponent policy")  # fmt: skip
        if not 0.0 <= self.user_opponent_mix <= 1.0:
            raise ValueError(f"--user-opponent-mix must be in [0, 1], got {self.user_opponent_mix}")
        if self.user_opponent_mix > 0 and (self.opponent != "policy" or not self.update_user):
            raise ValueError("--user-opponent-mix trains the user policy against `scripted` "
                             "too: it needs --opponent policy and user updates")  # fmt: skip
        if not 0.0 <= self.real_fraction < 1.0:
            raise ValueError("--real-fraction must be in [0, 1)")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"--gamma must be in [0, 1], got {self.gamma}")
        if self.clip <= 0 or self.beta < 0 or (self.user_beta is not None and self.user_beta < 0):
            raise ValueError("--clip must be > 0, --beta and --user-beta >= 0")
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
        if self.view == "concern" and self.policy != "strategy":
            raise ValueError("--view concern is a strategy-level setting: use --policy strategy")
        if self.view == "concern" and self.system_bc != "scripted":
            raise ValueError(
                "--view concern clones the scripted agent's turns labelled with their nearest "
                "listening move (the corpora are labelled with strategies): add --system-bc "
                "scripted"
            )
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

    def grpo_minibatch_size(self) -> int:
        """The GRPO minibatch in steps (``--minibatch-size`` or the parameterization's default)."""
        return self.minibatch_size or (8 if self.policy == "lm" else 64)

    def learning_rate(self, seat: str) -> float:
        """The Adam learning rate of ``seat`` (``--system-lr``/``--user-lr`` or the default)."""
        value = self.system_lr if seat == "system" else self.user_lr
        if value is not None:
            return float(value)
        return 1e-5 if self.policy == "lm" else 3e-4


def phase_config(config: MASPConfig, phase: int) -> dict[str, Any]:
    """The settings phase ``phase``'s checkpoint depends on (it and the earlier phases).

    A setting added after checkpoints were made (``omit_default`` in its metadata) counts only
    away from its default, so those checkpoints still resume.
    """
    values = config_to_dict(config)
    keep = set(_INHERITED)
    keep |= {
        f.name
        for f in dataclasses.fields(config)
        if f.metadata.get("phase", 9) <= phase
        and not (f.metadata.get("omit_default") and values[f.name] == f.default)
    }
    if phase >= 1 or config.silver is not None:  # the corpora are read by --silver and phase 1
        keep.add("data")
    return {name: values[name] for name in sorted(keep)}
