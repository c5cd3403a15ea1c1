"""Silver BDI annotation of a corpus: ``dialogue-gym annotate`` (MASP Appendix B.1).

Every dialogue prefix that ends with a user turn (and each dialogue's initial prefix) is
annotated by the Oracle Belief Updater (:class:`~dialogue_gym.mentalizers.annotator.BDIAnnotator`)
and written to an output folder::

    OUT/silver.jsonl   one line per prefix: corpus, split, dialogue_id, prefix (number of
                       turns), n_turns and the six BDI fields
    OUT/prior.jsonl    one line per dialogue: its initial state (prefix 0, or 1 when the user
                       speaks first) and the profile text — the BDI prior
    OUT/errors.jsonl   prefixes whose annotation could not be read (retried on the next run)
    OUT/run.json       the backend and annotator configuration of the last run

Lines are appended and flushed one by one, so a crash loses nothing; rerunning with the same
folder skips every prefix already in ``silver.jsonl`` (resumable, no duplicates). Backend
failures stop the run (rerun to continue); unreadable annotations are logged and skipped.

The annotator sees the user's profile when the corpus has one (the P4G persuadee's survey,
ESConv's situation, ED's emotion and prompt, the CB seller's listing) — outcome fields such as
P4G's actual donation or ESConv's final emotion intensity are never shown. Pass
``use_profile=False`` for the history-only inputs.

Example::

    dialogue-gym annotate esconv --split train --backend openai:gpt-4o-2024-08-06
        --data ../shared/datasets --out silver/esconv --cache obu.sqlite   # one line
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.cards.task_plugin import CORPUS_CARDS as corpus_cards
from dialogue_gym.cards.task_plugin import plugin_for_corpus
from dialogue_gym.mentalizers.llm import PRIOR_FILE, SILVER_FILE, read_jsonl

if TYPE_CHECKING:
    from dialogue_gym.backends import Backend
    from dialogue_gym.data.records import Dialogue

__all__ = [
    "CORPUS_CARDS",
    "ERRORS_FILE",
    "RUN_FILE",
    "AnnotateResult",
    "add_parser",
    "annotate_corpus",
    "annotation_prefixes",
    "initial_prefix",
    "main",
    "prefix_history",
    "profile_text",
    "run",
]

ERRORS_FILE = "errors.jsonl"
RUN_FILE = "run.json"
CORPUS_CARDS = corpus_cards
"""Corpus name → the task card whose description, roles and hints the annotator uses: the
registered card whose ``[corpus] name`` it is
(:data:`dialogue_gym.cards.task_plugin.CORPUS_CARDS`)."""

_FIELDS = ("belief", "desire", "intention", "receptivity", "confidence", "valence")


@dataclasses.dataclass(frozen=True)
class AnnotateResult:
    """What an annotation run did.

    Attributes:
        out_dir: The output folder.
        dialogues: Dialogues visited.
        prefixes: Prefixes to annotate in them.
        written: Prefixes annotated in this run.
        skipped: Prefixes already annotated (resumed).
        failed: Prefixes whose annotation could not be read (see ``errors.jsonl``).
    """

    out_dir: Path
    dialogues: int
    prefixes: int
    written: int
    skipped: int
    failed: int

    @property
    def silver_path(self) -> Path:
        """``silver.jsonl``."""
        return self.out_dir / SILVER_FILE

    @property
    def prior_path(self) -> Path:
        """``prior.jsonl``."""
        return self.out_dir / PRIOR_FILE


# -- prefixes ----------------------------------------------------------------------------------


def initial_prefix(dialogue: Dialogue) -> int:
    """The prefix holding the user's initial state: 1 when the user speaks first, else 0."""
    return 1 if dialogue.turns and dialogue.turns[0].role == "user" else 0


def annotation_prefixes(dialogue: Dialogue) -> list[int]:
    """The prefix lengths to annotate: the initial one and every end of a user's run of turns."""
    turns = dialogue.turns
    start = initial_prefix(dialogue)
    prefixes = [start]
    for k in range(start + 1, len(turns) + 1):
        if turns[k - 1].role == "user" and (k == len(turns) or turns[k].role != "user"):
            prefixes.append(k)
    return prefixes


def prefix_history(dialogue: Dialogue, prefix: int) -> list[tuple[str, str]]:
    """The first ``prefix`` turns as ``(role, text)``; wordless events as ``[act]``."""
    history = []
    for turn in dialogue.turns[:prefix]:
        text = turn.text or (f"[{turn.act}]" if turn.act else "[no words]")
        history.append((turn.role, text))
    return history


# -- profiles ----------------------------------------------------------------------------------


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def profile_text(dialogue: Dialogue) -> str | None:
    """The user's profile as text for the annotator and the prior; ``None`` when there is none.

    The task's plug-in words its corpus's profile
    (:meth:`dialogue_gym.cards.task_plugin.TaskPlugin.profile_text`: P4G's survey, ESConv's and
    EmpatheticDialogues' situation, CraigslistBargain's listing); other corpora list the
    profile's and situation's fields. Outcome fields (P4G's donations, ESConv's survey scores)
    are left out.
    """
    text = plugin_for_corpus(dialogue.corpus).profile_text(dialogue)
    if text is None:
        profile, situation = dialogue.profile, dialogue.situation
        parts = [
            f"{key}: {_clip(str(value), 200)}"
            for key, value in {**dict(situation), **dict(profile)}.items()
            if isinstance(value, (str, int, float)) and str(value).strip()
        ]
        text = "; ".join(parts)
    return text or None


# -- the run -----------------------------------------------------------------------------------


def _append(path: Path, record: Mapping[str, Any]) -> None:
    """Appends one JSON line and flushes (repairing a line left unterminated by a crash)."""
    with path.open("a+b") as handle:
        handle.seek(0, 2)
        if handle.tell() > 0:
            handle.seek(-1, 2)
            if handle.read(1) != b"\n":
                handle.write(b"\n")
        handle.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        handle.flush()


def _card_for(corpus: str, card: TaskCard | str | None) -> TaskCard:
    if isinstance(card, TaskCard):
        return card
    name = card or CORPUS_CARDS.get(corpus)
    if name is None:
        raise ValueError(f"no task card for corpus {corpus!r}; pass card=")
    try:
        return load_card(name)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"annotating {corpus!r} needs the task card {name!r}, which is not installed "
            f"({exc}); pass card= with a card file"
        ) from exc


def annotate_corpus(
    corpus: str,
    path: str | Path | None,
    split: str | None,
    backend: Backend,
    out_dir: str | Path,
    limit: int | None = None,
    progress: bool = True,
    card: TaskCard | str | None = None,
    use_profile: bool = True,
    temperature: float = 0.2,
    max_tokens: int = 320,
) -> AnnotateResult:
    """Annotates a corpus split with silver BDI states (see the module docstring).

    Args:
        corpus: ``p4g``, ``esconv``, ``ed`` or ``cb`` (aliases accepted).
        path: Data root, corpus folder or file (default ``$DIALOGUE_GYM_DATA``).
        split: The split to annotate (``None``: all).
        backend: The text-generation backend (wrap it in the record/replay cache to make the
            run replayable).
        out_dir: Output folder (created); rerun with the same folder to resume.
        limit: Annotate only the first ``limit`` dialogues of the split.
        progress: Show a progress bar.
        card: The task card (default: the corpus's card, :data:`CORPUS_CARDS`).
        use_profile: Show the user's profile to the annotator.
        temperature: Annotator temperature (paper: 0.2).
        max_tokens: Annotator token budget (paper: 320).

    Returns:
        Counts of the run.

    Raises:
        BackendError: The backend failed (after its retries); rerun to resume.
        DataNotFoundError: No corpus files.
        ValueError: Unknown corpus or split, or ``limit < 1``.
    """
    from tqdm.auto import tqdm

    from dialogue_gym.data import corpus_name, load_corpus
    from dialogue_gym.mentalizers.annotator import AnnotationError, BDIAnnotator

    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    corpus = corpus_name(corpus)
    task_card = _card_for(corpus, card)
    dialogues = load_corpus(corpus, path, split=split)
    if limit is not None:
        dialogues = dialogues[:limit]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    silver_path, prior_path = out / SILVER_FILE, out / PRIOR_FILE
    errors_path = out / ERRORS_FILE
    done: dict[tuple[str, str, int], dict[str, Any]] = {
        (str(r.get("corpus")), str(r.get("dialogue_id")), int(r.get("prefix", -1))): r
        for r in read_jsonl(silver_path)
    }
    prior_done = {(str(r.get("corpus")), str(r.get("dialogue_id"))) for r in read_jsonl(prior_path)}
    annotator = BDIAnnotator(task_card, backend, temperature=temperature, max_tokens=max_tokens)
    (out / RUN_FILE).write_text(
        json.dumps(
            {
                "corpus": corpus,
                "split": split,
                "card": task_card.id,
                "backend": getattr(backend, "name", type(backend).__name__),
                "annotator": annotator.config(),
                "use_profile": use_profile,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    plan = [(d, annotation_prefixes(d)) for d in dialogues]
    total = sum(len(prefixes) for _, prefixes in plan)
    written = skipped = failed = 0
    bar = tqdm(total=total, desc=f"annotate {corpus}", unit="prefix", disable=not progress)
    try:
        for dialogue, prefixes in plan:
            profile = profile_text(dialogue)
            start = initial_prefix(dialogue)
            for prefix in prefixes:
                key = (corpus, dialogue.id, prefix)
                record = done.get(key)
                if record is not None:
                    skipped += 1
                else:
                    try:
                        bdi = annotator.annotate(
                            prefix_history(dialogue, prefix), profile if use_profile else None
                        )
                    except AnnotationError as exc:
                        failed += 1
                        _append(
                            errors_path,
                            {
                                "corpus": corpus,
                                "split": dialogue.split,
                                "dialogue_id": dialogue.id,
                                "prefix": prefix,
                                "error": str(exc),
                                "missing": list(exc.missing),
                                "output": exc.output,
                            },
                        )
                        bar.update(1)
                        continue
                    record = {
                        "corpus": corpus,
                        "split": dialogue.split,
                        "dialogue_id": dialogue.id,
                        "prefix": prefix,
                        "n_turns": len(dialogue.turns),
                        **bdi.to_dict(),
                    }
                    _append(silver_path, record)
                    done[key] = record
                    written += 1
                bar.update(1)
                if prefix == start and (corpus, dialogue.id) not in prior_done:
                    prior = {
                        "corpus": corpus,
                        "split": dialogue.split,
                        "dialogue_id": dialogue.id,
                        "prefix": prefix,
                        "profile": profile,
                        **{name: record[name] for name in _FIELDS},
                    }
                    _append(prior_path, prior)
                    prior_done.add((corpus, dialogue.id))
    finally:
        bar.close()
    return AnnotateResult(out, len(dialogues), total, written, skipped, failed)


# -- command line ------------------------------------------------------------------------------


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds the ``annotate`` command to an :mod:`argparse` sub-parser collection."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "annotate",
        help="annotate a corpus with silver BDI states (the LLM Oracle Belief Updater)",
        description="Annotate every user-turn prefix of a corpus split with the six BDI fields "
        "(silver.jsonl) and collect each dialogue's initial state (prior.jsonl). Resumable: "
        "rerun with the same --out.",
    )
    parser.add_argument("corpus", metavar="CORPUS", help="p4g, esconv, ed or cb")
    parser.add_argument("--split", default=None, metavar="S", help="train, valid or test")
    parser.add_argument(
        "--backend",
        required=True,
        metavar="SPEC",
        help="e.g. openai:gpt-4o-2024-08-06, hf:smollm2, hf:/path, fake",
    )
    parser.add_argument("--data", default=None, metavar="DIR", help="data root (or a file)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="output folder (default: silver/CORPUS); rerun with it to resume",
    )
    parser.add_argument("--limit", type=int, default=None, metavar="N", help="first N dialogues")
    parser.add_argument(
        "--cache", default=None, metavar="FILE", help="record/replay cache (SQLite file)"
    )
    parser.add_argument("--no-profile", action="store_true", help="hide the user's profile")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    return parser


def run(args: argparse.Namespace, out: TextIO) -> int:
    """Runs ``annotate`` from parsed arguments; 0 when every prefix was annotated, else 1.

    Raises:
        ValueError: Bad arguments (reported as a usage error by the CLI).
    """
    from dialogue_gym import backends
    from dialogue_gym.data import corpus_name

    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    corpus = corpus_name(args.corpus)
    out_dir = args.out if args.out is not None else Path("silver") / corpus
    try:
        backend = backends.make_backend(args.backend, cache=args.cache)
        result = annotate_corpus(
            corpus,
            args.data,
            args.split,
            backend,
            out_dir,
            limit=args.limit,
            progress=not args.no_progress,
            use_profile=not args.no_profile,
        )
    except backends.BackendError as exc:
        print(f"dialogue-gym annotate: backend error: {exc} (rerun to resume)", file=sys.stderr)
        return 1
    print(
        f"{result.dialogues} dialogues, {result.prefixes} prefixes: {result.written} annotated, "
        f"{result.skipped} already done, {result.failed} unreadable",
        file=out,
    )
    print(f"Silver: {result.silver_path}", file=out)
    print(f"Prior:  {result.prior_path}", file=out)
    if result.failed:
        print(f"Errors: {out_dir / ERRORS_FILE} (rerun to retry them)", file=out)
    return 1 if result.failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dialogue_gym.mentalizers.annotate CORPUS --backend SPEC ...``."""
    parser = argparse.ArgumentParser(prog="dialogue-gym")
    commands = parser.add_subparsers(dest="command", required=True)
    add_parser(commands)
    args = parser.parse_args(["annotate", *(sys.argv[1:] if argv is None else argv)])
    return run(args, sys.stdout)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
