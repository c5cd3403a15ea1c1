"""The ``dialogue-gym data`` command: ``info``, ``check``, ``fetch`` and ``fit``.

Examples::

    dialogue-gym data info --data /data            # what is found where, with record counts
    dialogue-gym data check /data/esconv           # load every format found; exit 1 on errors
    dialogue-gym data check my_file.jsonl --corpus esconv
    dialogue-gym data fetch esconv --dest /data    # download the official release
    dialogue-gym data fit cb --data /data --out calibration   # train-split tables: cb.json

``fit`` runs the calibration fitters (:mod:`dialogue_gym.calibration`) on each corpus's TRAIN
split only and writes one ``<task>.json`` per task. ``info``, ``fetch`` and ``fit`` default
to ``$DIALOGUE_GYM_DATA`` for the data root. Failures print one message to stderr and exit
with status 1.
"""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from dialogue_gym.calibration import FITTERS, CalibrationError, fit, write_table
from dialogue_gym.data.corpora import (
    CORPORA,
    ENV_VAR,
    FOLDER_NAMES,
    TITLES,
    corpus_folder,
    corpus_name,
    data_root,
    find_corpora,
    formats_of,
    guess_corpus,
    load_corpus,
)
from dialogue_gym.data.errors import CorpusError, DataNotFoundError
from dialogue_gym.data.fetch import TIMEOUT_S, FetchError, fetch
from dialogue_gym.data.records import Dialogue

__all__ = ["add_parser", "main", "run"]

_SPLIT_ORDER = ("train", "valid", "test", "unsplit", "unknown")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``data`` command to an :mod:`argparse` sub-parser collection.

    Args:
        subparsers: What ``ArgumentParser.add_subparsers()`` returned.

    Returns:
        The ``data`` parser (its sub-command is ``args.data_command``).
    """
    data: argparse.ArgumentParser = subparsers.add_parser(
        "data",
        help="find, check and fetch the dialogue corpora",
        description="Find, check and fetch the dialogue corpora (P4G, ESConv, "
        "EmpatheticDialogues, CraigslistBargain).",
    )
    actions = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")

    info = actions.add_parser("info", help="what is found where under the data root")
    info.add_argument(
        "--data", metavar="DIR", default=None, help=f"data root (default: ${ENV_VAR})"
    )
    info.add_argument(
        "--no-counts", action="store_true", help="list the files only; do not load them"
    )

    check = actions.add_parser(
        "check", help="validate a data root, a corpus folder or one file (exit 1 on errors)"
    )
    check.add_argument("path", metavar="PATH", type=Path)
    check.add_argument(
        "--corpus",
        default=None,
        metavar="NAME",
        help=f"the corpus ({', '.join(CORPORA)}); default: told from the path or contents",
    )
    check.add_argument("--format", default=None, metavar="FORMAT", help="check one format only")

    get = actions.add_parser("fetch", help="download a corpus's official release (needs a network)")
    get.add_argument("name", metavar="NAME", help=f"the corpus ({', '.join(CORPORA)})")
    get.add_argument(
        "--dest", metavar="DIR", default=None, help=f"data root to fill (default: ${ENV_VAR})"
    )
    get.add_argument("--force", action="store_true", help="download files already present again")
    get.add_argument(
        "--timeout",
        type=float,
        default=TIMEOUT_S,
        metavar="S",
        help=f"network timeout in seconds (default: {TIMEOUT_S:g})",
    )

    fitting = actions.add_parser(
        "fit", help="fit the calibration tables on the corpora's train splits (<task>.json)"
    )
    fitting.add_argument(
        "tasks",
        nargs="*",
        metavar="TASK",
        help=f"tasks to fit (default: all: {', '.join(sorted(FITTERS))})",
    )
    fitting.add_argument(
        "--data", metavar="PATH", default=None, help=f"data root (default: ${ENV_VAR})"
    )
    fitting.add_argument(
        "--out", metavar="DIR", type=Path, default=Path("."), help="where to write (default: .)"
    )
    return data


# -- helpers ---------------------------------------------------------------------------------------


def _fail(action: str, message: str) -> int:
    print(f"dialogue-gym data {action}: error: {message}", file=sys.stderr)
    return 1


def _summary(dialogues: Sequence[Dialogue]) -> str:
    splits = collections.Counter(d.split for d in dialogues)
    order = [s for s in _SPLIT_ORDER if s in splits] + sorted(set(splits) - set(_SPLIT_ORDER))
    turns = sum(len(d.turns) for d in dialogues)
    by_split = ", ".join(f"{s} {splits[s]:,}" for s in order)
    what = "scenarios" if dialogues and turns == 0 else "dialogues"
    return f"{len(dialogues):,} {what}, {turns:,} turns [{by_split}]"


def _problems(dialogues: Sequence[Dialogue]) -> list[str]:
    problems = []
    counts = collections.Counter(d.id for d in dialogues)
    duplicated = [i for i, n in counts.items() if n > 1]
    if duplicated:
        problems.append(f"{len(duplicated)} duplicate dialogue id(s), e.g. {duplicated[0]!r}")
    if not dialogues:
        problems.append("no dialogues")
    return problems


def _files_line(files: Sequence[Path], base: Path) -> list[str]:
    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(base))
        except ValueError:
            return str(p)

    by_folder: dict[Path, list[Path]] = collections.defaultdict(list)
    for f in files:
        by_folder[f.parent].append(f)
    lines = []
    for folder, group in by_folder.items():
        if len(group) > 4:
            lines.append(f"{rel(folder)}/ ({len(group)} files: {group[0].name} … {group[-1].name})")
        else:
            lines.extend(rel(f) for f in group)
    return lines


# -- data info -------------------------------------------------------------------------------------


def _info(args: argparse.Namespace, out: TextIO) -> int:
    try:
        root = data_root(args.data)
        found = find_corpora(root)
    except DataNotFoundError as exc:
        return _fail("info", str(exc))
    source = "--data" if args.data else f"${ENV_VAR}"
    print(f"Data root: {root} (from {source})", file=out)
    errors = 0
    for name, entry in found.items():
        print(f"\n{name}: {TITLES[name]}", file=out)
        if entry.path is None:
            print(
                f"  not found: put its files in {root / FOLDER_NAMES[name][0]} "
                f"(or fetch them: dialogue-gym data fetch {name} --dest {root})",
                file=out,
            )
            continue
        print(f"  folder: {entry.path}", file=out)
        if not entry.formats:
            print("  no loadable files found in it", file=out)
        for fmt, files in entry.formats.items():
            counts = ""
            if not args.no_counts:
                try:
                    dialogues = CORPORA[name].load(entry.path, fmt)
                    counts = _summary(dialogues)
                except (CorpusError, OSError, ValueError) as exc:
                    errors += 1
                    counts = f"ERROR: {exc}"
            print(f"  {fmt:<20} {counts}".rstrip(), file=out)
            for line in _files_line(files, entry.path):
                print(f"  {'':<20} {line}", file=out)
        for note in entry.notes:
            print(f"  note: {note}", file=out)
    return 1 if errors else 0


# -- data check ------------------------------------------------------------------------------------


def _check_one(name: str, path: Path, fmt: str | None, out: TextIO) -> bool:
    module = CORPORA[name]
    label = f"{name}/{fmt}" if fmt else name
    try:
        if fmt is None and path.is_file():
            fmt = module.format_of(path)
            label = f"{name}/{fmt}"
        dialogues = module.load(path, fmt)
    except (CorpusError, OSError, ValueError) as exc:
        print(f"FAIL  {label}: {exc}", file=out)
        return False
    problems = _problems(dialogues)
    if problems:
        print(f"FAIL  {label}: {'; '.join(problems)}", file=out)
        return False
    print(f"ok    {label}: {_summary(dialogues)}", file=out)
    return True


def _check(args: argparse.Namespace, out: TextIO) -> int:
    path: Path = args.path.expanduser()
    if not path.exists():
        return _fail("check", f"{path}: no such file or folder")
    try:
        corpus = corpus_name(args.corpus) if args.corpus else None
    except ValueError as exc:
        return _fail("check", str(exc))
    jobs: list[tuple[str, Path, str | None]] = []
    if path.is_dir() and corpus is None:
        # A data root holding corpus folders?
        for name in CORPORA:
            folder = corpus_folder(path, name)
            if folder is not None and folder != path:
                jobs.extend((name, folder, fmt) for fmt in formats_of(name, folder))
    if not jobs:
        try:
            corpus = corpus or guess_corpus(path)
        except (ValueError, OSError) as exc:
            return _fail("check", str(exc))
        if path.is_file():
            jobs.append((corpus, path, args.format))
        else:
            formats = [args.format] if args.format else list(formats_of(corpus, path))
            if not formats:
                return _fail("check", f"{path}: no {TITLES[corpus]} files found inside")
            jobs.extend((corpus, path, fmt) for fmt in formats)
    elif args.format:
        jobs = [job for job in jobs if job[2] == args.format]
    print(f"Checking {path}", file=out)
    failures = sum(not _check_one(name, where, fmt, out) for name, where, fmt in jobs)
    if failures:
        print(f"{failures} of {len(jobs)} check(s) failed", file=out)
        return 1
    print(f"all {len(jobs)} check(s) passed", file=out)
    return 0


# -- data fetch ------------------------------------------------------------------------------------


def _fetch(args: argparse.Namespace, out: TextIO) -> int:
    try:
        name = corpus_name(args.name)
    except ValueError as exc:
        return _fail("fetch", str(exc))
    dest = args.dest
    if dest is None:
        try:
            dest = data_root(None)
        except DataNotFoundError:
            return _fail("fetch", f"no destination: pass --dest DIR (or set ${ENV_VAR}=DIR)")
    try:
        files = fetch(
            name,
            dest,
            force=args.force,
            timeout=args.timeout,
            log=lambda line: print(line, file=out, flush=True),
        )
    except FetchError as exc:
        return _fail("fetch", str(exc))
    except OSError as exc:
        return _fail("fetch", f"cannot write to {dest}: {exc}")
    folder = Path(dest) / FOLDER_NAMES[name][0]
    print(
        f"{len(files)} file(s) in {folder}; check them: dialogue-gym data check {folder}", file=out
    )
    return 0


# -- data fit --------------------------------------------------------------------------------------


_MAX_SHOWN = 32
"""Longest list :func:`_numbers` prints in full."""


def _numbers(value: Any, depth: int = 0) -> str:
    """A short one-line rendering of a table's numbers (lists of floats at 3 places)."""
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, list) and len(value) > _MAX_SHOWN:
        return f"[{len(value):,} values]"  # a text reader's vocabulary and weights
    if isinstance(value, list):
        return "[" + ", ".join(_numbers(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_numbers(v, depth + 1)}" for k, v in value.items()) + "}"
    return str(value)


def _fit(args: argparse.Namespace, out: TextIO) -> int:
    tasks = list(dict.fromkeys(args.tasks)) or sorted(FITTERS)
    unknown = [t for t in tasks if t not in FITTERS]
    if unknown:
        return _fail("fit", f"no fitter for {unknown}; known: {sorted(FITTERS)}")
    for task in tasks:
        fitter = FITTERS[task]
        try:
            # The train split only: the loader assigns the splits, fit() refuses any other.
            dialogues = load_corpus(fitter.corpus, args.data, split="train", format=fitter.format)
            table = fit(task, dialogues)
            path = write_table(table, args.out)
        except (DataNotFoundError, CorpusError, CalibrationError, ValueError) as exc:
            return _fail("fit", f"{task}: {exc}")
        except OSError as exc:
            return _fail("fit", f"{task}: cannot write to {args.out}: {exc}")
        provenance = table["provenance"]
        print(
            f"{task}: {fitter.description}, fitted on {provenance['n_dialogues']:,} "
            f"{fitter.corpus} train records ({_summary(dialogues)}) -> {path}",
            file=out,
        )
        for key, value in table["parameters"].items():
            print(f"  {key}: {_numbers(value)}", file=out)
    return 0


_ACTIONS = {"info": _info, "check": _check, "fetch": _fetch, "fit": _fit}


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Runs a parsed ``data`` command.

    Args:
        args: The namespace from the parser made by :func:`add_parser`.
        out: Where the report goes (errors go to ``sys.stderr``).

    Returns:
        The exit status: 0 on success, 1 on failure.
    """
    return _ACTIONS[args.data_command](args, out)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``data`` on its own (``python -m dialogue_gym.data.cli info``)."""
    parser = argparse.ArgumentParser(prog="dialogue-gym")
    add_parser(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(["data", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    return run(args, sys.stdout)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
