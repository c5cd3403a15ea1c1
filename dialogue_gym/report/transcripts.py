"""The transcripts section of the HTML report: one collapsible block per episode.

Each exchange shows the system and user turns, the progress ``s_t``, the success judge's
label, score and votes, the rationality ``q`` of the system turn, the user's events and the
user's revealed BDI state after the exchange.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from dialogue_gym import metrics
from dialogue_gym.report.cells import escape, is_number, num, value_text
from dialogue_gym.report.load import Run, episode_order
from dialogue_gym.report.stats import group_horizon, group_tau_q

__all__ = ["transcripts_html"]


_BDI_TEXT = (("belief", "B"), ("desire", "D"), ("intention", "I"))


_BDI_SCALARS = (("receptivity", "ρ"), ("confidence", "c"), ("valence", "v"))


def _bdi_html(state: Any, previous: Any) -> str:
    if not isinstance(state, Mapping):
        return '<span class="muted">—</span>' if state is None else escape(state)
    before = previous if isinstance(previous, Mapping) else {}

    def mark(key: str, content: str) -> str:
        changed = before and before.get(key) != state.get(key)
        return f'<span class="changed">{content}</span>' if changed else content

    scalars = []
    for key, symbol in _BDI_SCALARS:
        if key in state:
            signed = key == "valence"
            text = f'<span title="{key}">{symbol} {escape(num(state[key], 2, signed))}</span>'
            scalars.append(mark(key, text))
    parts = [f'<div class="scalars">{" · ".join(scalars)}</div>'] if scalars else []
    known = {key for key, _ in _BDI_TEXT + _BDI_SCALARS}
    for key, letter in _BDI_TEXT:
        if key in state:
            parts.append(f"<div><b>{letter}</b> {mark(key, escape(state[key]))}</div>")
    for key, value in state.items():
        if key not in known:
            parts.append(f"<div><b>{escape(key)}</b> {mark(key, escape(value))}</div>")
    return f'<div class="bdi">{"".join(parts)}</div>'


def _votes_text(votes: Any) -> str:
    if not isinstance(votes, list) or not votes:
        return ""
    counts = Counter(str(v) for v in votes)
    return ", ".join(f"{label} ×{n}" if n > 1 else label for label, n in counts.items())


def _q_text(q: Any) -> str:
    """Rationality of a system turn: ``+1``, ``-1`` or ``0`` (empty when not recorded)."""
    if q is None:
        return ""
    return "0" if is_number(q) and q == 0 else num(q, 0, signed=True)


def _at(values: Any, index: int) -> Any:
    return values[index] if isinstance(values, list) and 0 <= index < len(values) else None


def _turn_html(turn: Any) -> str:
    if not isinstance(turn, Mapping):
        return ""
    role = str(turn.get("role", ""))
    css = "system" if role == "system" else "user"
    return (
        f'<div class="turn {css}"><span class="role">{escape(role)}</span> '
        f"{escape(turn.get('text', ''))}</div>"
    )


def _exchange_count(record: Mapping[str, Any]) -> int:
    return max(
        (
            len(record[key])
            for key in ("q", "s", "labels", "states", "votes", "events")
            if isinstance(record.get(key), list)
        ),
        default=0,
    )


def _split_transcript(
    record: Mapping[str, Any], exchanges: int
) -> tuple[list[Any], list[list[Any]], list[Any]]:
    """``(opening turns, [system, user] per judged exchange, trailing unjudged turns)``.

    A transcript is the corpus opening (``h0_turns``), then one system and one user turn per
    exchange; an episode that errored mid-exchange may end with a system turn and no reply.
    """
    transcript = list(record.get("transcript") or [])
    extra = len(transcript) - 2 * exchanges
    last_role = (
        transcript[-1].get("role") if transcript and isinstance(transcript[-1], Mapping) else None
    )
    trailing = 1 if extra >= 1 and record.get("errored") and last_role == "system" else 0
    opening = max(extra - trailing, 0)
    body = transcript[opening : len(transcript) - trailing]
    pairs = [body[2 * k : 2 * k + 2] for k in range(exchanges)]
    rest = body[2 * exchanges :] + transcript[len(transcript) - trailing :]
    return transcript[:opening], pairs, rest


def _outcome_html(record: Mapping[str, Any], horizon: int, tau_q: float) -> str:
    if record.get("errored"):
        source = record.get("error_source") or "?"
        return f'<span class="warn">⚠ errored ({escape(source)})</span>'
    if metrics.success_within(record, horizon):
        rc = metrics.rc_success_within(record, horizon, tau_q)
        rc_text = (
            '<span class="ok">counts for RCSR</span>'
            if rc
            else f'<span class="bad">not rational (mean q &lt; {tau_q:g}): no RCSR</span>'
        )
        return (
            f'<span class="ok">✓ success at t={escape(record["success_turn"])}</span> · {rc_text}'
        )
    return '<span class="bad">✗ no success</span>'


def _episode_html(record: Mapping[str, Any], horizon: int, tau_q: float) -> str:
    exchanges = _exchange_count(record)
    facts = [
        f"episode {escape(record.get('episode', '?'))}",
        f"seed {escape(record.get('seed', '?'))}",
    ]
    facts.append(_outcome_html(record, horizon, tau_q))
    facts.append(f"{exchanges} exchange(s)")
    for key, label in (("persona", "persona"), ("return_system", "return")):
        if record.get(key) is not None:
            value = record[key]
            facts.append(f"{label} {escape(value_text(value))}")
    summary = " · ".join(facts)

    details = []
    if record.get("errored"):
        details.append(f'<p class="warn">Error: {escape(record.get("error") or "unknown")}</p>')
    extras = [
        f"{key} = {escape(value_text(record[key]))}"
        for key in (
            "return_user",
            "fallbacks",
            "csr",
            "proactivity",
            "proactive_turns",
            "deal_price",
            "utility",
            "sl",
        )
        if record.get(key) is not None
    ]
    if extras:
        details.append(f'<p class="muted">{" · ".join(extras)}</p>')
    if "transcript" not in record:
        details.append('<p class="muted">No transcript in this record.</p>')

    opening, pairs, rest = _split_transcript(record, exchanges)
    success_turn = record.get("success_turn") if record.get("success") else None
    rows = []
    initial = record.get("initial_state")
    if initial is not None:
        rows.append(
            '<tr class="initial"><td class="num">0</td><td class="muted">initial state, before '
            "the dialogue</td><td></td><td></td><td></td><td></td>"
            f"<td>{_bdi_html(initial, None)}</td></tr>"
        )
    for turn in opening:
        rows.append(
            f'<tr class="opening"><td class="num">–</td><td>{_turn_html(turn)}'
            '<span class="muted">(opening turn)</span></td><td></td><td></td><td></td><td></td>'
            "<td></td></tr>"
        )
    states = record.get("states")
    previous = initial
    for k in range(exchanges):
        turns = "".join(_turn_html(turn) for turn in pairs[k])
        s_value = _at(record.get("s"), k)
        label, score = _at(record.get("labels"), k), _at(record.get("scores"), k)
        judge = escape(label) if label is not None else ""
        if score is not None:
            judge += f' <span class="votes">({escape(num(score, 2, signed=True))})</span>'
        votes = _votes_text(_at(record.get("votes"), k))
        if votes:
            judge += f'<div class="votes">votes: {escape(votes)}</div>'
        q = _at(record.get("q"), k)
        events = _at(record.get("events"), k)
        events_text = ", ".join(str(e) for e in events) if isinstance(events, list) else ""
        state = _at(states, k)
        css = ' class="success-turn"' if success_turn == k + 1 else ""
        rows.append(
            f'<tr{css}><td class="num">{k + 1}</td><td>{turns}</td>'
            f'<td class="num">{escape(num(s_value, 3))}</td><td>{judge}</td>'
            f'<td class="num">{escape(_q_text(q))}</td>'
            f'<td class="events">{escape(events_text)}</td>'
            f"<td>{_bdi_html(state, previous)}</td></tr>"
        )
        previous = state if state is not None else previous
    for turn in rest:
        rows.append(
            f'<tr class="opening"><td class="num">–</td><td>{_turn_html(turn)}'
            '<span class="muted">(not judged: the episode errored)</span></td><td></td><td></td>'
            "<td></td><td></td><td></td></tr>"
        )
    if rows:
        details.append(
            '<table class="transcript"><colgroup><col class="t"><col class="text"><col class="s">'
            '<col class="judge"><col class="q"><col class="events"><col class="bdi"></colgroup>'
            '<thead><tr><th class="num">t</th><th>exchange</th><th class="num">s<sub>t</sub></th>'
            '<th>judge label (score)</th><th class="num">q</th><th>user events</th>'
            "<th>user's BDI state after (revealed)</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
        )
    return (
        f'<details class="episode"><summary>{summary}</summary>'
        f'<div class="body">{"".join(details)}</div></details>'
    )


def _select_transcripts(records: Sequence[Mapping[str, Any]], cap: int) -> list[Mapping[str, Any]]:
    """The first ``cap`` episodes plus up to ``cap`` errored ones beyond them, by episode."""
    first = list(records[:cap])
    errored = [r for r in records[cap:] if r.get("errored")][:cap]
    return sorted(first + errored, key=episode_order)


def transcripts_html(run: Run, max_transcripts: int) -> str:
    """The transcripts of a run: per (agent, env id) those :func:`_select_transcripts` picks."""
    groups = run.groups()
    total = sum(len(records) for records in groups.values())
    blocks = []
    shown_total = 0
    for (agent, env_id), records in groups.items():
        config = run.config(agent, env_id)
        horizon, tau_q = group_horizon(records, config), group_tau_q(config)
        chosen = _select_transcripts(records, max_transcripts)
        shown_total += len(chosen)
        n_errored = sum(bool(r.get("errored")) for r in records)
        label = f"{agent} · {env_id} — {len(chosen)} of {len(records)} episode(s) shown"
        if n_errored:
            label += f", {n_errored} errored"
        episodes = "".join(_episode_html(r, horizon, tau_q) for r in chosen)
        blocks.append(
            f'<details class="group"><summary>{escape(label)}</summary>'
            f'<div class="body">{episodes or "<p class=muted>none shown</p>"}</div></details>'
        )
    note = (
        f"<p>Showing {shown_total} of {total} episode(s): per agent × env the first "
        f"{max_transcripts} episodes, plus up to {max_transcripts} errored ones beyond them "
        "(<code>--max-transcripts</code> sets the cap). Each exchange shows the system and "
        "user turns, the progress s<sub>t</sub>, the success judge's label, score and votes, "
        "the rationality q of the system turn, the user's events and the user's hidden BDI state "
        "after the exchange (revealed after the episode; changes are highlighted).</p>"
    )
    return note + "".join(blocks)
