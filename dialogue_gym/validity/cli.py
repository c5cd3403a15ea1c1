"""``dialogue-gym validate ENV_ID --data PATH``: the human-replay validity report of one env.

Examples::

    dialogue-gym validate P4G-hard --data ../shared/datasets --split valid,test
    dialogue-gym validate ESConv-soft --data DIR --split valid,test,failed --limit 100
    dialogue-gym validate CB-hard --data DIR --split valid --out runs/validity-cb
    dialogue-gym validate P4G-hard --data DIR --backend openai:gpt-4o-mini    # LLM judges
    dialogue-gym validate P4G-hard --data DIR --backend openai:M --user llm-hard --judges llm

With ``--out DIR`` the result is written to ``DIR/validity.json`` (every cell with n and its
interval, the counts and the options) and ``DIR/dialogues.jsonl`` (one line per validated
dialogue: real outcome, replay, baselines closed and open loop, full-transcript judgment,
text-only and act-only reference probabilities).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from dialogue_gym.argtypes import int_range
from dialogue_gym.evaluation.journal import write_json

__all__ = ["add_parser", "run"]

RESULT_FILE = "validity.json"
DIALOGUES_FILE = "dialogues.jsonl"


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``validate`` command to an :mod:`argparse` sub-parser collection."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "validate",
        help="replay held-out real dialogues and compare the simulated outcomes with the real ones",
        description="Replay held-out real dialogues (system turns one per exchange, each user "
        "pinned to its own dialogue's persona or listing) and report AUC / Spearman / SR of the "
        "simulated outcomes against the real ones, with bootstrap 95%% CIs, n, a text-only "
        "bag-of-words reference and an act-only one (the replayed turns' acts alone).",
    )
    parser.add_argument("env_id", metavar="ENV_ID", help="e.g. P4G-hard, ESConv-soft, CB-hard")
    parser.add_argument("--data", default=None, metavar="PATH", help="data root or corpus folder")
    parser.add_argument(
        "--split",
        default="test",
        metavar="S[,S]",
        help="held-out split(s): test, valid, failed (ESConv's FailedESConv.json); "
        "comma-separated (default: test)",
    )
    parser.add_argument(
        "--limit",
        type=int_range(1),
        default=None,
        metavar="N",
        help="validate N dialogues (a sample by id hash)",
    )
    parser.add_argument("--out", type=Path, default=None, metavar="DIR", help="write results here")
    parser.add_argument(
        "--backend",
        default=None,
        metavar="SPEC",
        help="LLM backend for LLM judges/user/realizer (e.g. openai:gpt-4o-mini, hf:smollm2); "
        "alone it makes the judges the LLM's",
    )
    parser.add_argument(
        "--base-url", default=None, metavar="URL", help="endpoint of an openai: backend"
    )
    parser.add_argument(
        "--api-key-env", default=None, metavar="VAR", help="variable holding the API key"
    )
    parser.add_argument("--cache", default=None, metavar="FILE", help="record/replay cache")
    parser.add_argument("--cache-mode", choices=("rw", "replay", "off"), default="rw")
    parser.add_argument("--judges", choices=("embedded", "llm"), default=None)
    parser.add_argument("--user", default=None, metavar="PRESET", help="e.g. llm-hard, soft")
    parser.add_argument("--realizer", choices=("template", "llm"), default=None)
    parser.add_argument("--encoder", default=None, metavar="NAME", help="e.g. minilm, hashing")
    parser.add_argument(
        "--baseline",
        dest="baselines",
        action="append",
        default=None,
        metavar="AGENT",
        help="agent played on the same users (repeatable; default: scripted and random)",
    )
    parser.add_argument("--no-baselines", action="store_true", help="play no baseline agent")
    parser.add_argument(
        "--no-transcripts", action="store_true", help="skip judging the full real transcripts"
    )
    parser.add_argument(
        "--no-open-loop",
        action="store_true",
        help="skip replaying each baseline's turns to another user in the same situation",
    )
    parser.add_argument(
        "--no-labelled",
        action="store_true",
        help="skip replaying the human turns with the corpus's strategy labels read",
    )
    parser.add_argument("--seed", type=int_range(0), default=0, metavar="S")
    parser.add_argument(
        "--resamples", type=int_range(0), default=2000, metavar="N", help="bootstrap resamples"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress lines")
    return parser


def write_result(result: dict[str, Any], out_dir: Path) -> None:
    """Writes ``validity.json`` and ``dialogues.jsonl`` into ``out_dir`` (created)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = {k: v for k, v in result.items() if k != "dialogues"}
    write_json(out_dir / RESULT_FILE, summary)
    with (out_dir / DIALOGUES_FILE).open("w", encoding="utf-8") as handle:
        for row in result["dialogues"]:
            handle.write(json.dumps(row, sort_keys=True) + "\n")


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Runs ``validate`` from parsed arguments; 0 when done.

    Raises:
        ValueError: Bad arguments or no usable dialogue (a usage error of the CLI).
    """
    from dialogue_gym.validity.runner import format_report, validate

    options = {}
    if args.base_url is not None:
        options["base_url"] = args.base_url
    if args.api_key_env is not None:
        options["api_key_env"] = args.api_key_env
    if options and args.backend is None:
        raise ValueError("--base-url/--api-key-env need --backend SPEC")
    if args.no_baselines:
        baselines: tuple[str, ...] = ()
    else:
        baselines = tuple(args.baselines or ("scripted", "random"))
    result = validate(
        args.env_id,
        args.data,
        split=args.split,
        limit=args.limit,
        backend=args.backend,
        backend_options=options,
        backend_cache=args.cache,
        cache_mode=args.cache_mode,
        judges=args.judges,
        user=args.user,
        realizer=args.realizer,
        encoder=args.encoder,
        baselines=baselines,
        seed=args.seed,
        n_resamples=args.resamples,
        judge_transcripts=not args.no_transcripts,
        open_loop=not args.no_open_loop,
        labelled=not args.no_labelled,
        progress=None if args.no_progress else _progress,
    )
    format_report(result, out)
    if args.out is not None:
        write_result(result, args.out)
        print(f"wrote {args.out / RESULT_FILE} and {args.out / DIALOGUES_FILE}", file=out)
    return 0


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
