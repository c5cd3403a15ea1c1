"""Do the hard users reward listening in *any* words? The card's sentences vs held-out wording.

Per hard env, with 95 % bootstrap CIs over ``--episodes`` seeded episodes (the same seeds for
every agent), this prints the success rate (on ``CB-hard`` the mean sale-to-list utility, SL,
since nearly every buyer closes some deal) of:

* ``scripted`` — the project's hand-written agent;
* ``listener, card`` — a closed-loop listener (:class:`WordingListener`: opens, hears the concern
  the user voices, answers it, checks for anything else, asks politely) answering each concern
  with the card's own ``unlock`` sentences;
* ``listener, held-out`` — the *same* listener, same opening, probes and asks, answering with
  replies from a wording set written by a helper session that read only the task brief, the
  concern descriptions and the voice lines (never the card's prototypes, cues or code), frozen
  in ``benchmarks/data/skill_wording/heldout`` before any tuning. ``--wording dev`` uses the
  second, independent set written the same way (the one to develop against); ``--wording
  dev2`` a third (P4G and CB only), written the same way at stop 58 and first measured before
  any change it could inform, to see how far tuning on ``dev`` carried to unseen words;
* on ``CB-hard``, where reasons come with offers, the listener is :class:`WordingBuyer` (the
  scripted buyer giving its reasons in the card's sentences or in the wording set's);
* the adversary suite's best non-listener (:mod:`dialogue_gym.testing.adversaries`, without the
  slow search-based attacker unless ``--search``).

and checks the target: held-out listener ≥ ``--ratio`` (0.8) × the card listener, every env
(the ratio's CI is a paired bootstrap over the seeds). It also counts incoherences in every
transcript it played: user replies repeated word for word in one episode
(:func:`repeated_replies`; a resolved concern raised again needs concern statuses the episode
records do not hold, so it is not counted here).

    OMP_NUM_THREADS=1 python benchmarks/skill_validity.py                       # 100 episodes
    python benchmarks/skill_validity.py --envs P4G-hard --episodes 30 --wording dev

Torch runs with one thread (small batches on shared cores).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import tomllib
import torch

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.evaluation.run import evaluate
from dialogue_gym.metrics.bootstrap import bootstrap_ci
from dialogue_gym.metrics.rates import episode_sl
from dialogue_gym.testing.adversaries import ADVERSARIES
from dialogue_gym.text.prices import format_price
from dialogue_gym_agents.baselines.bargain import ScriptedBuyer
from dialogue_gym_agents.baselines.listening import ListeningAgent
from dialogue_gym_agents.baselines.reflection import second_person, story_sentences

WORDING = Path(__file__).parent / "data" / "skill_wording"
HARD_ENVS = ("P4G-hard", "ESConv-hard", "ED-hard", "Merchant-hard", "Courier-hard", "CB-hard")
USER_SPEAKER = 1


def load_wording(card: TaskCard, which: str) -> dict[str, Any]:
    """The wording set ``which`` (``heldout`` / ``dev`` / ``dev2``) of ``card``'s task.

    Raises:
        FileNotFoundError: The task has no such set.
        ValueError: A concern of the card has no replies, or a table lacks a section.
    """
    path = WORDING / which / f"{card.id}.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    concerns = data.get("concerns", {})
    missing = [c.id for c in card.concerns if not concerns.get(c.id, {}).get("replies")]
    if missing:
        raise ValueError(f"{path}: no replies for concerns {missing}")
    for key in ("open", "asks", "acknowledge"):
        if not data.get("turns", {}).get(key):
            raise ValueError(f"{path}: turns.{key} is missing or empty")
    return data


def answer_table(card: TaskCard, wording: str, answers: str) -> dict[str, tuple[str, ...]]:
    """Concern id → the answers an arm gives: the card's ``unlock`` sentences or the set's.

    Raises:
        ValueError: ``answers`` is neither ``"card"`` nor ``"wording"``.
    """
    if answers == "card":
        return {c.id: tuple(c.unlock) for c in card.concerns}
    if answers == "wording":
        data = load_wording(card, wording)
        return {c.id: tuple(data["concerns"][c.id]["replies"]) for c in card.concerns}
    raise ValueError(f"answers must be 'wording' or 'card', got {answers!r}")


class WordingListener(ListeningAgent):
    """The closed-loop listener of :class:`ListeningAgent` with its words from a wording set.

    Its opening, probes, check for anything else and asks come from the wording set's
    ``turns`` (chosen per episode by the seed); its answers from the set's replies
    (``answers="wording"``) or from the card's ``unlock`` sentences (``answers="card"``) —
    the only difference between the two arms. An ``{echo}`` slot is filled with the user's
    own story, turned to the second person (the empathy tasks' reflections).

    Args:
        card: The task card.
        seed: Default seed.
        wording: ``"heldout"``, ``"dev"`` or ``"dev2"``.
        answers: ``"wording"`` or ``"card"``.
        encoder: Encoder the listener hears concerns with.
    """

    def __init__(
        self,
        card: TaskCard,
        seed: int | None = None,
        wording: str = "heldout",
        answers: str = "wording",
        encoder: str = "minilm",
    ) -> None:
        self._set = load_wording(card, wording)
        turns = self._set["turns"]
        self._turn_lines = turns
        table = answer_table(card, wording, answers)
        lines = self._lines_for(0)
        super().__init__(card, lines, table, (), seed, encoder)
        self._story = ""

    def _lines_for(self, seed: int) -> dict[str, Any]:
        rng = np.random.default_rng(seed)
        opens = list(self._turn_lines["open"])
        order = rng.permutation(len(opens))
        pick = [opens[int(i)] for i in order]
        acks = self._turn_lines["acknowledge"]
        ack = acks[int(rng.integers(len(acks)))]
        return {
            "opening": pick[0],
            "probe": pick[1 % len(pick)],
            "open_question": pick[2 % len(pick)],
            "anything_else": f"{ack} {pick[3 % len(pick)]}",
            "why_not": pick[4 % len(pick)],
            "asks": tuple(rng.permutation(np.asarray(self._turn_lines["asks"], dtype=object))),
        }

    def reset(self, seed: int | None = None) -> None:
        """Forgets the episode and draws its lines from ``seed``."""
        if hasattr(self, "_set"):
            self.lines = self._lines_for(0 if seed is None else seed)
        self._story = ""
        super().reset(seed)

    def act(self, observation: dict[str, Any]) -> str:
        """The next turn, with ``{echo}`` filled from the user's story."""
        text = super().act(observation)
        if "{echo}" in text:
            replies = [t["text"] for t in observation["history"] if t["speaker"] == USER_SPEAKER]
            story = story_sentences(replies)
            clause = second_person(story[0]).rstrip(".!? ") if story else "that happened to you"
            text = text.replace("{echo}", clause[:1].lower() + clause[1:])
        return re.sub(r"\{\w+\}", "", text)


class WordingBuyer(ScriptedBuyer):
    """CraigslistBargain's :class:`ScriptedBuyer` with its reasons from a wording set.

    The buyer's opening, questions, offers and when it takes a price are the scripted
    buyer's; only the reason it gives for the concern it argues differs between the arms: the
    card's ``unlock`` sentences (``answers="card"``) or the wording set's replies
    (``answers="wording"``). A reply with an ``{offer}`` slot carries the turn's offer itself
    (the scripted offer sentence is then dropped, so the price is said once).

    Args:
        card: The CB task card.
        seed: Default seed.
        wording: ``"heldout"``, ``"dev"`` or ``"dev2"``.
        answers: ``"wording"`` or ``"card"``.
    """

    def __init__(
        self,
        card: TaskCard,
        seed: int | None = None,
        wording: str = "heldout",
        answers: str = "wording",
        **kwargs: Any,
    ) -> None:
        table = answer_table(card, wording, answers)
        self.ARGUMENTS = {cid: lines for cid, lines in table.items() if cid in self.ORDER}
        super().__init__(card, seed, **kwargs)

    def act(self, observation: dict[str, Any]) -> str:
        """The scripted buyer's turn, with an ``{offer}`` slot filled by its offer."""
        text = super().act(observation)
        if "{offer}" not in text or self._last_offer is None:
            return re.sub(r"\{\w+\}", "", text)
        price = format_price(self._last_offer)
        for template in self.OFFERS:
            said = " " + template.format(price=price)
            if text.endswith(said):
                text = text[: -len(said)]
                break
        return text.replace("{offer}", price)


def repeated_replies(record: Mapping[str, Any]) -> int:
    """User replies in one episode identical (case-insensitive) to an earlier one."""
    replies = [t["text"] for t in record.get("transcript", []) if t.get("role") == "user"]
    seen: set[str] = set()
    repeated = 0
    for reply in replies:
        key = reply.strip().lower()
        repeated += key in seen
        seen.add(key)
    return repeated


def _rates(records: Sequence[Mapping[str, Any]]) -> np.ndarray:
    """Per-episode scores in seed order: success, or SL on negotiation.

    Any deal is a "success" there; the buyer's utility (sale-to-list) is what ranks buyers.
    """
    ordered = sorted(records, key=lambda r: r["seed"])
    scores = [episode_sl(r) for r in ordered]
    if all(score is not None for score in scores):
        return np.asarray(scores, dtype=float)
    return np.asarray([float(r["success"]) for r in ordered])


def _cell(values: np.ndarray) -> str:
    interval = bootstrap_ci(values)
    return f"{interval.mean:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


def _ratio_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    """Paired bootstrap 95 % CI of mean(a) / mean(b) (the same seeds on both sides)."""
    index = rng.integers(len(a), size=(2000, len(a)))
    num, den = a[index].mean(axis=1), b[index].mean(axis=1)
    ratios = np.where(den > 0, num / np.maximum(den, 1e-12), np.nan)
    return float(np.nanpercentile(ratios, 2.5)), float(np.nanpercentile(ratios, 97.5))


def measure_env(env_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """Every arm on ``env_id``; returns the per-agent success vectors and repeated replies."""
    env_kwargs = {"encoder": args.encoder, "privileged": True}
    # CraigslistBargain's concerns are answered inside offers: its listener is the scripted
    # buyer with its reasons swapped (the same buyer in both arms).
    listener = WordingBuyer if env_id.startswith("CB") else WordingListener
    arms: dict[str, tuple[Any, dict[str, Any]]] = {
        "scripted": ("scripted", {}),
        "listener, card": (listener, {"wording": args.wording, "answers": "card"}),
        f"listener, {args.wording}": (
            listener,
            {"wording": args.wording, "answers": "wording"},
        ),
    }
    names = [n for n in ADVERSARIES if args.search or n != "open_loop_search"]
    for name in names:
        arms[name] = (f"dialogue_gym.testing.adversaries:{ADVERSARIES[name].__name__}", {})
    out: dict[str, Any] = {"rates": {}, "repeated_replies": 0}
    for label, (agent, kwargs) in arms.items():
        result = evaluate(
            [agent],
            [env_id],
            episodes=args.episodes,
            seed=args.seed,
            env_kwargs=env_kwargs,
            agent_kwargs=kwargs,
            progress=False,
        )
        out["rates"][label] = _rates(result.records)
        out["repeated_replies"] += sum(repeated_replies(r) for r in result.records)
        print(f"  {env_id:<14} {label:<24} {_cell(out['rates'][label])}", flush=True)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark; exit status 1 when a ratio misses."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", nargs="+", default=list(HARD_ENVS))
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoder", default="minilm")
    parser.add_argument("--wording", choices=("heldout", "dev", "dev2"), default="heldout")
    parser.add_argument("--ratio", type=float, default=0.8)
    parser.add_argument("--search", action="store_true", help="include the search attacker")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    missed = False
    repeated = 0
    summary = []
    for env_id in args.envs:
        result = measure_env(env_id, args)
        rates = result["rates"]
        card_rate = rates["listener, card"]
        own = rates[f"listener, {args.wording}"]
        adversaries = {k: v for k, v in rates.items() if k in ADVERSARIES}
        best = max(adversaries, key=lambda k: adversaries[k].mean()) if adversaries else None
        ratio = own.mean() / card_rate.mean() if card_rate.mean() > 0 else float("nan")
        low, high = _ratio_ci(own, card_rate, rng)
        verdict = "holds" if ratio >= args.ratio else "MISS"
        missed |= verdict == "MISS"
        repeated += result["repeated_replies"]
        summary.append(
            f"{env_id:<14} scripted {_cell(rates['scripted'])}  card {_cell(card_rate)}  "
            f"{args.wording} {_cell(own)}  ratio {ratio:.2f} [{low:.2f}, {high:.2f}] {verdict}"
            + (f"  best adversary {best} {_cell(adversaries[best])}" if best else "")
        )
    print()
    print("\n".join(summary))
    episodes = args.episodes * len(args.envs)
    print(f"user replies repeated word for word ({episodes} episodes per agent): {repeated}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
