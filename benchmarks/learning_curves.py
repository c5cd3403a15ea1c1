r"""Learning curves: SR and RCSR of each learning method against training exchanges.

For each hard env and method, with several training seeds; at each budget the deterministic
policy plays the evaluation seeds under the evaluation encoder:

* ``planner`` — planner-only (``dialogue-gym train planner``: its PPO hyperparameters, training
  env and reward), budgets in PPO steps (one step = one system exchange);
* ``masp`` — MASP (``dialogue-gym train masp`` with ``--view`` and ``--system-bc scripted``):
  mentalizers, the warm start, then alternating GRPO with the adversarial user policy;
* ``masp-system-only`` — the same, self-play against the hard simulator itself (no user policy);
* ``siavpo`` — SI-AVPO (``dialogue-gym train siavpo --view``), trained from scratch for each
  budget (its runs do not resume): its iterations are sized from the budget, so episodes that
  end early leave it a little short of it (the exchanges it used are reported); with
  ``--siavpo-option aopd=false --siavpo-option turn_credit=false``, outcome GRPO;

the MASP budgets count the system exchanges its GRPO updates learned from (the rollouts of its
system updates; the user's rollouts come on top). The lines that judge them are drawn with
them, on the same evaluation seeds: ``scripted`` and ``random``, and for the view's actions the
best fixed sequence (found on training seeds) and the clairvoyant ceiling
(:mod:`dialogue_gym.testing.move_search`; ``--no-bounds`` skips them). Reports the mean and the
spread over seeds at every budget, and training wall time per exchange (1 torch thread; a
resumed MASP run counts only the time this invocation trained).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/learning_curves.py --envs P4G-hard --seeds 0 1 2 \\
        --methods planner masp-system-only --budgets 25000 50000 100000 --out runs/curves

Writes ``curves.json`` and, with matplotlib, ``curves.svg`` (one panel per env) under ``--out``;
the run folders stay under ``--out/<method>/`` (a rerun reuses them). SFT is not trained on
exchanges: ``--sft`` adds it as lines, on the tasks that have a corpus: response retrieval on
the corpus (one index per training seed) and, on the concern view, the planner's supervised
phase alone on corpus turns labelled with their nearest listening move (deterministic and
sampled), and its variants as lines of their own (:data:`SFT_MOVES`: labels from the corpus's
acts, the successful dialogues only, a balanced loss); ``--sft-kinds`` picks some.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

import dialogue_gym
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.env.wrappers import ConcernActions, StrategyActions
from dialogue_gym.metrics import episode_sl, seed_level_ci
from dialogue_gym.testing.move_search import interface_lines, random_records, scripted_records
from dialogue_gym_agents.common.rl import episode_outcomes
from dialogue_gym_agents.common.seeding import derive_seed, isolated_global_rng, torch_threads
from dialogue_gym_agents.common.tracking import read_scalars
from dialogue_gym_agents.planner.train import PlannerConfig, build_ppo, make_training_env

HARD = ("P4G-hard", "ESConv-hard", "ED-hard", "Merchant-hard", "Courier-hard")
VIEWS = {"concern": ConcernActions, "strategy": StrategyActions}
METHODS = ("planner", "masp", "masp-system-only", "siavpo")
QUICK_MASP = {  # --quick: seconds, for smoke tests
    "silver_episodes": 16,
    "mentalizer_epochs": 2,
    "mentalizer_hidden": 32,
    "hidden_sizes": (16,),
    "bc_epochs": 2,
    "groups": 2,
    "group_size": 2,
    "update_epochs": 1,
}


def _outcome(records: list[dict[str, Any]], card: TaskCard) -> dict[str, float]:
    """SR and RCSR of finished episodes, and SL (buyer utility) on a deal task (CB).

    An episode without a deal has SL 0 (its record carries no ``utility``).
    """
    outcome = episode_outcomes(records, card.max_exchanges)
    result = {"sr": outcome["sr"], "rcsr": outcome["rcsr"]}
    if card.is_negotiation:
        result["sl"] = float(np.mean([episode_sl(r) or 0.0 for r in records] or [0.0]))
    return result


def user_types(env_id: str, worst_case: bool) -> list[str]:
    """The env ids a point is evaluated on: ``env_id``, and its task's soft users too.

    With ``worst_case`` the task's other user type (``P4G-soft`` beside ``P4G-hard``) joins,
    so each point also reports the worst case over the two (the MASP paper's worst-case SR).

    Raises:
        ValueError: ``worst_case`` for an env id whose soft counterpart is not registered.
    """
    if not worst_case:
        return [env_id]
    if "-hard" in env_id:
        other = env_id.replace("-hard", "-soft")
        try:
            dialogue_gym.spec(other)
            return [env_id, other]
        except KeyError:  # the registry's RegistryError: not registered
            pass
    raise ValueError(f"--worst-case: no soft user type registered beside {env_id!r}")


def worst_of(outcomes: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The first env's outcome, the others' under ``by_user`` and the worst SR/RCSR over all.

    ``outcomes`` maps env id → outcome, the trained env first; with one env it is returned
    as it is.
    """
    (_, outcome), *others = outcomes.items()
    if not others:
        return dict(outcome)
    return {
        **outcome,
        "by_user": {env_id: dict(o) for env_id, o in others},
        "worst_sr": min(o["sr"] for o in outcomes.values()),
        "worst_rcsr": min(o["rcsr"] for o in outcomes.values()),
    }


def _evaluation_envs(env_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """Env id → the env a point is evaluated on, for every user type (:func:`user_types`)."""
    return {
        user: dialogue_gym.make(user, encoder=args.eval_encoder)
        for user in user_types(env_id, args.worst_case)
    }


def _play(model: Any, view: Any, seeds: range) -> dict[str, float]:
    """SR and RCSR (and SL on CB) of the deterministic policy on ``seeds``."""
    records = []
    for seed in seeds:
        features, _ = view.reset(seed=seed)
        while True:
            action, _ = model.predict(features, deterministic=True)
            features, _, terminated, truncated, info = view.step(int(action))
            if terminated or truncated:
                records.append(info["episode"])
                break
    return _outcome(records, view.card)


def _play_text(agent: Any, env: Any, seeds: range) -> dict[str, float]:
    """SR and RCSR (and SL on CB) of an agent that plays through text on ``seeds``."""
    records = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        agent.reset(seed=seed)
        infos: dict[str, Any] = {}
        while env.agents:
            obs, _, _, _, infos = env.step({"system": agent.act(obs["system"])})
        records.append(infos["system"]["episode"])
    return _outcome(records, env.unwrapped.card)


def _play_everywhere(agent: Any, envs: dict[str, Any], seeds: range) -> dict[str, Any]:
    """:func:`_play_text` on every env of ``envs`` (the trained one first), as :func:`worst_of`."""
    return worst_of({env_id: _play_text(agent, env, seeds) for env_id, env in envs.items()})


REPORTED = (
    ("sr", "SR"),
    ("rcsr", "RCSR"),
    ("worst_sr", "worst SR"),
    ("worst_rcsr", "worst RCSR"),
    ("sl", "SL"),
)
"""The per-point figures printed, when every seed's point has them."""


def over_seeds(values: list[float]) -> str:
    """``mean [95 % t interval over seeds] (min-max)`` of one value per training seed."""
    interval = seed_level_ci(values)
    spread = f"({min(values):.2f}-{max(values):.2f})"
    if len(values) < 2:
        return f"{interval.mean:.2f} {spread}"
    return f"{interval.mean:.2f} [{interval.low:.2f}, {interval.high:.2f}] {spread}"


def _planner_curve(env_id: str, seed: int, args: argparse.Namespace, test: range) -> dict[str, Any]:
    """One PPO training run of the planner: the evaluated policy at every budget."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    config = PlannerConfig(
        out=str(args.out / "unused"),  # nothing is written: the curves are this script's output
        task=env_id.split("-")[0],
        seed=seed,
        encoder=args.encoder,
        reward=args.reward,
    )
    factory = lambda: make_training_env(  # noqa: E731 - SB3 wants a thunk per env
        env_id, args.encoder, reward=args.reward, view=args.view
    )
    evaluations = {
        user: VIEWS[args.view](env) for user, env in _evaluation_envs(env_id, args).items()
    }
    points, trained, seconds = [], 0, 0.0
    with isolated_global_rng(derive_seed(seed, "ppo")), torch_threads(1):
        envs = DummyVecEnv([factory] * config.n_envs)
        envs.seed(derive_seed(seed, "envs"))
        model = build_ppo(envs, config)
        for budget in sorted(args.budgets):
            started = time.perf_counter()
            model.learn(budget - trained, reset_num_timesteps=False)
            seconds += time.perf_counter() - started
            trained = budget
            outcomes = {user: _play(model, view, test) for user, view in evaluations.items()}
            points.append({"steps": budget, **worst_of(outcomes)})
            print(f"  {env_id} seed {seed} {budget:>7} steps: {points[-1]}", flush=True)
        envs.close()
    return {"seed": seed, "points": points, "seconds_per_step": seconds / max(trained, 1)}


def _label(method: str, args: argparse.Namespace) -> str:
    """A method's name with its ``--*-option`` settings (an ablation's curve and run folder)."""
    settings = args.siavpo_options if method == "siavpo" else args.masp_options
    if not settings:
        return method
    return f"{method}[{','.join(f'{k}={v}' for k, v in sorted(settings.items()))}]"


def _option(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` (the value read as JSON, else kept as a string)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key.replace("-", "_"), json.loads(value)
    except json.JSONDecodeError:
        return key.replace("-", "_"), value


def _check_fields(
    parser: argparse.ArgumentParser, flag: str, config: type, options: dict[str, Any]
) -> None:
    """Exit with a usage error naming the options that are not fields of ``config``."""
    unknown = sorted(set(options) - {field.name for field in dataclasses.fields(config)})
    if unknown:
        parser.error(f"{flag}: {config.__name__} has no field {', '.join(unknown)}")


def _masp_curve(
    env_id: str, seed: int, args: argparse.Namespace, test: range, method: str
) -> dict[str, Any]:
    """One MASP run, resumed budget after budget; the system exchanges count its updates'."""
    from dialogue_gym_agents.masp.agent import masp
    from dialogue_gym_agents.masp.config import MASPConfig
    from dialogue_gym_agents.masp.train import train_masp

    out = args.out / _label(method, args) / env_id / f"seed{seed}"
    settings: dict[str, Any] = {
        "task": env_id.split("-")[0],
        "out": out,
        "seed": seed,
        "encoder": args.encoder,
        "data": args.data,
        "view": args.view,
        "system_bc": "scripted",
        "opponent": "simulator" if method == "masp-system-only" else "policy",
        "keep_every": 10**6,  # only the last iteration is needed to resume
        "progress": False,
        "tensorboard": False,
        **(QUICK_MASP if args.quick else {}),
        **args.masp_options,
    }
    evaluations = _evaluation_envs(env_id, args)
    card = evaluations[env_id].unwrapped.card
    per_iteration = settings.get("groups", 8) * settings.get("group_size", 4) * card.max_exchanges
    points, iterations, seconds, trained = [], 0, 0.0, 0
    for budget in sorted(args.budgets):
        while trained < budget:
            # Episodes end early on success: ask for the bound, then measure what was used.
            iterations += max(1, -(-(budget - trained) // per_iteration))
            started = time.perf_counter()
            with torch_threads(1):
                train_masp(MASPConfig(**settings, iterations=iterations), stream=_Quiet())
            seconds += time.perf_counter() - started
            steps = read_scalars(out, "selfplay/system_steps")
            trained = int(sum(v for _, _, v in steps))
            per_iteration = max(1, trained // max(1, len(steps)))
        agent = masp(card=card, checkpoint=out, deterministic=True)
        points.append({"steps": trained, **_play_everywhere(agent, evaluations, test)})
        print(f"  {method} {env_id} seed {seed} {trained:>7} exchanges: {points[-1]}", flush=True)
    return {"seed": seed, "points": points, "seconds_per_step": seconds / max(trained, 1)}


def _siavpo_curve(env_id: str, seed: int, args: argparse.Namespace, test: range) -> dict[str, Any]:
    """SI-AVPO trained from scratch for each budget (its runs do not resume), then evaluated."""
    from dialogue_gym_agents.siavpo.agent import siavpo
    from dialogue_gym_agents.siavpo.config import SiavpoConfig
    from dialogue_gym_agents.siavpo.train import train_siavpo

    evaluations = _evaluation_envs(env_id, args)
    card = evaluations[env_id].unwrapped.card
    quick = {"seeds_per_iteration": 2, "group_size": 2} if args.quick else {}
    rollouts = quick.get("seeds_per_iteration", 8) * quick.get("group_size", 8)
    per_iteration = rollouts * card.max_exchanges  # a bound until a run measures it
    points, seconds, trained, label = [], 0.0, 0, _label("siavpo", args)
    for budget in sorted(args.budgets):
        out = args.out / label / env_id / f"seed{seed}" / f"budget{budget}"
        if not (out / "checkpoint.json").is_file():
            config = SiavpoConfig(
                task=env_id.split("-")[0], out=out, seed=seed, encoder=args.encoder,
                view=args.view, iterations=max(1, -(-budget // per_iteration)),
                progress=False, tensorboard=False, **{**quick, **args.siavpo_options},
            )  # fmt: skip
            started = time.perf_counter()
            train_siavpo(config)
            seconds += time.perf_counter() - started
        info = json.loads((out / "checkpoint.json").read_text(encoding="utf-8"))["info"]
        trained = int(info["env_steps"])
        per_iteration = max(1, trained // max(1, int(info["iterations"])))
        agent = siavpo(card, checkpoint=str(out), deterministic=True)
        points.append({"steps": trained, **_play_everywhere(agent, evaluations, test)})
        print(f"  {label} {env_id} seed {seed} {trained:>7} exchanges: {points[-1]}", flush=True)
    return {"seed": seed, "points": points, "seconds_per_step": seconds / max(trained, 1)}


SFT_MOVES: dict[str, dict[str, Any]] = {
    "moves": {},
    "moves acts": {"move_labels": "acts"},
    "moves successful": {"successful_only": True},
    "moves acts successful": {"move_labels": "acts", "successful_only": True},
    "moves balanced": {"class_weights": "balanced"},
    "moves acts balanced": {"move_labels": "acts", "class_weights": "balanced"},
}
"""SFT over listening moves: each line's PlannerConfig fields of the supervised phase."""

SFT_KINDS = ("retrieval", *SFT_MOVES)
"""The kinds of SFT ``--sft`` draws (``--sft-kinds``), each with its own lines."""


def _sft_lines(env_id: str, args: argparse.Namespace, test: range) -> dict[str, list[float]]:
    """SR of SFT per training seed, each kind of it a line (none for a task without a corpus).

    ``retrieval``: response retrieval on the task's corpus (its index does not depend on the
    seed). ``moves`` and ``moves sampled``: the planner's supervised phase alone on the concern
    view (each corpus turn labelled with its nearest listening move; the seed draws the initial
    weights and the minibatches), playing its likeliest move or sampling its moves. ``moves
    acts``: the same with labels from the corpus's act annotations (``--move-labels acts``);
    ``moves successful``: with the nearest move's labels, cloning only the dialogues whose
    recorded outcome is a success (``--successful-only``; no line where the corpus records
    none), ``moves acts successful`` both; ``moves balanced`` and ``moves acts balanced``:
    each move's loss weighted by its inverse label frequency (``--class-weights balanced``).
    Each also ``<line> sampled``. On a deal task (CB) each line's SL too, as ``<line> SL``.
    """
    from dialogue_gym_agents.planner.agent import planner
    from dialogue_gym_agents.planner.train import train_planner
    from dialogue_gym_agents.sft.retrieval import RetrievalConfig, sft_retrieval, train_retrieval
    from dialogue_gym_agents.training.corpora import (
        PLANNER_FORMATS,
        dialogue_outcome,
        load_training_dialogues,
    )

    evaluations = _evaluation_envs(env_id, args)
    card = evaluations[env_id].unwrapped.card
    if card.corpus is None:
        return {}
    kinds = [k for k in args.sft_kinds if k == "retrieval" or args.view == "concern"]
    if not (card.strategies and card.concerns):
        kinds = [k for k in kinds if k == "retrieval"]
    lines: dict[str, list[float]] = {}
    task = env_id.split("-")[0]
    filtered = [k for k in kinds if SFT_MOVES.get(k, {}).get("successful_only")]
    if filtered:
        corpus = load_training_dialogues(task, args.data, format=PLANNER_FORMATS.get(task))
        if all(dialogue_outcome(d) is None for d in corpus):  # nothing to keep the successes of
            kinds = [k for k in kinds if k not in filtered]
    for seed in args.seeds:
        if "retrieval" in kinds:
            out = args.out / "sft" / env_id / f"seed{seed}"
            if not (out / "checkpoint.json").is_file():
                train_retrieval(
                    RetrievalConfig(
                        task=task, out=out, seed=seed, encoder=args.encoder, data=args.data,
                        progress=False, tensorboard=False,
                    )
                )  # fmt: skip
            agent = sft_retrieval(card, checkpoint=out, seed=seed)
            _record(lines, "retrieval", _play_everywhere(agent, evaluations, test))
        for kind in (k for k in kinds if k in SFT_MOVES):
            moves_out = args.out / f"sft-{kind.replace(' ', '-')}" / env_id / f"seed{seed}"
            if not (moves_out / "checkpoint.json").is_file():
                train_planner(
                    PlannerConfig(
                        task=task, out=moves_out, seed=seed, encoder=args.encoder,
                        data=args.data, view="concern", pretrain_epochs=20, ppo_steps=0,
                        progress=False, tensorboard=False, **SFT_MOVES[kind],
                    )
                )  # fmt: skip
            for line, deterministic in ((kind, True), (f"{kind} sampled", False)):
                agent = planner(card, checkpoint=moves_out, deterministic=deterministic)
                _record(lines, line, _play_everywhere(agent, evaluations, test))
        rates = ", ".join(f"{k} {v[-1]:.2f}" for k, v in lines.items())
        print(f"  sft {env_id} seed {seed}: SR {rates}", flush=True)
    return lines


def _record(lines: dict[str, list[float]], kind: str, outcome: dict[str, Any]) -> None:
    """Appends an SFT evaluation's SR to line ``kind``.

    Also its SL to ``kind SL`` on CB, and with ``--worst-case`` its RCSR and the worst case
    over user types to ``kind RCSR``, ``kind worst SR`` and ``kind worst RCSR``.
    """
    lines.setdefault(kind, []).append(outcome["sr"])
    for key, suffix in (("sl", "SL"), ("worst_sr", "worst SR"), ("worst_rcsr", "worst RCSR")):
        if key in outcome:
            lines.setdefault(f"{kind} {suffix}", []).append(outcome[key])
    if "worst_sr" in outcome:
        lines.setdefault(f"{kind} RCSR", []).append(outcome["rcsr"])


class _Quiet:
    """A stream that drops the trainer's report (the curves print their own)."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        """Nothing buffered."""


def _lines(env_id: str, args: argparse.Namespace, test: range) -> dict[str, float]:
    """``scripted``, ``random`` and (unless ``--no-bounds``) the fixed-sequence and ceiling SR.

    On a deal task (CB) also ``scripted SL`` and ``random SL``, the buyer utility that ranks
    negotiators.
    """
    views = {user: VIEWS[args.view](env) for user, env in _evaluation_envs(env_id, args).items()}
    view = views[env_id]
    episodes, seed, encoder = args.episodes, args.seed, args.eval_encoder
    scripted = worst_of(
        {
            u: _outcome(scripted_records(u, episodes, seed, encoder), v.card)
            for u, v in views.items()
        }
    )
    randomly = worst_of(
        {u: _outcome(random_records(v, test, seed), v.card) for u, v in views.items()}
    )
    lines = {"scripted": scripted["sr"], "random": randomly["sr"]}
    if "sl" in scripted:
        lines |= {"scripted SL": scripted["sl"], "random SL": randomly["sl"]}
    if "worst_sr" in scripted:
        lines |= {
            "scripted RCSR": scripted["rcsr"],
            "scripted worst SR": scripted["worst_sr"],
            "scripted worst RCSR": scripted["worst_rcsr"],
            "random worst SR": randomly["worst_sr"],
        }
    if not args.bounds:
        return lines
    train = range(100_000, 100_000 + args.bound_episodes)
    bounds, _ = interface_lines(view, test, train, width=args.width, rounds=1)
    return {**lines, **bounds}


def _plot(results: dict[str, Any], path: Path) -> bool:
    """One panel per env: each method's mean SR (band: min-max over seeds) against exchanges."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    envs = list(results)
    figure = Figure(figsize=(4.0 * len(envs) + 0.6, 3.4), layout="constrained")
    axes = figure.subplots(1, len(envs), squeeze=False)[0]
    for ax, env_id in zip(axes, envs, strict=True):
        for method, runs in results[env_id]["methods"].items():
            steps = np.array([[p["steps"] for p in run["points"]] for run in runs]).mean(axis=0)
            sr = np.array([[p["sr"] for p in run["points"]] for run in runs])
            ax.plot(steps, sr.mean(axis=0), marker="o", label=f"{method} SR (mean)")
            ax.fill_between(steps, sr.min(axis=0), sr.max(axis=0), alpha=0.2)
        for index, (name, value) in enumerate(results[env_id]["lines"].items()):
            style = ("-", ":", "--", "-.")[index % 4]
            ax.axhline(value, linestyle=style, color="#555555", alpha=0.7, label=name)
        ax.set_title(env_id, fontsize=10)
        ax.set_xlabel("system exchanges trained on")
        ax.set_ylim(-0.03, 1.03)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("SR")
    axes[-1].legend(fontsize=7, loc="lower right")
    figure.savefig(path, format="svg", metadata={"Date": None})
    return True


def main() -> int:
    """Trains, evaluates and prints the curves; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--envs", nargs="+", default=list(HARD))
    parser.add_argument("--view", choices=sorted(VIEWS), default="concern")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--budgets", nargs="+", type=int, default=[25_000, 50_000, 100_000])
    parser.add_argument("--episodes", type=int, default=50, help="evaluation episodes")
    parser.add_argument("--seed", type=int, default=0, help="first evaluation seed")
    parser.add_argument("--encoder", default="static", help="the training encoder")
    parser.add_argument("--eval-encoder", default="minilm")
    parser.add_argument("--reward", choices=("success", "judge", "env", "utility"), default="env")
    parser.add_argument("--no-bounds", dest="bounds", action="store_false")
    parser.add_argument("--bound-episodes", type=int, default=20, help="training seeds")
    parser.add_argument("--width", type=int, default=4, help="beam width of the ceiling")
    parser.add_argument("--out", type=Path, default=Path("runs/learning_curves"))
    parser.add_argument("--methods", nargs="*", choices=METHODS, default=["planner"])
    parser.add_argument("--data", default=None, help="data root (MASP; default: none needed)")
    parser.add_argument("--quick", action="store_true", help="tiny MASP phases (smoke tests)")
    ablations = {  # a config field per flag: which config, and for which methods
        "masp": "a MASPConfig field for the MASP methods (beta=0, w_inf=0, reward_teacher=oracle)",
        "siavpo": "a SiavpoConfig field for SI-AVPO (aopd=false, turn_credit=false; both: GRPO)",
    }
    for method, field in ablations.items():
        parser.add_argument(
            f"--{method}-option",
            dest=f"{method}_options",
            type=_option,
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help=f"{field}, an ablation; repeatable; its curve is named after it",
        )
    parser.add_argument(
        "--worst-case",
        action="store_true",
        help="also evaluate every point on the task's soft users and report the worst case "
        "over the two user types (SR and RCSR)",
    )
    parser.add_argument(
        "--sft",
        action="store_true",
        help="also SFT per training seed, as lines: response retrieval on the task's corpus and "
        "(concern view) the planner's supervised phase on corpus turns labelled with moves",
    )
    parser.add_argument(
        "--sft-kinds",
        nargs="+",
        choices=SFT_KINDS,
        default=list(SFT_KINDS),
        help="with --sft, only these kinds of it (default: all)",
    )
    args = parser.parse_args()
    from dialogue_gym_agents.masp.config import MASPConfig
    from dialogue_gym_agents.siavpo.config import SiavpoConfig

    args.masp_options, args.siavpo_options = dict(args.masp_options), dict(args.siavpo_options)
    _check_fields(parser, "--masp-option", MASPConfig, args.masp_options)
    _check_fields(parser, "--siavpo-option", SiavpoConfig, args.siavpo_options)
    args.out.mkdir(parents=True, exist_ok=True)
    test = range(args.seed, args.seed + args.episodes)
    results: dict[str, Any] = {}
    for env_id in args.envs:
        methods: dict[str, list[dict[str, Any]]] = {}
        for method in args.methods:
            if method == "planner":
                methods[method] = [_planner_curve(env_id, seed, args, test) for seed in args.seeds]
            else:
                methods[_label(method, args)] = [
                    _siavpo_curve(env_id, seed, args, test)
                    if method == "siavpo"
                    else _masp_curve(env_id, seed, args, test, method)
                    for seed in args.seeds
                ]
        results[env_id] = {"methods": methods, "lines": _lines(env_id, args, test)}
        for kind, rates in (_sft_lines(env_id, args, test) if args.sft else {}).items():
            results[env_id].setdefault("sft", {})[kind] = rates
            results[env_id]["lines"][f"sft {kind} (mean over seeds)"] = float(np.mean(rates))
        (args.out / "curves.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    print(f"\n{args.view} view, trained with {args.encoder}, evaluated with {args.eval_encoder}")
    for env_id, result in results.items():
        lines = "  ".join(f"{k} {v:.2f}" for k, v in result["lines"].items())
        print(f"{env_id}: {lines}")
        for kind, rates in result.get("sft", {}).items():
            print(f"  sft {kind:<28} {over_seeds(rates)}")
        for method, runs in result["methods"].items():
            for index, budget in enumerate(sorted(args.budgets)):
                points = [run["points"][index] for run in runs]
                cells = "  ".join(
                    f"{label} {over_seeds([p[key] for p in points])}"
                    for key, label in REPORTED
                    if all(key in p for p in points)
                )
                print(f"  {method:<17} {budget:>8} exchanges  {cells}  ({len(points)} seeds)")
            wall = np.mean([run["seconds_per_step"] for run in runs])
            if wall > 0:
                print(f"  {method:<17} training wall time {1000 * wall:.1f} ms/exchange (1 thread)")
            else:  # resumed runs already past every budget: nothing trained in this invocation
                print(f"  {method:<17} training wall time: not measured (runs reused as they were)")
    if _plot(results, args.out / "curves.svg"):
        print(f"plot: {args.out / 'curves.svg'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
