"""SI-AVPO's settings (``dialogue-gym train siavpo --help``)."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Literal

from dialogue_gym_agents.common.config import TrainConfig, option

__all__ = ["SiavpoConfig"]


@dataclasses.dataclass
class SiavpoConfig(TrainConfig):
    """SI-AVPO: asymmetric-view self-distillation (AOPD) + state-transition credit (STPR)."""

    user: Literal["soft", "hard", "strict", "lenient"] = option(
        "hard", "user preset trained against (strict/lenient: rational variants of hard)"
    )
    max_exchanges: int | None = option(None, "exchange budget T (default: the card's, 8)")
    iterations: int = option(60, "training iterations (rollouts + update each)")
    seeds_per_iteration: int = option(8, "episode seeds (GRPO groups) per iteration")
    group_size: int = option(8, "rollouts per episode seed (the group G)")
    aopd: bool = option(True, "AOPD: teacher-view rollouts and the KL to the teacher view")
    teacher_fraction: float | None = option(
        None,
        "with AOPD, share of each group's rollouts acting under the teacher view (default: 0.5 "
        "strategy, 0 lm)",
    )
    aopd_warmup: float | None = option(
        None,
        "with AOPD, share of the iterations before the KL is switched on, the teacher warm-up "
        "(default: 0.25 strategy, 0 lm)",
    )
    aopd_direction: Literal["forward", "reverse"] = option(
        "forward", "AOPD KL: forward KL(sg teacher || student) or reverse KL(student || sg teacher)"
    )
    turn_credit: bool = option(
        True, "STPR turn credit from Δw (--no-turn-credit: outcome-only advantages, as GRPO)"
    )
    stpr_views: Literal["own", "both"] = option(
        "own",
        "with AOPD, which view L_STPR trains on each step: both views on every rollout (the "
        "teacher view also learns at the student's states, where AOPD queries it) or own (the "
        "view that played the step)",
    )
    lambda_st: float = option(4.0, "λ_st, the weight of L_STPR in L = L_AOPD + λ_st·L_STPR")
    credit_reinforce: float = option(0.5, "α: credit added when Δw agrees with the outcome")
    credit_suppress: float = option(0.5, "β: credit removed when Δw contradicts the outcome")
    credit_deadzone: float = option(1e-3, "δ: |Δw| at or below this counts as no change")
    hidden_sizes: tuple[int, ...] = option((64, 64), "strategy: hidden layer widths of the MLP")
    view: Literal["strategy", "concern"] = option(
        "strategy",
        "strategy: the actions — the card's strategies (the paper's), or listening moves "
        "(answer concern c, probe, acknowledge, reflect, ask; docs/views.md)",
    )
    learning_rate: float | None = option(
        None, "Adam learning rate (default: 3e-3 strategy, 1e-5 lm, on the adapter)"
    )
    update_epochs: int = option(4, "full-batch gradient steps per iteration")
    clip: float = option(0.2, "ratio clip of the GRPO surrogate")
    ent_coef: float = option(0.01, "entropy bonus coefficient")
    max_grad_norm: float = option(1.0, "gradient norm clip")
    max_minutes: float | None = option(
        None, "stop after the iteration that passes this many minutes (default: no limit)"
    )
    deterministic: bool = option(
        True,
        "strategy: the trained agent plays its most likely strategy (--no-deterministic: samples)",
    )
    torch_threads: int | None = option(
        None,
        "torch intra-op threads while training, restored after (default: 1 strategy, as tiny "
        "MLPs run best on one; lm: torch's own setting)",
    )
    policy: Literal["strategy", "lm"] = option(
        "strategy",
        "parameterization: strategy (an MLP over the card's strategies, templated replies) or "
        "lm (a LoRA causal LM writing the replies; the --model ... options below)",
    )
    model: str = option("smollm2", "lm: base model of a fresh adapter (without --init)")
    init: str | None = option(
        None, "lm: sft-lora checkpoint of the system seat as the warm start (default: fresh)"
    )
    lora_r: int = option(16, "lm: rank of a fresh adapter")
    lora_alpha: float = option(32.0, "lm: alpha of a fresh adapter")
    temperature: float = option(0.75, "lm: rollout sampling temperature")
    eval_temperature: float = option(
        0.3, "lm: sampling temperature of the trained agent (the paper's decoding)"
    )
    max_new_tokens: int = option(64, "lm: longest reply, in tokens")
    max_length: int = option(
        768,
        "lm: student prompt + reply tokens (oldest turns dropped to fit; the teacher prompt adds "
        "the P_int block)",
    )
    privileged_examples: int = option(
        1, "lm: unlock conditions and anti-patterns quoted per concern in the teacher's P_int"
    )
    device: str = option("auto", "lm: torch device: auto, cpu, cuda, cuda:1")
    dtype: Literal["float32", "bfloat16", "float16"] = option(
        "float32", "lm: weight dtype (bfloat16 on GPUs)"
    )
    batch_size: int = option(
        8,
        "lm: rows per generate call and per forward/backward pass of the update (gradients "
        "are accumulated over the chunks: the same full-batch loss)",
    )

    POLICY_DEFAULTS: ClassVar[dict[str, dict[str, Any]]] = {
        "strategy": {
            "learning_rate": 3e-3,
            "teacher_fraction": 0.5,
            "aopd_warmup": 0.25,
            "torch_threads": 1,
        },
        "lm": {"learning_rate": 1e-5, "teacher_fraction": 0.0, "aopd_warmup": 0.0},
    }
    """Per-policy defaults of the options left at ``None`` (filled in by ``__post_init__``)."""

    def __post_init__(self) -> None:
        if self.policy not in self.POLICY_DEFAULTS:
            raise ValueError(f"--policy must be strategy or lm, got {self.policy!r}")
        for name, value in self.POLICY_DEFAULTS[self.policy].items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        if self.view == "concern" and self.policy != "strategy":
            raise ValueError("--view concern is a strategy-level setting: use --policy strategy")
        positive = ("iterations", "seeds_per_iteration", "group_size", "update_epochs")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
        if self.torch_threads is not None and self.torch_threads < 1:
            raise ValueError("--torch-threads must be >= 1")
        if self.max_exchanges is not None and self.max_exchanges < 1:
            raise ValueError("--max-exchanges must be >= 1")
        if not 0.0 <= self.aopd_warmup < 1.0:
            raise ValueError(f"--aopd-warmup must be in [0, 1), got {self.aopd_warmup}")
        if not 0.0 <= self.teacher_fraction < 1.0:
            raise ValueError(f"--teacher-fraction must be in [0, 1), got {self.teacher_fraction}")
        if self.aopd and self.teacher_fraction > 0 and self.group_size < 2:
            raise ValueError("teacher-view rollouts need --group-size >= 2")
        if self.lambda_st < 0 or self.ent_coef < 0 or self.clip <= 0:
            raise ValueError("--lambda-st and --ent-coef must be >= 0 and --clip > 0")
        if self.credit_reinforce < 0 or not 0.0 <= self.credit_suppress <= 1.0:
            raise ValueError("need --credit-reinforce >= 0 and --credit-suppress in [0, 1]")
        if self.credit_deadzone < 0 or self.learning_rate <= 0 or self.max_grad_norm <= 0:
            raise ValueError("need --credit-deadzone >= 0, --learning-rate and --max-grad-norm > 0")
        if not self.hidden_sizes or min(self.hidden_sizes) < 1:
            raise ValueError("--hidden-sizes must be one or more positive widths")
        if self.max_minutes is not None and self.max_minutes <= 0:
            raise ValueError("--max-minutes must be positive")
        if self.policy == "lm":
            self._check_lm()

    def _check_lm(self) -> None:
        """The LM options (their files are checked by :func:`train_siavpo`, before any work)."""
        for flag, value in (
            ("--max-new-tokens", self.max_new_tokens),
            ("--lora-r", self.lora_r),
            ("--batch-size", self.batch_size),
        ):
            if value < 1:
                raise ValueError(f"{flag} must be >= 1, got {value}")
        if self.lora_alpha <= 0:
            raise ValueError(f"--lora-alpha must be > 0, got {self.lora_alpha}")
        if self.temperature < 0 or self.eval_temperature < 0:
            raise ValueError("--temperature and --eval-temperature must be >= 0")
        if self.privileged_examples < 0:
            raise ValueError("--privileged-examples must be >= 0")
        if self.max_length <= self.max_new_tokens + 16:
            raise ValueError("--max-length must leave room for a prompt (> --max-new-tokens + 16)")

    @property
    def update_chunk(self) -> int | None:
        """Rows per forward/backward pass of the update (``None``: the full batch at once)."""
        return self.batch_size if self.policy == "lm" else None

    @property
    def method(self) -> str:
        """``siavpo``, ``siavpo-no-aopd``, ``siavpo-no-stpr`` or ``grpo``."""
        if self.aopd:
            return "siavpo" if self.turn_credit else "siavpo-no-stpr"
        return "siavpo-no-aopd" if self.turn_credit else "grpo"

    @property
    def teachers_per_group(self) -> int:
        """Rollouts per group acting under the teacher view."""
        if not self.aopd:
            return 0
        return min(round(self.teacher_fraction * self.group_size), self.group_size - 1)
