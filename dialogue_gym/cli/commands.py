"""The ``dialogue-gym`` command line: ``list``, ``info``, ``eval``, ``play``, ``validate`` ...

Examples::

    dialogue-gym list
    dialogue-gym info P4G-hard
    dialogue-gym eval P4G-soft P4G-hard --agent scripted --agent pushy --episodes 50
    dialogue-gym play P4G-hard --seed 3
    dialogue-gym play P4G-hard --seed 3 --transcript game.txt --append "Hello!"   # turn by turn
    dialogue-gym annotate esconv --split train --backend openai:gpt-4o-2024-08-06
    dialogue-gym train planner --task P4G --out runs/planner-p4g   # `train` lists trainers
    dialogue-gym report runs/x                # runs/x/report.html; --format md|csv for tables
    dialogue-gym validate P4G-hard --data DIR --split valid,test   # agreement with real people

Errors print one line to stderr, never a traceback. Exit status:

* ``0`` — done (some episodes may be errored: they are counted and listed);
* ``1`` — ``eval``: every episode of the call is errored (nothing was measured);
* ``2`` — a usage error or a refusal before anything is played: an unknown env id or agent,
  bad arguments or agent options, a bad checkpoint or cache file, an ``--out`` that is
  read-only, in use by another evaluation, holds episodes played with other options, or has
  a corrupt ``episodes.jsonl`` line;
* ``3`` — ``eval`` stopped because a result file could not be written (e.g. disk full); the
  finished episodes are kept and rerunning the same command resumes;
* ``130`` — interrupted (Ctrl-C); ``143`` — terminated (``SIGTERM``). ``eval`` exits within
  about a second: the finished episodes are kept, no new episode starts, and the episodes in
  flight are dropped without waiting for their requests (they play again on resume). A second
  Ctrl-C (or ``SIGTERM``) while it stops exits at once, with the same status;
* ``141`` — the reader of the output went away (``dialogue-gym list | head``); nothing else
  is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import difflib
import os
import shlex
import signal
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TextIO

from dialogue_gym import metrics
from dialogue_gym.argtypes import int_range
from dialogue_gym.backends.cache import CacheFileError
from dialogue_gym.cli.play import play
from dialogue_gym.cli.play_replay import read_transcript, replay
from dialogue_gym.data import cli as data_cli
from dialogue_gym.env.registry import RegistryError, make, pprint_registry, spec
from dialogue_gym.evaluation.agents import (
    AgentResolutionError,
    available_agents,
    parse_agent_option,
)
from dialogue_gym.evaluation.journal import JournalWriteError
from dialogue_gym.evaluation.run import EPISODES_FILE, MAX_EPISODES, SUMMARY_FILE, evaluate
from dialogue_gym.mentalizers import annotate as annotate_cli
from dialogue_gym.report import cli as report_cli
from dialogue_gym.validity import cli as validity_cli

__all__ = ["main"]

TRAINER_GROUP = "dialogue_gym.trainers"
"""Entry-point group of ``dialogue-gym train`` trainers: ``main(argv, prog) -> int``."""

USAGE_ERRORS = (
    RegistryError,
    AgentResolutionError,
    FileNotFoundError,
    ValueError,
    TypeError,
    CacheFileError,
)
"""Exceptions reported as a one-line usage error (exit status 2)."""


EXIT_ALL_ERRORED = 1
EXIT_USAGE = 2
EXIT_WRITE_FAILED = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool killed by it


class Terminated(KeyboardInterrupt):
    """``SIGTERM`` during ``eval``: stops the run the way Ctrl-C does (exit status 143)."""


def _exit_status(signum: int) -> int:
    return EXIT_TERMINATED if signum == signal.SIGTERM else EXIT_INTERRUPTED


@contextlib.contextmanager
def _signals_stop_the_run() -> Iterator[None]:
    """Ctrl-C and ``SIGTERM`` stop the run; a second one while it stops exits at once.

    The first signal raises ``KeyboardInterrupt`` (:class:`Terminated` for ``SIGTERM``) in
    the main thread, so the cleanup runs: the finished episodes are written, Ray and the lock
    are released. A second signal during that cleanup ends the process on the spot
    (``os._exit``, status 130 or 143) with one line on stderr: no traceback, nothing left
    waiting. A record being written then may be cut short; the next run cuts that line off
    and plays its episode again (:mod:`dialogue_gym.evaluation.journal`). Once a signal came, the
    handler stays for the rest of the process, which is ending. An inherited "ignore" of
    ``SIGINT`` (a background job of a shell without job control) is kept.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal stopping
        if stopping:
            os.write(2, b"\ndialogue-gym: stopped at once (second signal)\n")
            os._exit(_exit_status(signum))
        stopping = True
        raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt

    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        if not stopping:
            for signum, before in previous.items():
                signal.signal(signum, before)


# -- argument types ----------------------------------------------------------------------------


_episodes = int_range(1, MAX_EPISODES)
_positive = int_range(1)
_seed = int_range(0)


ENCODER_HELP = "minilm, hashing or static (default: the env's, minilm)"
ENV_ID_HELP = "a registered env id such as P4G-hard (see `dialogue-gym list`)"
ENV_OPTION_HELP = (
    "keyword argument for make(), the value read as JSON or a Python literal, else as text "
    "(repeatable; e.g. judges=llm, backend=openai:MODEL, max_exchanges=10, user=soft); "
    "checked before anything is written"
)
THREADS_HELP = (
    "torch intra-op threads for the small encoder (default: 1 unless DIALOGUE_GYM_THREADS or "
    "OMP_NUM_THREADS is set)"
)


def _add_env_options(command: argparse.ArgumentParser) -> None:
    """Adds the ``make`` overrides of a command that builds envs (read by :func:`_env_kwargs`)."""
    command.add_argument("--encoder", default=None, metavar="NAME", help=ENCODER_HELP)
    command.add_argument("--threads", type=_positive, default=None, metavar="N", help=THREADS_HELP)
    command.add_argument(
        "--env-option",
        dest="env_options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=ENV_OPTION_HELP,
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="dialogue-gym",
        description="Proactive-dialogue environments with hidden user states.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    commands.add_parser(
        "list",
        help="list the registered environments and agents",
        description="List the registered environments (with their task and user) and agents.",
    )

    info = commands.add_parser("info", help="describe one environment")
    info.add_argument("env_id", metavar="ID", help=ENV_ID_HELP)
    _add_env_options(info)

    ev = commands.add_parser("eval", help="evaluate agents on environments")
    ev.add_argument("env_ids", metavar="ID", nargs="+", help=ENV_ID_HELP + " (one or more)")
    ev.add_argument(
        "--agent",
        dest="agents",
        action="append",
        required=True,
        metavar="NAME",
        help="agent name, 'openai:MODEL', 'module:Class' or 'file.py:Class' (repeatable)",
    )
    ev.add_argument(
        "--episodes",
        type=_episodes,
        default=100,
        metavar="N",
        help=f"episodes per agent and env, 1..{MAX_EPISODES:,} (default: 100)",
    )
    ev.add_argument("--seed", type=_seed, default=0, metavar="S", help="seed of episode 0")
    ev.add_argument(
        "--seeds",
        type=_seed,
        nargs="+",
        default=None,
        metavar="S",
        help="several base seeds, each playing --episodes episodes (e.g. 0 1000 2000)",
    )
    ev.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="results directory; rerun with the same DIR to resume (default: runs/<timestamp>)",
    )
    _add_env_options(ev)
    ev.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    ev.add_argument(
        "--concurrency",
        type=_positive,
        default=1,
        metavar="N",
        help="episodes played at once (threads; for LLM-backed components), "
        "or the number of Ray workers with --executor ray",
    )
    ev.add_argument(
        "--num-envs",
        type=_positive,
        default=1,
        metavar="N",
        help="play N episodes at once on a vector env (batched encoding, coalesced LLM calls); "
        "local executor with --concurrency 1 only",
    )
    ev.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="where episodes run: this process, or Ray workers (pip install 'dialogue-gym[ray]')",
    )
    ev.add_argument(
        "--ray-address",
        default=None,
        metavar="ADDR",
        help="Ray cluster to join (default: start or reuse a local Ray instance)",
    )
    ev.add_argument(
        "--base-url",
        default=None,
        metavar="URL",
        help="endpoint of the openai:MODEL agents, e.g. http://127.0.0.1:8000/v1 (the key "
        "comes from $OPENAI_API_KEY); other agents get it only if their factory names base_url",
    )
    ev.add_argument(
        "--agent-option",
        dest="agent_options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword argument for every agent's factory, the value read as JSON or a Python "
        "literal, else as text (repeatable; e.g. show_estimate=true, temperature=0.2)",
    )
    ev.add_argument(
        "--retry-errored",
        action="store_true",
        help="when resuming, play the episodes recorded as errored again (the new record "
        "replaces the errored one)",
    )

    play = commands.add_parser(
        "play",
        help="play the system seat yourself in the terminal, or turn by turn from a file",
        description="Play the system seat: type the turns, or keep them in --transcript FILE "
        "(one per line) and run once per turn; the hidden state is revealed at the end.",
    )
    play.add_argument("env_id", metavar="ID", help=ENV_ID_HELP)
    play.add_argument("--seed", type=_seed, default=0, metavar="S", help="episode seed")
    play.add_argument(
        "--transcript",
        type=Path,
        default=None,
        metavar="FILE",
        help="replay the system turns of FILE (one per line; '#' lines and blank lines "
        "skipped; *.jsonl: one JSON string a line; *.json: a list of strings; missing: not "
        "started) and print the user's next reply or the outcome",
    )
    play.add_argument(
        "--append",
        default=None,
        metavar="TEXT",
        help="with --transcript: add TEXT to FILE as the next system turn, then replay",
    )
    play.add_argument(
        "--no-reveal",
        action="store_true",
        help="do not print the user's hidden state when the episode ends (blind play)",
    )
    _add_env_options(play)

    data_cli.add_parser(commands)  # `dialogue-gym data info|check|fetch`
    annotate_cli.add_parser(commands)  # `dialogue-gym annotate CORPUS --backend SPEC`

    train = commands.add_parser(
        "train", help=f"train an agent (trainers of the entry-point group {TRAINER_GROUP})"
    )
    train.add_argument("trainer", nargs="?", metavar="TRAINER", help="omit to list the trainers")
    train.add_argument("args", nargs=argparse.REMAINDER, metavar="...", help="see TRAINER --help")
    report_cli.add_parser(commands)  # `dialogue-gym report RUN_DIR [RUN_DIR2]`
    validity_cli.add_parser(commands)  # `dialogue-gym validate ENV_ID --data PATH`
    return parser


# -- commands ----------------------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    print("Environments:", file=out)
    pprint_registry(file=out)
    agents = available_agents()
    print("\nAgents:", file=out)
    if not agents:
        print("  (none registered: pip install -e ./agents)", file=out)
    for name, target in sorted(agents.items()):
        print(f"  {name:<24} {target}", file=out)
    print("  (any 'module:Class' or 'path/to/file.py:Class' also works)", file=out)
    return 0


def _fmt_kwargs(kwargs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) or "(none)"


def _cmd_info(args: argparse.Namespace, out: TextIO) -> int:
    env_spec = spec(args.env_id)
    env = make(env_spec.id, **_env_kwargs(args))
    base = env.unwrapped
    card = base.card

    def show(label: str, value: Any) -> None:
        print(f"{label + ':':<21} {value}", file=out)

    show("id", env_spec.id)
    show("description", env_spec.description or "-")
    show("kwargs", _fmt_kwargs(env_spec.kwargs))
    show("task", f"{card.title} ({card.id})")
    show("goal", card.goal)
    show("roles", f"system={card.system_role}, user={card.user_role}")
    show("strategies", ", ".join(card.strategy_names))
    show("concerns", ", ".join(f"{c.id} ({c.facet})" for c in card.concerns))
    t = card.target
    show("target belief", t.belief)
    show("target desire", t.desire)
    show("target intention", t.intention)
    show(
        "target scalars",
        f"receptivity={t.receptivity:.2f} confidence={t.confidence:.2f} valence={t.valence:+.2f}",
    )
    show("max exchanges", getattr(base, "max_exchanges", card.max_exchanges))
    show("encoder", getattr(base.encoder, "name", type(base.encoder).__name__))
    for seat in env.possible_agents:
        show(f"action ({seat})", env.action_space(seat))
    for seat in env.possible_agents:
        show(f"observation ({seat})", env.observation_space(seat))
    env.close()
    return 0


def _env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The ``make`` overrides of ``eval``/``play``: ``--env-option``s, then the shortcuts."""
    kwargs: dict[str, Any] = {}
    for option in args.env_options:
        key, value = parse_agent_option(option)
        kwargs[key] = value
    if args.encoder is not None:
        kwargs["encoder"] = args.encoder
    if args.threads is not None:
        kwargs["threads"] = args.threads
    return kwargs


def _cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    run_dir = args.out
    if run_dir is None:
        run_dir = Path("runs") / _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    env_kwargs = _env_kwargs(args)
    agent_kwargs = dict(parse_agent_option(option) for option in args.agent_options)
    if args.base_url is not None:
        agent_kwargs["base_url"] = args.base_url
    try:
        with _signals_stop_the_run():
            result = evaluate(
                args.agents,
                args.env_ids,
                episodes=args.episodes,
                seed=args.seed,
                out=run_dir,
                env_kwargs=env_kwargs,
                agent_kwargs=agent_kwargs,
                progress=not args.no_progress,
                concurrency=args.concurrency,
                seeds=args.seeds,
                executor=args.executor,
                ray_address=args.ray_address,
                num_envs=args.num_envs,
                retry_errored=args.retry_errored,
                keep_records=False,  # memory stays flat however long the run
            )
    except KeyboardInterrupt as exc:
        hint = f"the finished episodes are in {run_dir}; rerun the same command to resume"
        raise type(exc)(hint) from None
    print(result.table(), file=out)
    for agent, tasks in result.worst_case().items():
        for task, worst in tasks.items():
            (sr_env, sr), (rc_env, rc) = worst["sr"], worst["rcsr"]
            sl_text = ""
            if "sl" in worst:
                sl_env, sl = worst["sl"]
                sl_text = f", SL {sl:.2f} ({sl_env})"
            print(
                f"worst case over {task} users, {agent}: SR {sr:.2f} ({sr_env}){sl_text}, "
                f"RCSR {rc:.2f} ({rc_env})",
                file=out,
            )
    print(
        f"\n95% percentile-bootstrap CIs over episodes ({metrics.N_BOOTSTRAP:,} resamples); "
        f"RCSR uses tau_q={metrics.TAU_Q}.",
        file=out,
    )
    if any("sl" in row for row in result.summaries):
        print(
            "SL: sale-to-list ratio (p_deal - p_listing) / (p_buyer_target - p_listing), 0 "
            "without a deal; negotiation agents are ranked by it.",
            file=out,
        )
    print(f"Episodes: {run_dir / EPISODES_FILE}", file=out)
    print(f"Summary:  {run_dir / SUMMARY_FILE}", file=out)
    measured = sum(int(row["n"]) for row in result.summaries)
    errored = sum(int(row["n_errored"]) for row in result.summaries)
    if errored and not measured:
        first = next((r.get("error") for r in result.records if r.get("errored")), None)
        print(
            f"dialogue-gym eval: error: every episode errored ({errored}); first error: "
            f"{first}; the records hold each error and traceback (rerun with --retry-errored "
            "once fixed)",
            file=sys.stderr,
        )
        return EXIT_ALL_ERRORED
    return 0


def _cmd_play(args: argparse.Namespace, out: TextIO) -> int:
    if args.transcript is None:
        if args.append is not None:
            raise ValueError("--append needs --transcript FILE")
        env = make(args.env_id, **{"privileged": True, **_env_kwargs(args)})
        return play(env, args.env_id, args.seed, out, show_hidden=not args.no_reveal)
    transcript = read_transcript(args.transcript, args.append)  # refused before make()
    env = make(args.env_id, **{"privileged": True, **_env_kwargs(args)})
    again = ["dialogue-gym", "play", args.env_id, "--seed", str(args.seed)]
    again += ["--transcript", str(args.transcript)]
    again += [f"--env-option={option}" for option in args.env_options]
    again += [] if args.encoder is None else ["--encoder", args.encoder]
    again += [] if args.threads is None else ["--threads", str(args.threads)]
    again += ["--no-reveal"] if args.no_reveal else []
    again = [shlex.quote(word) for word in again]
    return replay(
        env, args.env_id, args.seed, transcript, out, again=again, show_hidden=not args.no_reveal
    )


def _cmd_train(args: argparse.Namespace, out: TextIO) -> int:
    """Lists the trainers, or runs one with the remaining arguments (its own parser)."""
    trainers = {ep.name: ep for ep in entry_points(group=TRAINER_GROUP)}
    if args.trainer is None:
        print("Trainers:", file=out)
        if not trainers:
            print("  (none registered: pip install -e ./agents)", file=out)
        for name, target in sorted(trainers.items()):
            print(f"  {name:<24} {target.value}", file=out)
        print("Options of one: dialogue-gym train TRAINER --help", file=out)
        return 0
    if args.trainer not in trainers:
        known = ", ".join(sorted(trainers)) or "none (pip install -e ./agents)"
        raise ValueError(f"unknown trainer {args.trainer!r}; registered trainers: {known}")
    trainer_main = trainers[args.trainer].load()
    try:
        return int(trainer_main(list(args.args), prog=f"dialogue-gym train {args.trainer}") or 0)
    except SystemExit as exc:  # the trainer's argparse: --help (0) or a usage error (2)
        return exc.code if isinstance(exc.code, int) else 2


_COMMANDS = {
    "train": _cmd_train,
    "list": _cmd_list,
    "info": _cmd_info,
    "eval": _cmd_eval,
    "play": _cmd_play,
    "data": data_cli.run,
    "annotate": annotate_cli.run,
    "report": report_cli.run,
    "validate": validity_cli.run,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status (see the module docstring): 0 on success, 1 when every episode of an
        ``eval`` errored, 2 on a usage error, 3 when a result file could not be written,
        130 on Ctrl-C, 143 on ``SIGTERM``.
    """
    parser = _parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            _unknown_arguments(parser, args, unknown)
    except SystemExit as exc:  # argparse has printed its message
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _COMMANDS[args.command](args, sys.stdout)
    except USAGE_ERRORS as exc:
        _error(args.command, exc)
        return EXIT_USAGE
    except JournalWriteError as exc:
        _error(args.command, exc)
        return EXIT_WRITE_FAILED
    except KeyboardInterrupt as exc:
        terminated = isinstance(exc, Terminated)
        what = "terminated" if terminated else "interrupted"
        print(f"\n{what}: {exc}" if str(exc) else f"\n{what}", file=sys.stderr)
        return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``dialogue-gym list | head``): stop quietly, like other Unix
        # tools, and keep Python from reporting the failed flush of stdout at exit.
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _unknown_arguments(
    parser: argparse.ArgumentParser, args: argparse.Namespace, unknown: Sequence[str]
) -> None:
    """Refuses unknown arguments with the subcommand's usage and a "did you mean" (exits 2)."""
    command = getattr(args, "command", None)
    sub = _subparser(parser, command) if command else None
    target = sub or parser
    options = [o for action in target._actions for o in action.option_strings]
    hints = []
    for word in unknown:
        name = word.split("=", 1)[0]
        close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
        if name.startswith("-") and close:
            hints.append(f"{word!r} (did you mean {close[0]}?)")
        else:
            hints.append(repr(word))
    target.error("unrecognized arguments: " + ", ".join(hints))


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(command)
            return found if isinstance(found, argparse.ArgumentParser) else None
    return None


def _error(command: str, exc: BaseException) -> None:
    message = " ".join(str(exc).split()) or type(exc).__name__
    print(f"dialogue-gym {command}: error: {message}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
