r"""Does MASP's trained user resist rationally, or collapse to refusal? (issue 35, item 5).

MASP co-trains a user policy against its system; a user that learns that refusing pays would
be a degenerate opponent. This benchmark puts each trained user policy in the user seat against
``scripted`` (a system that answers the user's concerns and asks) on the task's hard users and
compares it, on the same episode seeds, with the simulator's own replies (``rational``) and a
blind refuser (``always_refuse``, see :mod:`dialogue_gym.testing.user_policies`):

* ``SR`` / ``RCSR`` — how often the episode ends in an agreement (a rational one);
* ``return`` — the user seat's discounted return Σγᵗr_U (mean, 95 % bootstrap CI);
* ``agree when due`` — of the turns in which the simulator itself would agree (its reply decides
  ``agree`` or passes the success judge; the same twin probe as the blind policies use), the
  share in which the policy agreed; ``agree otherwise`` — its agreements in the other turns;
* ``refusals resolved`` — refusals given while every blocking concern was resolved.

A collapsed user agrees in none of its due turns and earns about what the blind refuser earns;
a rational one agrees when due and earns more. Each trained policy is a MASP run folder (its
latest checkpoint); its act is sampled, as in self-play (``--deterministic``: its likeliest act)
and worded by the env's own user (``realize_act``), exactly the self-play path. The env runs on
the runs' training encoder (``--encoder``, static by default) so every line plays one world.

    OMP_NUM_THREADS=1 python benchmarks/trained_user.py --env P4G-hard --episodes 100 \
        --runs RUN_DIR [RUN_DIR ...]

Prints one row per line and, over the runs, the mean with a 95 % t-interval over seeds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from dialogue_gym.cards.stance import classify_stance
from dialogue_gym.env.registry import make
from dialogue_gym.evaluation.agents import make_agent
from dialogue_gym.metrics.bootstrap import bootstrap_ci
from dialogue_gym.metrics.rates import rcsr, success_rate
from dialogue_gym.metrics.seeds import seed_level_ci
from dialogue_gym.testing.user_policies import BlindUserPolicy
from dialogue_gym.users.wording import USER_ACTS
from dialogue_gym_agents.common.checkpoint import load_checkpoint
from dialogue_gym_agents.masp.agent import KIND, latest_checkpoint, load_models


class TrainedUserPolicy:
    """A MASP run's user policy in the external user seat (the self-play path, judged as said).

    ``would_agree``, ``resolved`` and ``refused`` after each :meth:`act` mean what they mean for
    :class:`~dialogue_gym.testing.user_policies.BlindUserPolicy`; ``agreed`` says whether the
    policy chose ``agree``.

    Args:
        run: A MASP run folder (or checkpoint) with a user policy.
        card: The env's task card.
        deterministic: Play the likeliest act instead of sampling.
        seed: Seed of the act sampling.

    Raises:
        ValueError: The checkpoint holds no user policy.
    """

    def __init__(self, run: Path, card: Any, deterministic: bool, seed: int) -> None:
        folder = latest_checkpoint(run)
        models = load_models(load_checkpoint(folder, kind=KIND, card=card), card)
        if models.user is None:
            raise ValueError(f"{folder} holds no user policy")
        self.policy = models.user.eval()
        self.features = models.user_features
        self.deterministic = deterministic
        self.generator = torch.Generator(device="cpu")
        self.generator.manual_seed(seed)
        self.reference = BlindUserPolicy("rational")  # only its probe of the simulator is used
        self.agreed = self.refused = False

    def reset(self) -> None:
        """Starts a new episode."""
        self.reference.reset()

    def act(self, env: Any, observation: dict[str, Any]) -> str:
        """The policy's reply to the system turn the env's history ends with."""
        self.reference.act(env)  # probes a twin: would the simulator agree here?
        context = self.features.observe(observation)
        acts, _ = self.policy.sample([context], self.generator, greedy=self.deterministic)
        act = USER_ACTS[int(acts[0])]
        self.agreed = act == "agree"
        text = str(env.user.realize_act(act, env.history[-1][1]))
        self.refused = classify_stance(text, env.card) == "refused"
        return text

    @property
    def would_agree(self) -> bool:
        """Whether the simulator itself would have agreed to the last system turn."""
        return self.reference.would_agree

    @property
    def resolved(self) -> bool:
        """Whether every blocking concern was resolved at the last reply."""
        return self.reference.resolved


def play(env_id: str, policy: Any, episodes: int, seed: int, encoder: str) -> dict[str, Any]:
    """The user seat played by ``policy`` against ``scripted``, ``episodes`` seeds from ``seed``."""
    probe = make(env_id, encoder=encoder)
    system = make_agent("scripted", card=probe.card)
    env = make(env_id, encoder=encoder, external=("user",), system_policy=system)
    records: list[dict[str, Any]] = []
    due = agreed_due = agreed_other = resolved_refusals = 0
    for i in range(episodes):
        observations, _ = env.reset(seed=seed + i)
        policy.reset()
        infos: dict[str, Any] = {}
        while env.agents:
            if isinstance(policy, TrainedUserPolicy):
                text, agreed = policy.act(env, observations["user"]), policy.agreed
            else:  # a blind policy agrees when it passes the simulator's agreement on
                text = policy.act(env)
                agreed = policy.would_agree and not policy.deviated
            due += policy.would_agree
            agreed_due += bool(agreed and policy.would_agree)
            agreed_other += bool(agreed and not policy.would_agree)
            observations, _, _, _, infos = env.step({"user": text})
            resolved_refusals += bool(policy.refused and policy.resolved)
        records.append(infos["user"]["episode"])
    ci = bootstrap_ci([float(record["return_user"]) for record in records])
    return {
        "sr": success_rate(records),
        "rcsr": rcsr(records),
        "return": ci.mean,
        "return_ci": [ci.low, ci.high],
        "due_turns": due,
        "agree_when_due": agreed_due / due if due else float("nan"),
        "agree_otherwise": agreed_other,
        "refusals_resolved": resolved_refusals,
    }


def _row(name: str, cell: dict[str, Any]) -> str:
    low, high = cell["return_ci"]
    return (
        f"{name:<34} SR {cell['sr']:.2f}  RCSR {cell['rcsr']:.2f}  return {cell['return']:+.3f} "
        f"[{low:+.3f}, {high:+.3f}]  agree when due {cell['agree_when_due']:.2f} "
        f"({cell['due_turns']} turns)  agree otherwise {cell['agree_otherwise']}  "
        f"refusals resolved {cell['refusals_resolved']}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark; prints the rows and writes ``--out`` (JSON) when given."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="P4G-hard")
    parser.add_argument("--runs", nargs="+", type=Path, required=True, help="MASP run folders")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0, help="first episode seed")
    parser.add_argument("--encoder", default="static", help="the runs' training encoder")
    parser.add_argument("--deterministic", action="store_true", help="likeliest act, no sampling")
    parser.add_argument("--out", type=Path, help="write the cells as JSON")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    missing = [str(run) for run in args.runs if not run.exists()]
    if missing:
        parser.error(f"no such run folder: {', '.join(missing)}")

    cells: dict[str, Any] = {}
    for name in ("rational", "always_refuse"):
        cells[name] = play(args.env, BlindUserPolicy(name), args.episodes, args.seed, args.encoder)
        print(_row(name, cells[name]), flush=True)
    card = make(args.env, encoder=args.encoder).card
    trained = {}
    for index, run in enumerate(args.runs):
        policy = TrainedUserPolicy(run, card, args.deterministic, seed=index)
        trained[str(run)] = play(args.env, policy, args.episodes, args.seed, args.encoder)
        print(_row(f"trained {'/'.join(run.parts[-2:])}", trained[str(run)]), flush=True)
    cells["trained"] = trained
    for key in ("sr", "rcsr", "return", "agree_when_due"):
        values = [cell[key] for cell in trained.values() if not math.isnan(cell[key])]
        interval = seed_level_ci(values)  # a run that met no due turn has no agree rate
        low, high = interval.low, interval.high
        print(
            f"trained, over {len(values)} runs: {key} {interval.mean:.3f} [{low:.3f}, {high:.3f}]"
        )
    if args.out:
        args.out.write_text(json.dumps(cells, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
