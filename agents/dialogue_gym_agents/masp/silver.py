"""Phase 0's data: the silver BDI cache the mentalizers learn from.

A :class:`SilverTrajectory` is one dialogue with the user's BDI state after every prefix:
embedded-world episodes (the ``CognitiveUser`` oracle's states; soft and hard users; random and
scripted systems, plus a planner with ``--silver-planner``; :func:`collect_silver`) and, with
``--silver``, the LLM annotator's cache of a corpus (:func:`corpus_silver`). Personas (and
corpus dialogues) are split into train and held-out stably, by id.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dialogue_gym import metrics
from dialogue_gym.cards.card import TaskCard
from dialogue_gym.env.dialogue_env import CORPORA, DialogueEnv
from dialogue_gym.mind.bdi import BDI
from dialogue_gym.mind.encoders import Encoder
from dialogue_gym.users.cognitive import CognitiveUser
from dialogue_gym.users.persona import Persona, persona_bank
from dialogue_gym_agents.baselines.persuasion import RandomAgent
from dialogue_gym_agents.common.policy import History
from dialogue_gym_agents.common.seeding import (
    derive_seed,
)
from dialogue_gym_agents.common.tracking import progress_bar
from dialogue_gym_agents.dispatch import scripted
from dialogue_gym_agents.masp.config import MASPConfig
from dialogue_gym_agents.training.corpora import (
    load_training_dialogues,
)

__all__ = [
    "SilverTrajectory",
    "collect_silver",
    "corpus_silver",
    "persona_split",
    "read_jsonl",
    "silver_episode",
    "write_jsonl",
]


@dataclasses.dataclass(frozen=True)
class SilverTrajectory:
    """One dialogue with the silver BDI state after each of its annotated prefixes.

    Attributes:
        key: A unique id (``"P4G-hard/12"`` for a rollout, the dialogue id for a corpus).
        profile: The user's profile text ``p_u`` (``""`` when there is none).
        turns: The whole dialogue as ``(role, text)`` pairs.
        prefixes: Increasing prefix lengths (numbers of turns); the first holds the initial
            state ``z̄_0``.
        states: The silver state after each prefix.
        user_acts: Per exchange, the simulator user's response act (a
            :data:`~dialogue_gym.users.cognitive.USER_ACTS` name) — the user policy's
            behaviour-cloning labels; empty for corpus dialogues.
        split: ``"train"`` or ``"heldout"``.
        user: The simulator preset of a rollout (``"soft"``, ``"hard"``); ``"corpus"`` for a
            corpus dialogue.
        policy: The system policy of a rollout (``"random"``, ``"scripted"``, ...).
        rcsr: Whether the rollout succeeded rationally within T (RCSR@T).
    """

    key: str
    profile: str
    turns: History
    prefixes: tuple[int, ...]
    states: tuple[BDI, ...]
    user_acts: tuple[str, ...] = ()
    split: str = "train"
    user: str = ""
    policy: str = ""
    rcsr: bool = False

    def __post_init__(self) -> None:
        if len(self.prefixes) != len(self.states) or not self.prefixes:
            raise ValueError(f"{self.key}: one state per prefix is needed")
        if list(self.prefixes) != sorted(set(self.prefixes)) or self.prefixes[-1] > len(self.turns):
            raise ValueError(f"{self.key}: prefixes must increase within the dialogue")

    def histories(self) -> list[History]:
        """The prefix histories ``h_t``, one per state."""
        return [self.turns[:n] for n in self.prefixes]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (one line of ``silver.jsonl``)."""
        return {
            "key": self.key,
            "profile": self.profile,
            "turns": [list(t) for t in self.turns],
            "prefixes": list(self.prefixes),
            "states": [s.to_dict() for s in self.states],
            "user_acts": list(self.user_acts),
            "split": self.split,
            "user": self.user,
            "policy": self.policy,
            "rcsr": self.rcsr,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SilverTrajectory:
        """Rebuilds a trajectory from :meth:`to_json` output.

        Raises:
            KeyError, TypeError, ValueError: A malformed record.
        """
        return cls(
            key=str(data["key"]),
            profile=str(data["profile"]),
            turns=tuple((str(r), str(t)) for r, t in data["turns"]),
            prefixes=tuple(int(n) for n in data["prefixes"]),
            states=tuple(BDI.from_dict(s) for s in data["states"]),
            user_acts=tuple(str(a) for a in data.get("user_acts", ())),
            split=str(data.get("split", "train")),
            user=str(data.get("user", "")),
            policy=str(data.get("policy", "")),
            rcsr=bool(data.get("rcsr", False)),
        )


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Writes one JSON object per line."""
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Reads a JSONL file written by :func:`write_jsonl`."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def persona_split(card: TaskCard, heldout_fraction: float) -> dict[str, tuple[Persona, ...]]:
    """The card's persona bank split into ``train`` and ``heldout`` (stably, by persona id)."""
    bank = persona_bank(card)
    held = {p.id for p in bank if derive_seed(0, "persona", p.id) % 1000 < 1000 * heldout_fraction}
    split = {
        "train": tuple(p for p in bank if p.id not in held),
        "heldout": tuple(p for p in bank if p.id in held),
    }
    if not split["train"] or not split["heldout"]:
        raise ValueError(f"--heldout-fraction leaves no {card.id} personas on one side")
    return split


def _user_act(decision: str, voiced: bool) -> str:
    """The response act a simulator reply realizes (the user's behaviour-cloning label)."""
    acts = {"refused": "refuse", "positive": "warm", "agree": "agree"}
    return acts.get(decision, "voice" if voiced else "hold")


def silver_episode(
    env: DialogueEnv, policy: Any, seed: int, key: str, split: str, user: str, policy_name: str
) -> SilverTrajectory:
    """One embedded-world episode with the simulator's (oracle) state after every prefix."""
    observations, _ = env.reset(seed=seed)
    if callable(getattr(policy, "reset", None)):
        policy.reset(seed=seed)
    states, prefixes, acts = [env.user.state], [len(env.history)], []
    voiced = {cid: c["voiced"] for cid, c in env.user.privileged()["concerns"].items()}
    record: dict[str, Any] = {}
    while env.agents:
        observations, _, _, _, infos = env.step({"system": policy.act(observations["system"])})
        privileged = infos["system"]["privileged"]
        states.append(BDI.from_dict(privileged["bdi"]))
        prefixes.append(len(env.history))
        now = {cid: c["voiced"] for cid, c in privileged["concerns"].items()}
        acts.append(_user_act(privileged["decision"], any(now[c] > voiced[c] for c in now)))
        voiced = now
        record = infos["system"].get("episode", record)
    return SilverTrajectory(
        key=key,
        profile=env.user.profile(),
        turns=tuple(env.history),
        prefixes=tuple(prefixes),
        states=tuple(states),
        user_acts=tuple(acts),
        split=split,
        user=user,
        policy=policy_name,
        rcsr=bool(metrics.rc_success_within(record, env.max_exchanges)),
    )


def collect_silver(
    card: TaskCard, encoder: Encoder, T: int, config: MASPConfig
) -> list[SilverTrajectory]:
    """The silver cache: embedded-world episodes (+ an annotated corpus with ``--silver``)."""
    personas = persona_split(card, config.heldout_fraction)
    envs = {
        (user, split): DialogueEnv.from_options(
            card,
            user=CognitiveUser(card, encoder, preset=user, personas=personas[split]),
            encoder=encoder,
            privileged=True,
            max_exchanges=T,
            env_id=f"{card.id}-{user}-silver",
        )
        for user in config.silver_users
        for split in ("train", "heldout")
    }
    policies: list[tuple[str, Any]] = [
        ("random", RandomAgent(card)),
        ("scripted", scripted(card, encoder=encoder)),
    ]
    if config.silver_planner is not None:
        from dialogue_gym_agents.planner.agent import planner

        policies.append(("planner", planner(card, checkpoint=config.silver_planner)))
    silver: list[SilverTrajectory] = []
    bar = progress_bar(config.silver_episodes, "silver episodes", config.progress, unit="ep")
    f = config.heldout_fraction
    for episode in range(config.silver_episodes):
        split = "heldout" if int((episode + 1) * f) > int(episode * f) else "train"
        user = config.silver_users[episode % len(config.silver_users)]
        name, policy = policies[(episode // len(config.silver_users)) % len(policies)]
        key = f"{card.id}/{user}/{name}/{episode}"
        seed = derive_seed(config.seed, "silver", episode)
        silver.append(silver_episode(envs[(user, split)], policy, seed, key, split, user, name))
        bar.update(1)
    bar.close()
    if config.silver is not None:
        silver += corpus_silver(card, config)
    return silver


def corpus_silver(card: TaskCard, config: MASPConfig) -> list[SilverTrajectory]:
    """Trajectories of an LLM-annotated corpus cache (``dialogue-gym annotate``).

    Raises:
        ValueError: No dialogue of the task's training split is in the cache.
    """
    from dialogue_gym.mentalizers.annotate import annotation_prefixes, prefix_history, profile_text
    from dialogue_gym.mentalizers.llm import SilverCache

    cache = SilverCache.load(config.silver or "")
    corpus = CORPORA[card.id]
    out: list[SilverTrajectory] = []
    for dialogue in load_training_dialogues(card.id, config.data, split=config.split):
        prefixes = [
            k
            for k in annotation_prefixes(dialogue)
            if cache.get(dialogue.id, k, corpus) is not None
        ]
        if not prefixes:
            continue
        held = derive_seed(0, "dialogue", dialogue.id) % 1000 < 1000 * config.heldout_fraction
        out.append(
            SilverTrajectory(
                key=f"{corpus}:{dialogue.id}",
                profile=profile_text(dialogue) or "",
                turns=tuple(prefix_history(dialogue, len(dialogue.turns))),
                prefixes=tuple(prefixes),
                states=tuple(cache.get(dialogue.id, k, corpus) for k in prefixes),  # type: ignore[misc]
                split="heldout" if held else "train",
                user="corpus",
            )
        )
    if not out:
        raise ValueError(f"--silver {config.silver} annotates no {corpus} training dialogue")
    return out
