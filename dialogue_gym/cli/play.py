"""``dialogue-gym play``: the system seat typed by a person, then the hidden state revealed."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from dialogue_gym import metrics

QUIT = "/quit"
"""What a person types to stop the episode early."""


def read_turn(prompt: str, out: TextIO) -> str | None:
    """Reads one system turn from ``sys.stdin``; ``None`` on EOF, Ctrl-C or ``/quit``."""
    print(prompt, end="", file=out, flush=True)
    try:
        line = sys.stdin.readline()
    except KeyboardInterrupt:
        line = ""
    if not line:
        print(file=out)
        return None
    text = line.rstrip("\r\n")
    if not sys.stdin.isatty():  # piped input: show what was "typed"
        print(text, file=out)
    return None if text.strip() == QUIT else text


def bdi_line(bdi: Mapping[str, Any]) -> str:
    """One line of a BDI state: the three scalars, then belief, desire and intention."""
    return (
        f"ρ={bdi['receptivity']:.2f} c={bdi['confidence']:.2f} v={bdi['valence']:+.2f} | "
        f"B: {bdi['belief']} | D: {bdi['desire']} | I: {bdi['intention']}"
    )


def initial_state(base: Any) -> dict[str, Any] | None:
    """The user's BDI state as a dict right after ``reset`` (``None`` for a user without one)."""
    state = getattr(getattr(base, "user", None), "state", None)
    to_dict = getattr(state, "to_dict", None)
    return to_dict() if callable(to_dict) else None


HIDDEN_KEPT = "(the hidden state is not shown: --no-reveal)"


def reveal(
    base: Any,
    initial: Mapping[str, Any] | None,
    steps: Sequence[Mapping[str, Any]],
    episode: Mapping[str, Any] | None,
    out: TextIO,
) -> None:
    """Prints the hidden state of the episode that was just played."""
    print("\n===== the hidden state =====", file=out)
    user = getattr(base, "user", None)
    persona = getattr(user, "persona", None)
    if persona is not None:
        print(
            f"Persona {persona.id}: {persona.name}, {persona.age}, {persona.occupation}", file=out
        )
        print(f"  background: {persona.background}", file=out)
        print(f"  style: {persona.style}", file=out)
    reveal = getattr(user, "privileged", None)
    privileged = reveal() if callable(reveal) else {}
    if "preset" in privileged:
        print(f"  user preset: {privileged['preset']}", file=out)
    concerns = privileged.get("concerns", {})
    if concerns:
        print("Latent concerns:", file=out)
        for cid, c in concerns.items():
            print(
                f"  {cid:<20} {c['status']:<20} progress {c['progress']}/{c['needed']}  "
                f"strength {c['strength']:.2f}  voiced={c['voiced']}",
                file=out,
            )
    if "willingness" in privileged:
        trajectory = [
            f"{s['privileged']['willingness']:.2f}"
            for s in steps
            if "willingness" in s.get("privileged", {})
        ]
        print(
            f"Willingness: {privileged['willingness']:.2f}  (per exchange: "
            f"{' '.join(trajectory) or '-'}; decision: {privileged.get('decision')})",
            file=out,
        )
    bdis = [s["privileged"]["bdi"] for s in steps if "bdi" in s.get("privileged", {})]
    print("BDI trajectory:", file=out)
    if initial is not None:
        print(f"  t=0  {bdi_line(initial)}", file=out)
    for t, bdi in enumerate(bdis, start=1):
        print(f"  t={t:<2} {bdi_line(bdi)}", file=out)

    qs = [int(s["q"]) for s in steps if "q" in s]
    T = int(getattr(base, "max_exchanges", metrics.DEFAULT_T))
    if episode is None:
        episode = {"success": False, "success_turn": None, "q": qs}
    turn = episode.get("success_turn")
    print("SR/RCSR inputs:", file=out)
    print(f"  success: {bool(episode.get('success'))}  success turn: {turn}", file=out)
    print(f"  q per exchange: {qs}", file=out)
    print(f"  s per exchange: {[round(float(s['s']), 3) for s in steps if 's' in s]}", file=out)
    print(f"  labels: {[s['success_label'] for s in steps if 'success_label' in s]}", file=out)
    if turn:
        mean_q = sum(qs[:turn]) / turn
        rc = metrics.rc_success_within(episode, T)
        print(
            f"  mean q up to the success turn: {mean_q:.2f} (tau_q={metrics.TAU_Q}) -> "
            f"{'rational' if rc else 'NOT rational'} success (counts for RCSR@{T}: {rc})",
            file=out,
        )


def play(env: Any, env_id: str, seed: int | None, out: TextIO, *, show_hidden: bool = True) -> int:
    """Plays one episode of ``env`` (made with ``privileged=True``) with turns typed on stdin.

    The user's replies are printed as they come; at the end (success, the exchange budget,
    EOF, Ctrl-C or ``/quit``) the hidden state of the episode is revealed: persona, concerns,
    willingness, the BDI trajectory and the SR/RCSR inputs — unless ``show_hidden`` is off
    (a blind player who plays several episodes must not learn the users' workings).

    Returns:
        The exit status (0).
    """
    base = env.unwrapped
    card = base.card
    T = int(getattr(base, "max_exchanges", card.max_exchanges))
    observations, _ = env.reset(seed=seed)
    initial = initial_state(base)
    env_id = env.spec.id if getattr(env, "spec", None) else env_id
    print(f"{env_id}  (seed {seed})", file=out)
    print(f"You are the {card.system_role}; the user is a {card.user_role}.", file=out)
    print(f"Goal: {observations['system']['goal']}", file=out)
    print(f"Up to {T} exchanges. Type {QUIT} or press Ctrl-D to stop.\n", file=out)
    steps: list[dict[str, Any]] = []
    episode: Mapping[str, Any] | None = None
    while episode is None:
        text = read_turn(f"[{base.exchange + 1}/{T}] you> ", out)
        if text is None:
            print("(stopped early)", file=out)
            break
        _, _, terminated, truncated, infos = env.step({"system": text})
        info = infos["system"]
        steps.append(info)
        print(f"[{base.exchange}/{T}] user> {base.history[-1][1]}", file=out)
        if terminated["system"] or truncated["system"]:
            episode = info["episode"]
            outcome = "success" if episode["success"] else "no success"
            print(f"\nEpisode over after {episode['turns']} exchanges: {outcome}.", file=out)
    if show_hidden:
        reveal(base, initial, steps, episode, out)
    else:
        print(HIDDEN_KEPT, file=out)
    env.close()
    return 0
