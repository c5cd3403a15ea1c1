"""Do the users stay coherent? Incoherences counted over many episodes of mixed agents.

Plays ``--episodes`` seeded episodes per (hard env, agent) with a mix of agents — the scripted
agent, a random one, the closed-loop listener answering in the *dev* wording set
(``benchmarks/skill_validity.py``; the held-out set is kept for that benchmark alone) and
three of the adversaries (reciting, rotating, asking every turn) — and counts, from the
episode records:

* **repeated replies** — a user reply identical (case-insensitive) to an earlier one of the
  same episode;
* **re-raised concerns** — a concern the user voices (``voiced:<id>`` in its private events)
  after it was resolved (``resolved:<id>``) in the same episode;
* **persona contradictions** — a reply that states another persona's fact for one of this
  persona's slots (its situation, its business, its vehicle ...: a value of the card's persona
  slot that is not this persona's, said word for word) — the persona drifting mid-episode.

The target (issue 34) is 0 of each over ≥ 500 episodes; the exit status is 1 when any is not.
Each incoherence found is printed with its env, agent, seed and reply.

    OMP_NUM_THREADS=1 python benchmarks/coherence.py                  # 6 envs x 6 agents x 14
    python benchmarks/coherence.py --envs P4G-hard --episodes 5 --encoder hashing

Torch runs with one thread (small batches on shared cores).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from dialogue_gym.cards.card import TaskCard, load_card
from dialogue_gym.env.registry import spec
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.users.persona import Persona, persona_bank

HARD_ENVS = ("P4G-hard", "ESConv-hard", "ED-hard", "Merchant-hard", "Courier-hard", "CB-hard")
ADVERSARIES = "dialogue_gym.testing.adversaries"
KINDS = ("repeated reply", "re-raised concern", "persona contradiction")


def _listener() -> Any:
    """The skill benchmark's wording listener (loaded from its file: benchmarks/ is no package)."""
    path = Path(__file__).with_name("skill_validity.py")
    module_spec = importlib.util.spec_from_file_location("skill_validity", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules["skill_validity"] = module
    module_spec.loader.exec_module(module)
    return module


def agents_for(card: TaskCard) -> dict[str, tuple[Any, dict[str, Any]]]:
    """The mixed agents: label → (agent, agent kwargs)."""
    skill = _listener()
    listener = skill.WordingBuyer if card.user_model == "seller" else skill.WordingListener
    return {
        "scripted": ("scripted", {}),
        "random": ("random", {}),
        "listener (dev wording)": (listener, {"wording": "dev", "answers": "wording"}),
        "recite": (f"{ADVERSARIES}:ReciteCard", {}),
        "rotate": (f"{ADVERSARIES}:RotateConcerns", {}),
        "ask_every_turn": (f"{ADVERSARIES}:AskEveryTurn", {}),
    }


def incoherences(
    record: Mapping[str, Any], persona: Persona | None, card: TaskCard
) -> list[tuple[str, str]]:
    """(kind, the reply or event that shows it) for every incoherence in one episode record."""
    found: list[tuple[str, str]] = []
    replies = [t["text"] for t in record.get("transcript", []) if t.get("role") == "user"]
    seen: set[str] = set()
    for reply in replies:
        key = reply.strip().lower()
        if key in seen:
            found.append(("repeated reply", reply))
        seen.add(key)
    resolved: set[str] = set()
    for events in record.get("events", []):
        for event in events:
            kind, _, cid = event.partition(":")
            if kind == "voiced" and cid in resolved:
                found.append(("re-raised concern", cid))
        resolved |= {e.split(":", 1)[1] for e in events if e.startswith("resolved:")}
    if persona is not None:
        for slot, own in persona.facts.items():
            others = [v for v in card.personas.slots.get(slot, ()) if v != own and len(v) > 12]
            for reply in replies:
                lowered = reply.lower()
                for value in others:
                    if value.lower() in lowered and own.lower() not in lowered:
                        found.append(("persona contradiction", f"{slot}: {reply}"))
    return found


def measure(args: argparse.Namespace) -> dict[str, int]:
    """Plays every cell and prints each incoherence; returns the counts per kind."""
    counts = dict.fromkeys(KINDS, 0)
    counts["episodes"] = 0
    for env_id in args.envs:
        card = load_card(str(spec(env_id).kwargs["card"]))
        personas = {p.id: p for p in persona_bank(card)}
        for label, (agent, kwargs) in agents_for(card).items():
            result = evaluate(
                [agent],
                [env_id],
                episodes=args.episodes,
                seed=args.seed,
                env_kwargs={"encoder": args.encoder, "privileged": True},
                agent_kwargs=kwargs,
                progress=False,
            )
            found_here = 0
            for record in result.records:
                counts["episodes"] += 1
                persona = personas.get(str(record.get("persona")))
                for kind, detail in incoherences(record, persona, card):
                    counts[kind] += 1
                    found_here += 1
                    print(f"  {env_id} | {label} | seed {record['seed']} | {kind}: {detail}")
            print(f"{env_id:<14} {label:<24} {found_here} incoherences", flush=True)
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark; exit status 1 when any incoherence was found."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=list(HARD_ENVS))
    parser.add_argument("--episodes", type=int, default=14, help="per (env, agent) cell")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoder", default="minilm")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    counts = measure(args)
    print()
    print(f"{counts['episodes']} episodes: " + ", ".join(f"{k} {counts[k]}" for k in KINDS))
    return 1 if any(counts[k] for k in KINDS) else 0


if __name__ == "__main__":
    sys.exit(main())
