"""``python -m dialogue_gym_agents.common.lm merge CHECKPOINT OUT``: export a merged model folder.

The adapter of an ``sft-lora`` checkpoint (or one seat's adapter of an ``lm-grpo`` checkpoint,
``--seat``) is merged into its base model's weights and saved as a plain transformers folder
(safetensors + tokenizer + chat template) that vLLM serves without LoRA support::

    python -m dialogue_gym_agents.common.lm merge runs/sft-lora-p4g runs/p4g-sft-merged
    vllm serve runs/p4g-sft-merged --served-model-name p4g-sft --dtype bfloat16

The folder is written atomically (a staging folder renamed into place, with a
``checkpoint.json`` manifest listing and hashing every file); nothing is left behind on a
failure, and an existing folder is replaced only with ``--overwrite``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from dialogue_gym.cards.card import load_card

__all__ = ["MERGED_KIND", "main", "merge_checkpoint"]

MERGED_KIND = "lm-merged"
"""The manifest kind of a merged model folder."""


def merge_checkpoint(
    checkpoint: str | Path, out: str | Path, seat: str = "system", overwrite: bool = False
) -> Path:
    """Merges a checkpoint's adapter into its base model and saves the result at ``out``.

    Args:
        checkpoint: An ``sft-lora`` or ``lm-grpo`` checkpoint folder.
        out: The model folder to create.
        seat: For ``lm-grpo`` checkpoints, which policy to export.
        overwrite: Replace an existing merged folder at ``out``.

    Returns:
        ``out``.

    Raises:
        CheckpointError: A missing, corrupt or unsupported checkpoint, or ``out`` exists.
        ModelNotFoundError: The base model path no longer exists.
    """
    from dialogue_gym_agents.common.checkpoint import (
        CheckpointMismatchError,
        CheckpointWriter,
        load_checkpoint,
    )
    from dialogue_gym_agents.common.lm.agent import load_adapter_model
    from dialogue_gym_agents.common.lm.model import merge_into_folder
    from dialogue_gym_agents.lm_grpo.config import KIND as GRPO_KIND
    from dialogue_gym_agents.sft.lora import ADAPTER_DIR
    from dialogue_gym_agents.sft.lora import KIND as SFT_KIND

    ckpt = load_checkpoint(checkpoint)
    if ckpt.kind == SFT_KIND:
        adapter_dir, base = ADAPTER_DIR, None
    elif ckpt.kind == GRPO_KIND:
        if seat not in ckpt.info.get("policies", []):
            raise CheckpointMismatchError(f"checkpoint {ckpt.path} holds no {seat} policy")
        adapter_dir, base = seat, ckpt.info.get(f"{seat}_policy")
    else:
        raise CheckpointMismatchError(
            f"{ckpt.path} is a {ckpt.kind!r} checkpoint; merge takes {SFT_KIND} or {GRPO_KIND}"
        )
    card = load_card(ckpt.task)
    writer = CheckpointWriter(out, overwrite=overwrite)
    model, tokenizer, info = load_adapter_model(ckpt, adapter_dir, device="cpu", base=base)
    with writer:
        files = merge_into_folder(model, tokenizer, writer.path)
        return writer.commit(
            MERGED_KIND,
            card,
            {"checkpoint": str(ckpt.path), "seat": seat},
            files,
            info={
                "source_kind": ckpt.kind,
                "source_content_hash": ckpt.manifest["content_hash"],
                "base_model": info,
            },
            extra_versions=("transformers", "peft"),
        )


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m dialogue_gym_agents.common.lm", description="LoRA LM utilities"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser("merge", help="merge an adapter into its base model")
    merge.add_argument("checkpoint", help="an sft-lora or lm-grpo checkpoint folder")
    merge.add_argument("out", help="the merged model folder to create")
    merge.add_argument("--seat", default="system", choices=("system", "user"))
    merge.add_argument("--overwrite", action="store_true", help="replace an existing folder")
    args = parser.parse_args(argv)
    try:
        out = merge_checkpoint(args.checkpoint, args.out, seat=args.seat, overwrite=args.overwrite)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(f"merged model: {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
