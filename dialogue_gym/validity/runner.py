"""Human-replay validity: does the simulated world agree with what real people did?

For each held-out real dialogue with a known outcome (:mod:`dialogue_gym.validity.corpus`),
the env's user is pinned to the persona (P4G, ESConv) or seller listing (CraigslistBargain)
built from that very dialogue (:mod:`dialogue_gym.users.corpus`; ``reset(options=...)``), and

1. **human replay** — the real system-side turns are replayed one per exchange (at most the
   env's budget T, 8 by default; a dialogue with fewer system turns stops early) against the
   simulated user: simulated success, final progress s and final willingness (and, apart
   from the dynamics, the pinned user's starting willingness: what the persona alone says;
   apart from the persona, the change in willingness: what the replayed turns alone did);
2. **baselines** — ``scripted`` and ``random`` (by default) play the same pinned users with the
   same episode seeds; and, **open loop** (:mod:`dialogue_gym.validity.open_loop`), each
   baseline's turns are replayed as the human turns are, to a user they were not said to in
   the same situation: the next dialogue's user with the same situation (P4G: any; ESConv:
   the same emotion and problem type), or for a seller the same listing with another seller
   drawn (another seed). Replayed turns cannot answer what *this* user says, so the open-loop
   SR is what replay leaves of an agent that does: human replay is compared with it as well
   as with the closed-loop SR;
3. **labelled** (:mod:`dialogue_gym.validity.labelled`) — where the corpus labels the real
   system turns with strategies of the card (ESConv's supporter strategies, P4G's annotated
   persuasion acts), the human turns are replayed once more with the user reading those labels
   in place of its learned strategy reader: what perfect reading of strategies would change;
4. **judges on full real transcripts** — both sides real: every exchange is fed through the env
   in self-play (both seats external, no budget short of the whole dialogue), so the env's
   success judge (embedded or LLM) reads real text; judged success (at any exchange), its best
   score and, for deals, the judged utility.

:func:`validate` then reports, with bootstrap 95 % intervals and n, the AUC of each simulated
signal for the real success, Spearman's ρ with the real amount (donation, intensity fall,
utility), SR@T of human replay vs the baselines vs the real success rate, and the judges'
agreement and AUC — each next to a *text-only reference* (:mod:`dialogue_gym.validity.reference`)
from the same inputs: the replayed system turns for the replay cells, the real user turns for
the judge cells. For every arm it also reports the share of exchanges in which the user read a
reason (a turn addressing one of its concerns), pressure or an off-topic turn: why the arm's SR
is what it is (:mod:`dialogue_gym.validity.cells`).
"""

from __future__ import annotations

import functools
import hashlib
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from dialogue_gym.cards.task_plugin import plugin_of
from dialogue_gym.data import Dialogue, seeds_from
from dialogue_gym.env.dialogue_env import CORPORA
from dialogue_gym.env.registry import make
from dialogue_gym.judges.embedded import StateSuccessJudge
from dialogue_gym.validity import reference as ref
from dialogue_gym.validity.acts import predict_acts
from dialogue_gym.validity.cells import TARGETS, cells
from dialogue_gym.validity.corpus import (
    exchanges_of,
    load_held_out,
    load_train,
    outcome_of,
    parse_splits,
    side_text,
)
from dialogue_gym.validity.episodes import judge_full, play, transcript_reader
from dialogue_gym.validity.labelled import reading_labels, strategy_labels
from dialogue_gym.validity.open_loop import replay_open_loop
from dialogue_gym.validity.stats import Cell

__all__ = ["TARGETS", "format_report", "validate", "validate_dialogues"]

FULL_TRANSCRIPT_BUDGET = 1000
"""Exchange budget of the full-transcript env (the env's maximum)."""

Progress = Callable[[str], None]


def _pins(card: Any, dialogues: Sequence[Dialogue]) -> list[dict[str, Any] | None]:
    """``reset`` options pinning each dialogue's own user (``None``: cannot be built)."""
    from dialogue_gym.users.corpus import personas_from_seeds

    seeds = seeds_from(dialogues, card.goal)
    plugin = plugin_of(card)
    pins: list[dict[str, Any] | None] = []
    for seed in seeds:
        try:
            found = plugin.seed_users(card, [seed])
        except ValueError:  # the plug-in cannot build this seed's user (no usable prices)
            pins.append(None)
            continue
        name, items = found or ("persona", personas_from_seeds(card, [seed]))
        pins.append({name: items[0]})
    return pins


def _hash_key(dialogue_id: str) -> str:
    return hashlib.sha256(f"sample/{dialogue_id}".encode()).hexdigest()


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _reference_rows(
    dialogues: Sequence[Dialogue], budget: int
) -> dict[str, list[tuple[str, str, bool]]]:
    """``(id, text, label)`` rows of the two text-reference inputs."""
    rows: dict[str, list[tuple[str, str, bool]]] = {"system": [], "user": []}
    for d in dialogues:
        outcome = outcome_of(d)
        exchanges = exchanges_of(d)
        if outcome is None or not exchanges:
            continue
        rows["system"].append((d.id, side_text(exchanges, "system", budget), outcome.success))
        rows["user"].append((d.id, side_text(exchanges, "user"), outcome.success))
    return rows


def validate_dialogues(
    env_id: str,
    held_out: Sequence[Dialogue],
    train: Sequence[Dialogue] = (),
    *,
    env_options: Mapping[str, Any] | None = None,
    baselines: Sequence[str] = ("scripted", "random"),
    seed: int = 0,
    n_resamples: int = 2000,
    judge_transcripts: bool = True,
    open_loop: bool = True,
    labelled: bool = True,
    progress: Progress | None = _stderr,
) -> dict[str, Any]:
    """Runs the validity benchmark on given dialogues (see the module docstring).

    Args:
        env_id: A registered env of a task with a corpus (``P4G-hard``, ``ESConv-soft`` ...).
        held_out: The held-out dialogues (those without a known outcome or without system
            turns are counted and skipped).
        train: The train split's dialogues, for the text reference (never the held-out ones).
        env_options: Keyword arguments for ``make`` (``encoder``, ``judges``, ``backend``,
            ``user``, ``realizer``, ``success_judge`` ...).
        baselines: Agents played on the same pinned users.
        seed: Seed of episode 0 (dialogue ``i`` gets ``seed + i`` in every arm).
        n_resamples: Bootstrap resamples per cell.
        judge_transcripts: Also judge the full real transcripts.
        open_loop: Also replay each baseline's turns to another user in the same situation.
        labelled: Also replay the human turns with the corpus's strategy labels read in place
            of the user's learned reader, where the corpus labels them
            (:mod:`dialogue_gym.validity.labelled`).
        progress: Called with a progress line now and then (``None``: silent).

    Returns:
        A JSON-ready dict: ``env_id``, ``counts``, ``reference_modes``, ``cells`` (name →
        ``{"sim", "reference", "target", "met"}``) and ``dialogues`` (one row each).

    Raises:
        ValueError: The task has no corpus, an id is in both sets, or no dialogue is usable.
    """
    from dialogue_gym.evaluation.agents import make_agent

    options = dict(env_options or {})
    env = make(env_id, **options)
    card = env.card
    if card.id not in CORPORA:
        raise ValueError(
            f"{env_id}: task {card.id!r} has no corpus; corpora exist for {sorted(CORPORA)}"
        )
    overlap = {d.id for d in held_out} & {d.id for d in train}
    if overlap:
        raise ValueError(f"held-out dialogues in the train split: {sorted(overlap)[:5]}")
    full_env = None
    reader_name = None
    if judge_transcripts:
        full_options = {
            **options,
            "external": ("system", "user"),
            "max_exchanges": FULL_TRANSCRIPT_BUDGET,
        }
        reader = transcript_reader(card.id, options, train)
        if reader is not None:
            full_options["success_judge"] = functools.partial(StateSuccessJudge, text_reader=reader)
            reader_name = type(reader).__name__
        full_env = make(env_id, **full_options)
    agents = {name: make_agent(name, card) for name in baselines}
    usable = [d for d in held_out if outcome_of(d) is not None and exchanges_of(d)]
    pins = _pins(card, usable) if usable else []
    counts = {
        "held_out": len(held_out),
        "no_outcome": sum(outcome_of(d) is None for d in held_out),
        "no_system_turns": sum(outcome_of(d) is not None and not exchanges_of(d) for d in held_out),
        "no_user": sum(p is None for p in pins),
    }
    rows: list[dict[str, Any]] = []
    played: list[tuple[Dialogue, dict[str, Any], int]] = []  # each row's dialogue, pin, seed
    said: dict[str, list[list[str]]] = {name: [] for name in agents}
    started = time.monotonic()
    try:
        for index, (dialogue, pin) in enumerate(zip(usable, pins, strict=True)):
            if pin is None:
                continue
            outcome = outcome_of(dialogue)
            assert outcome is not None
            exchanges = exchanges_of(dialogue)
            episode_seed = seed + index
            by_agent: dict[str, Any] = {}
            for name, agent in agents.items():
                turns: list[str] = []  # what it said, for the open loop
                by_agent[name] = play(env, pin, episode_seed, agent=agent, said=turns)
                said[name].append(turns)
            texts = [s for s, _ in exchanges]
            row: dict[str, Any] = {
                "id": dialogue.id,
                "split": dialogue.split,
                "real_success": outcome.success,
                "real_amount": outcome.amount,
                "replay": play(env, pin, episode_seed, texts=texts),
                "baselines": by_agent,
            }
            labels = strategy_labels(card, dialogue, env.max_exchanges) if labelled else []
            if labels:
                with reading_labels(env, texts, labels):
                    row["replay_labelled"] = play(env, pin, episode_seed, texts=texts)
            if full_env is not None:
                row["full"] = judge_full(full_env, pin, episode_seed, exchanges)
            rows.append(row)
            played.append((dialogue, pin, episode_seed))
            done = index + 1
            if progress is not None and (done % 10 == 0 or done == len(usable)):
                elapsed = time.monotonic() - started
                eta = elapsed / done * (len(usable) - done)
                progress(
                    f"[{env_id}] {done}/{len(usable)} dialogues, {elapsed:.0f} s, ETA {eta:.0f} s"
                )
        if open_loop and agents and rows:
            replay_open_loop(env, rows, played, said, agents, env_id, progress)
    finally:
        for built in (env, full_env):
            if built is not None:
                built.close()
    if not rows:
        raise ValueError(
            f"{env_id}: no held-out dialogue has a known outcome, system turns and a user "
            f"({counts})"
        )
    validated_ids = {r["id"] for r in rows}
    validated = [d for d in usable if d.id in validated_ids]
    train_rows = _reference_rows(train, env.max_exchanges)
    test_rows = _reference_rows(validated, env.max_exchanges)
    predictions = {
        side: ref.predict_held_out(train_rows[side], test_rows[side]) for side in ("system", "user")
    }
    act_source, act_predictions = predict_acts(card, train, validated, env.max_exchanges)
    for row in rows:
        for side, name in (("system", "reference_replay"), ("user", "reference_user")):
            p = predictions[side].get(row["id"])
            row[name] = None if p is None else p.probability
        p = act_predictions.get(row["id"])
        row["reference_acts"] = None if p is None else p.probability
    figures = cells(card.id, env_id, rows, n_resamples, seed)
    return {
        "env_id": env_id,
        "task": card.id,
        "T": env.max_exchanges,
        "baselines": list(baselines),
        "counts": {**counts, "validated": len(rows)},
        "transcript_reader": reader_name,
        "reference_modes": {
            **{side: ref.modes(p) for side, p in predictions.items()},
            "acts": f"{act_source}, {ref.modes(act_predictions)}" if act_source else "none",
        },
        "cells": figures,
        "dialogues": rows,
    }


def validate(
    env_id: str,
    data: str | Path | None = None,
    *,
    split: str | Sequence[str] = "test",
    limit: int | None = None,
    backend: str | Any = None,
    backend_options: Mapping[str, Any] | None = None,
    backend_cache: str | Path | None = None,
    cache_mode: str = "rw",
    judges: str | None = None,
    user: str | None = None,
    realizer: str | None = None,
    encoder: str | None = None,
    baselines: Sequence[str] = ("scripted", "random"),
    seed: int = 0,
    n_resamples: int = 2000,
    judge_transcripts: bool = True,
    open_loop: bool = True,
    labelled: bool = True,
    progress: Progress | None = _stderr,
) -> dict[str, Any]:
    """Loads the held-out split(s) of the env's corpus and runs :func:`validate_dialogues`.

    Args:
        env_id: A registered env whose task has a corpus (P4G, ESConv, ED, CB).
        data: The data root or corpus folder (default: ``$DIALOGUE_GYM_DATA``).
        split: Held-out split(s): ``"test"``, ``"valid,test"``; ``"failed"`` adds ESConv's
            ``FailedESConv.json``. Never ``train``.
        limit: Validate N held-out dialogues only: the first N by a hash of their id (a
            deterministic sample that keeps the splits mixed), in loader order.
        backend: LLM backend spec or object for LLM judges / user / realizer. Given without
            ``judges``, ``user`` or ``realizer``, the judges are the LLM's.
        backend_options: Keyword arguments of the backend (``base_url``, ``api_key_env`` ...).
        backend_cache: Record/replay cache file of the backend's calls.
        cache_mode: ``"rw"``, ``"replay"`` or ``"off"``.
        judges: ``"embedded"`` or ``"llm"``.
        user: User override, e.g. ``"llm-hard"`` (default: the env's preset).
        realizer: ``"template"`` or ``"llm"``.
        encoder: Encoder name (default: the env's, MiniLM).
        baselines: Agents played on the same pinned users.
        seed: Seed of episode 0.
        n_resamples: Bootstrap resamples.
        judge_transcripts: Judge the full real transcripts too.
        open_loop: Also replay each baseline's turns to another user in the same situation.
        labelled: Also replay the human turns reading the corpus's strategy labels.
        progress: Progress callback (``None``: silent).

    Returns:
        See :func:`validate_dialogues`; adds ``splits``, ``data`` and the env options used.

    Raises:
        ValueError: Bad arguments, or no usable dialogue.
        DataNotFoundError: The corpus files are missing.
    """
    from dialogue_gym.env.registry import spec as env_spec

    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    splits = parse_splits(split)
    task = env_spec(env_id).id.split("-")[0]
    corpus = CORPORA.get(task)
    if corpus is None:
        raise ValueError(
            f"{env_id}: task {task!r} has no corpus; corpora exist for {sorted(CORPORA)}"
        )
    held_out = load_held_out(corpus, data, splits)
    if limit is not None and limit < len(held_out):
        # A sample by id hash, not the first N: the splits (e.g. ESConv's improved HF files
        # and its failed ones) stay mixed.
        chosen = set(sorted((d.id for d in held_out), key=_hash_key)[:limit])
        held_out = [d for d in held_out if d.id in chosen]
    train = load_train(corpus, data)
    options: dict[str, Any] = {}
    if encoder is not None:
        options["encoder"] = encoder
    if user is not None:
        options["user"] = user
    if realizer is not None:
        options["realizer"] = realizer
    if judges is not None:
        options["judges"] = judges
    built = None
    if backend is not None:
        from dialogue_gym.backends import make_backend

        if not ({"judges", "user", "realizer"} & set(options)):
            options["judges"] = "llm"
        if isinstance(backend, str):
            built = make_backend(
                backend, cache=backend_cache, cache_mode=cache_mode, **dict(backend_options or {})
            )
        options["backend"] = built if built is not None else backend
    try:
        result = validate_dialogues(
            env_id,
            held_out,
            train,
            env_options=options,
            baselines=baselines,
            seed=seed,
            n_resamples=n_resamples,
            judge_transcripts=judge_transcripts,
            open_loop=open_loop,
            labelled=labelled,
            progress=progress,
        )
    finally:
        close = getattr(built, "close", None)  # not part of the Backend protocol
        if built is not None and callable(close):
            close()
    shown = {k: (v if isinstance(v, str) else type(v).__name__) for k, v in options.items()}
    if isinstance(backend, str):
        shown["backend"] = backend
    return {
        **result,
        "splits": list(splits),
        "data": None if data is None else str(data),
        "env_options": shown,
    }


def format_report(result: Mapping[str, Any], out: TextIO = sys.stdout) -> None:
    """Prints one validity result as a table: figure | simulator | text-only reference | target."""
    counts = result["counts"]
    modes = result.get("reference_modes", {})
    print(
        f"== {result['env_id']} (T={result['T']}; splits {','.join(result.get('splits', []))}; "
        f"{counts['validated']} validated of {counts['held_out']} held out: "
        f"{counts['no_outcome']} without outcome, {counts['no_system_turns']} without system "
        f"turns, {counts['no_user']} without a buildable user) ==",
        file=out,
    )
    print(
        f"   text-only reference: replay cells ← replayed system turns ({modes.get('system')}); "
        f"judge cells ← all real user turns ({modes.get('user')})",
        file=out,
    )
    if modes.get("acts", "none") != "none":
        print(
            f"   act-only reference (in the text-only column): the replayed system turns' acts "
            f"only ({modes['acts']})",
            file=out,
        )
    if result.get("transcript_reader"):
        print(
            f"   judge on real transcripts: external replies the card's cues cannot place are "
            f"read by {result['transcript_reader']} (fitted on the train split)",
            file=out,
        )
    width = max(len(name) for name in result["cells"]) + 2
    header = f"{'figure':<{width}}{'simulator':<30}{'text-only reference':<30}target"
    print(header, file=out)
    for name, cell in result["cells"].items():
        # A reference-only cell (the act-only reference) has no simulator figure to show.
        sim = "" if cell["sim"]["n"] == 0 else Cell(**_nan(cell["sim"])).format()
        reference = "" if cell["reference"] is None else Cell(**_nan(cell["reference"])).format()
        target = cell.get("target") or ""
        if cell.get("met") is not None:
            target += " MET" if cell["met"] else " MISSED"
        print(f"{name:<{width}}{sim:<30}{reference:<30}{target}", file=out)


def _nan(d: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (math.nan if v is None and k != "n" else v) for k, v in d.items()}
