"""What an environment reveals of its hidden user: the privileged view and the concern metrics.

Never part of an observation: :func:`privileged_view` fills ``infos[seat]["privileged"]`` only
for envs built with ``privileged=True`` (SI-AVPO teacher views, critics, probes), and
:func:`concern_metrics` adds CSR and proactivity to the episode record. :func:`public_events`
is the unprivileged part of the user's events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dialogue_gym.cards.card import TaskCard
from dialogue_gym.mind.bdi import BDI

__all__ = ["CONCERN_EVENTS", "concern_metrics", "discounted", "privileged_view", "public_events"]

CONCERN_EVENTS = ("addressed", "proactive", "probed", "anti", "voiced", "resolved", "withheld")
"""User-event kinds that name a latent concern (``kind:<concern id>``): privileged, so they
appear only in ``infos[seat]["privileged"]["user_events"]`` and in :meth:`DialogueEnv.revealed`;
the unprivileged ``user_events`` keep the other events (``rapport``, ``ask``, ``pressure``, ...)."""


def public_events(events: Sequence[str]) -> list[str]:
    """The user events that reveal nothing of the user's latent concerns."""
    return [e for e in events if e.split(":", 1)[0] not in CONCERN_EVENTS]


def privileged_view(
    card: TaskCard,
    bdi: BDI,
    initial_bdi: BDI,
    before: Mapping[str, Any],
    after: Mapping[str, Any],
) -> dict[str, Any]:
    """``infos[seat]["privileged"]``: the hidden side of the user, never observed.

    ``bdi`` is the teacher state now, ``initial_bdi`` the user's state before the dialogue,
    ``before``/``after`` the user's own privileged records around the last exchange.

    Holds the teacher state (``bdi``, ``initial_bdi``), the user's own privileged record
    (``willingness``, ``decision``, ``concerns`` statuses, ...), and for SI-AVPO:

    * ``internal_persona`` — P_int as data: per latent concern its ``facet``,
      ``description``, resistance point (``resistance``; ``needed`` addressing turns for
      this persona), ``strength``, ``blocking_weight``, unlock conditions (``unlock``
      prototypes, ``unlock_cues`` regexes), anti-patterns (``anti_patterns``,
      ``anti_cues``) and its current ``status``, ``progress``, ``voiced`` and ``phase``.
    * ``delta_w`` — the willingness shift Δw of the last exchange (0 at ``reset``; ``None``
      for users without a willingness).
    * ``user_events`` (after a step) — all of the user's events of the exchange, the
      concern events (:data:`CONCERN_EVENTS`, ``proactive:<id>``, ...) included; the
      unprivileged ``user_events`` leave those out.
    * ``transitions`` — the concerns whose phase the last exchange changed,
      ``{id: [before, after]}``; phases are ``latent`` (unresolved, not voiced),
      ``voiced`` (unresolved, raised by the user), ``partially_addressed`` and
      ``resolved`` (e.g. ``{"platform_trust": ["latent", "voiced"]}``).
    """
    w_before, w_after = before.get("willingness"), after.get("willingness")
    delta_w = None
    if w_before is not None and w_after is not None:
        delta_w = round(float(w_after) - float(w_before), 6)
    phases_before = {cid: _phase(c) for cid, c in (before.get("concerns") or {}).items()}
    phases = {cid: _phase(c) for cid, c in (after.get("concerns") or {}).items()}
    return {
        "bdi": bdi.to_dict(),
        "initial_bdi": initial_bdi.to_dict(),
        **after,
        "internal_persona": {
            "persona": after.get("persona"),
            "concerns": {
                cid: {**_concern_data(card, cid), **state, "phase": phases[cid]}
                for cid, state in (after.get("concerns") or {}).items()
            },
        },
        "delta_w": delta_w,
        "transitions": {
            cid: [phases_before.get(cid, "absent"), phase]
            for cid, phase in phases.items()
            if phases_before.get(cid) != phase
        },
    }


def _concern_data(card: TaskCard, concern_id: str) -> dict[str, Any]:
    """The card's static definition of a latent concern (empty if the card has none)."""
    try:
        concern = card.concern(concern_id)
    except KeyError:
        return {}
    return {
        "facet": concern.facet,
        "description": concern.description,
        "resistance": concern.resistance,
        "blocking_weight": concern.blocking_weight,
        "unlock": list(concern.unlock),
        "unlock_cues": [cue.pattern for cue in concern.unlock_cues],
        "anti_patterns": list(concern.anti),
        "anti_cues": [cue.pattern for cue in concern.anti_cues],
    }


def concern_metrics(
    concerns: Mapping[str, Mapping[str, Any]] | None, events: Sequence[Sequence[str]]
) -> dict[str, float]:
    """CSR and the two proactivity measures for users with latent concerns (CUS metrics).

    ``concerns`` is the user's privileged concern record at the end (none: no metrics),
    ``events`` the user's events per exchange.

    * ``csr`` — the share of the user's latent concerns resolved at the end.
    * ``proactivity`` — the share of the user's latent concerns the system addressed
      *before* the user voiced them: how well it anticipated them instead of reacting.
    * ``proactive_turns`` — the number of initiative-taking system turns (the per-dialogue
      count the SI-AVPO paper reports): exchanges in which the system addressed a latent
      concern the user had not voiced (user event ``proactive:<id>``) or probed one into
      the open (an open question that made the user voice a concern it had not voiced:
      ``probed:<id>``). An exchange counts once, however many concerns it touched.
    """
    if not concerns:
        return {}
    resolved = sum(c["status"] == "resolved" for c in concerns.values())
    anticipated = {
        event.split(":", 1)[1]
        for turn_events in events
        for event in turn_events
        if event.startswith("proactive:")
    }
    initiative = sum(
        any(
            e.startswith(("proactive:", "probed:")) and e.split(":", 1)[1] in concerns
            for e in turn_events
        )
        for turn_events in events
    )
    return {
        "csr": resolved / len(concerns),
        "proactivity": len(anticipated & set(concerns)) / len(concerns),
        "proactive_turns": initiative,
    }


def discounted(rewards: Sequence[float], gamma: float) -> float:
    """The episode's discounted return ``Σ_t γ^t r_t`` (t from 0 at the first exchange)."""
    return float(sum(gamma**t * r for t, r in enumerate(rewards)))


def _phase(concern: Mapping[str, Any]) -> str:
    """A concern's phase: ``latent``, ``voiced``, ``partially_addressed`` or ``resolved``."""
    status = str(concern.get("status", "unresolved"))
    if status != "unresolved":
        return status
    return "voiced" if concern.get("voiced") else "latent"
