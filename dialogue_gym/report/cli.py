"""Writing reports to files, and the ``dialogue-gym report`` command."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from dialogue_gym import metrics
from dialogue_gym.argtypes import int_range
from dialogue_gym.report.html import DEFAULT_MAX_TRANSCRIPTS, html_report
from dialogue_gym.report.load import ReportError
from dialogue_gym.report.tables import csv_table, markdown_table

__all__ = ["FORMATS", "add_parser", "default_output", "run", "write_report"]


FORMATS = ("html", "md", "csv")
"""Output formats of :func:`write_report` and ``dialogue-gym report --format``."""


def default_output(run_dirs: Sequence[str | Path], fmt: str = "html") -> Path:
    """Where a report goes when no ``out`` is given.

    ``RUN_DIR/report.<ext>`` for one run; ``RUN_DIR2/compare.<ext>`` for two (next to the
    newer run, without overwriting its own report).

    Args:
        run_dirs: The run directories.
        fmt: ``html``, ``md`` or ``csv``.

    Returns:
        The output path.
    """
    name = "report" if len(run_dirs) == 1 else "compare"
    return Path(run_dirs[-1]) / f"{name}.{fmt}"


def write_report(
    run_dirs: str | Path | Sequence[str | Path],
    out: str | Path | None = None,
    fmt: str = "html",
    max_transcripts: int = DEFAULT_MAX_TRANSCRIPTS,
    n_resamples: int = metrics.N_BOOTSTRAP,
    seed: int = 0,
) -> Path:
    """Writes the report of one or two runs to a file.

    Args:
        run_dirs: One or two run directories (with two: run 2 is compared with run 1).
        out: Output file; default :func:`default_output`. Parent folders are created; the file
            is replaced atomically.
        fmt: ``html`` (the full report), ``md`` or ``csv`` (the leaderboard table).
        max_transcripts: HTML only: transcripts shown per (agent, env id).
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        The path written.

    Raises:
        ReportError: Unknown ``fmt``, a run that cannot be read, or an output that cannot be
            written.
    """
    if fmt not in FORMATS:
        raise ReportError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    dirs = [run_dirs] if isinstance(run_dirs, (str, Path)) else list(run_dirs)
    if fmt == "html":
        text = html_report(dirs, max_transcripts, n_resamples, seed)
    elif fmt == "md":
        text = markdown_table(dirs, n_resamples, seed)
    else:
        text = csv_table(dirs, n_resamples, seed)
    path = Path(out) if out is not None else default_output(dirs, fmt)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        if tmp.parent.is_dir():
            tmp.unlink(missing_ok=True)
        raise ReportError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


_non_negative = int_range(0)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``report`` command to an :mod:`argparse` sub-parser collection.

    Args:
        subparsers: What ``ArgumentParser.add_subparsers()`` returned.

    Returns:
        The ``report`` parser.
    """
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="write an HTML report (or md/csv leaderboard) of one or two eval runs",
        description="Report on `dialogue-gym eval --out` directories: one self-contained HTML "
        "file (tables with 95% CIs, plots, transcripts), or the leaderboard as Markdown or "
        "CSV. With two runs, paired bootstrap differences run 2 - run 1.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", type=Path, help="an eval --out directory")
    parser.add_argument(
        "run_dir2",
        metavar="RUN_DIR2",
        type=Path,
        nargs="?",
        default=None,
        help="a second run, compared with the first (paired on episode seeds)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="output file (default: html to RUN_DIR/report.html, or RUN_DIR2/compare.html "
        "with two runs; md and csv to stdout)",
    )
    parser.add_argument("--format", choices=FORMATS, default="html", help="default: html")
    parser.add_argument(
        "--max-transcripts",
        type=_non_negative,
        default=DEFAULT_MAX_TRANSCRIPTS,
        metavar="N",
        help=f"transcripts shown per agent and env (default: {DEFAULT_MAX_TRANSCRIPTS})",
    )
    return parser


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Runs a parsed ``report`` command.

    Args:
        args: The namespace from the parser made by :func:`add_parser`.
        out: Where the table (md/csv without ``--out``) or the written path goes.

    Returns:
        0 (failures raise :class:`ReportError`, a usage error for the command line).
    """
    run_dirs = [args.run_dir] + ([args.run_dir2] if args.run_dir2 is not None else [])
    if args.format != "html" and args.out is None:
        table = markdown_table if args.format == "md" else csv_table
        out.write(table(run_dirs))
        return 0
    path = write_report(run_dirs, args.out, args.format, args.max_transcripts)
    print(f"Report: {path}", file=out)
    return 0
