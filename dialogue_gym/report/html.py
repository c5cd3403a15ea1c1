"""The HTML report: one self-contained file (inline CSS, plots as inline SVG, no JavaScript).

Per run: a summary table, soft-vs-hard bars, RCSR@t curves, the worst case over user types,
the errored episodes, the LLM usage and the transcripts (:mod:`.transcripts`); with two runs
the paired differences run 2 − run 1 as well.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from dialogue_gym import metrics
from dialogue_gym.evaluation.journal import EPISODES_FILE, SUMMARY_FILE
from dialogue_gym.report.cells import (
    OPTIONAL_HEADERS,
    diff_text,
    escape,
    has_sl,
    num,
    optional_columns,
    p_text,
    ranked,
    t_label,
    with_ci,
)
from dialogue_gym.report.load import ReportError, Run, RunLike, episode_order, load_runs
from dialogue_gym.report.plots import curves_plot, no_plot_html, plots_available, soft_hard_plot
from dialogue_gym.report.stats import group_tau_q, paired_rows, summary_rows, worst_case_rows
from dialogue_gym.report.transcripts import transcripts_html

__all__ = ["DEFAULT_MAX_TRANSCRIPTS", "html_report"]


DEFAULT_MAX_TRANSCRIPTS = 20
"""Transcripts shown per (agent, env id) in the HTML report unless told otherwise."""


_MAX_ERROR_ROWS = 200


_CSS = """
:root { --fg:#1b1f24; --muted:#5b6470; --line:#d8dee4; --bg:#ffffff; --soft:#f6f8fa;
  --ok:#1a7f37; --bad:#cf222e; --warn:#9a6700; --accent:#0969da; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1280px; padding: 24px 28px 64px; color: var(--fg);
  background: var(--bg); font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto,
  "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 8px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 16px; margin: 24px 0 8px; }
p, li { max-width: 90ch; }
.muted { color: var(--muted); }
code { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  background: var(--soft); padding: 1px 4px; border-radius: 4px; }
nav ul { margin: 4px 0; padding-left: 20px; }
a { color: var(--accent); }
table { border-collapse: collapse; margin: 8px 0 12px; font-size: 13px; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fbfcfd; }
.bad { color: var(--bad); font-weight: 600; }
.ok { color: var(--ok); font-weight: 600; }
.warn { color: var(--warn); font-weight: 600; }
figure { margin: 8px 0 16px; }
img.plot { display: block; max-width: 100%; height: auto; border: 1px solid var(--line);
  border-radius: 6px; background: #fff; }
figcaption { color: var(--muted); font-size: 12px; margin-top: 4px; max-width: 90ch; }
details { border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; background: #fff; }
details > summary { cursor: pointer; padding: 6px 10px; list-style-position: inside; }
details[open] > summary { border-bottom: 1px solid var(--line); background: var(--soft); }
details > .body { padding: 8px 10px; overflow-x: auto; }
details.group > summary { font-weight: 600; }
table.transcript { width: 100%; table-layout: fixed; }
table.transcript col.t { width: 3.2em; } table.transcript col.s { width: 5em; }
table.transcript col.judge { width: 13em; } table.transcript col.q { width: 3.5em; }
table.transcript col.events { width: 10em; } table.transcript col.bdi { width: 30%; }
.turn { margin: 0 0 6px; white-space: pre-wrap; overflow-wrap: anywhere; }
.turn .role { display: inline-block; min-width: 4.2em; font-weight: 600; color: var(--muted); }
.turn.system .role { color: var(--accent); }
tr.success-turn td { box-shadow: inset 3px 0 0 var(--ok); }
tr.opening td { color: var(--muted); }
.bdi { font-size: 12px; overflow-wrap: anywhere; }
.bdi .scalars { font-variant-numeric: tabular-nums; white-space: nowrap; }
.bdi .changed { background: #fff8c5; }
.events { font-size: 12px; overflow-wrap: anywhere; }
.votes { color: var(--muted); font-size: 12px; }
pre.config { white-space: pre-wrap; font-size: 12px; margin: 0; }
"""


def _table(
    headers: Sequence[str], body: Sequence[Sequence[str]], numeric: Sequence[bool], cls: str = ""
) -> str:
    """An HTML table; cells are already escaped HTML."""
    head = "".join(
        f'<th{" class=num" if num else ""} scope="col">{h}</th>'
        for h, num in zip(headers, numeric, strict=True)
    )
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=num' if num else ''}>{c}</td>"
            for c, num in zip(cells, numeric, strict=True)
        )
        + "</tr>"
        for cells in body
    )
    attribute = f' class="{cls}"' if cls else ""
    return f"<table{attribute}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _summary_html(rows: Sequence[Mapping[str, Any]]) -> str:
    rows = ranked(rows)
    t = t_label(rows)
    extra = optional_columns(rows)
    sl = has_sl(rows)
    headers = ["agent", "env", "n", "errored", f"SR@{t} [95% CI]"]
    headers += (["SL [95% CI]"] if sl else []) + ["AT [95% CI]"]
    headers += [f"RCSR@{t} [95% CI]", "mean q"] + (["T"] if t == "T" else [])
    headers += [OPTIONAL_HEADERS[key] for key in extra]
    body = []
    for row in rows:
        errored = row["n_errored"]
        cells = [escape(row["agent"]), escape(row["env_id"]), escape(row["n"])]
        cells.append(f'<span class="bad">{errored}</span>' if errored else "0")
        cells.append(escape(with_ci(row, "sr")))
        cells += [escape(with_ci(row, "sl"))] if sl else []
        cells += [escape(with_ci(row, "at")), escape(with_ci(row, "rcsr"))]
        cells.append(escape(num(row.get("mean_q"))))
        cells += [escape(row["T"])] if t == "T" else []
        cells += [escape(num(row.get(key))) for key in extra]
        body.append(cells)
    numeric = [False, False] + [True] * (len(headers) - 2)
    return _table(headers, body, numeric, "summary")


def _worst_html(rows: Sequence[Mapping[str, Any]]) -> str:
    if not rows:
        return (
            '<p class="muted">No agent was evaluated with two or more user types of a task '
            "(e.g. <code>P4G-soft</code> and <code>P4G-hard</code>).</p>"
        )
    t = t_label(rows)
    sl = any("sl" in row for row in rows)
    body = []
    for row in rows:
        (sr_env, sr), (rc_env, rc) = row["sr"], row["rcsr"]
        users = "all env ids" if row["users"] == "all" else f"{row['users']} users"
        cells = [escape(row["agent"]), escape(users), escape(", ".join(row["env_ids"]))]
        cells += [escape(num(sr)), escape(sr_env)]
        if sl:
            sl_env, sl_value = row.get("sl", ("", None))
            cells += [escape(num(sl_value) if "sl" in row else ""), escape(sl_env)]
        body.append([*cells, escape(num(rc)), escape(rc_env)])
    headers = ["agent", "over", "env ids", f"worst SR@{t}", "worst env"]
    headers += ["worst SL", "worst env"] if sl else []
    headers += [f"worst RCSR@{t}", "worst env"]
    numeric = [False, False, False] + [True, False] * ((len(headers) - 3) // 2)
    return _table(headers, body, numeric, "worst")


def _errors_html(run: Run) -> str:
    errored = [r for r in run.records if r.get("errored")]
    if not errored:
        return '<p class="muted">No episode errored.</p>'
    errored.sort(key=lambda r: (r["agent"], r["env_id"], *episode_order(r)))
    shown = errored[:_MAX_ERROR_ROWS]
    body = [
        [
            escape(r["agent"]),
            escape(r["env_id"]),
            escape(r.get("episode", "")),
            escape(r.get("seed", "")),
            escape(r.get("error_source") or ""),
            escape(r.get("error") or ""),
        ]
        for r in shown
    ]
    note = (
        f'<p class="muted">Showing the first {len(shown)} of {len(errored)} errored episodes.</p>'
        if len(shown) < len(errored)
        else ""
    )
    intro = (
        f"<p>{len(errored)} episode(s) errored (an agent, action or backend failure). They are "
        "left out of every rate and counted in the <em>errored</em> column.</p>"
    )
    headers = ["agent", "env", "episode", "seed", "source", "error"]
    return intro + _table(headers, body, [False, False, True, True, False, False]) + note


def _usage_html(run: Run, rows: Sequence[Mapping[str, Any]]) -> str:
    body = []
    for row in rows:
        for component, counters in run.usage(row["agent"], row["env_id"]).items():
            if not isinstance(counters, Mapping):
                continue
            text = ", ".join(f"{k}={v}" for k, v in counters.items())
            body.append(
                [escape(row["agent"]), escape(row["env_id"]), escape(component), escape(text)]
            )
    if not body:
        return ""
    return "<h3>LLM usage</h3>" + _table(
        ["agent", "env", "component", "usage"], body, [False, False, False, False]
    )


def _config_html(run: Run, rows: Sequence[Mapping[str, Any]]) -> str:
    configs = {
        f"{row['agent']} · {row['env_id']}": run.config(row["agent"], row["env_id"]) for row in rows
    }
    configs = {name: config for name, config in configs.items() if config}
    if not configs:
        return '<p class="muted">No <code>summary.json</code> configuration stamp.</p>'
    text = json.dumps(configs, indent=2, ensure_ascii=False, sort_keys=True)
    return (
        '<details class="config"><summary>Configuration (from summary.json)</summary>'
        f'<div class="body"><pre class="config">{escape(text)}</pre></div></details>'
    )


def _run_meta_html(run: Run) -> str:
    created = (run.summary or {}).get("created")
    stamps = [run.config(r["agent"], r["env_id"]) for r in run.records[:1]]
    stamp = stamps[0] if stamps else {}
    items = [f"<li>directory: <code>{escape(run.path)}</code></li>"]
    errored = sum(bool(r.get("errored")) for r in run.records)
    items.append(f"<li>{len(run.records)} episode record(s), {errored} errored</li>")
    if created:
        items.append(f"<li>evaluated: {escape(created)}</li>")
    for key, label in (("dialogue_gym_version", "dialogue_gym"), ("encoder", "encoder")):
        if stamp.get(key):
            items.append(f"<li>{label}: {escape(stamp[key])}</li>")
    if run.summary is None:
        items.append(
            f'<li class="warn">no {SUMMARY_FILE} (an unfinished run?): numbers come from '
            f"{EPISODES_FILE} alone</li>"
        )
    if run.duplicates:
        items.append(
            f"<li>{run.duplicates} repeated record(s) ignored (the first one kept, or the "
            "rerun of an errored one)</li>"
        )
    return f"<ul>{''.join(items)}</ul>"


def _run_section(
    run: Run, index: int, label: str, rows: Sequence[Mapping[str, Any]], n_resamples: int
) -> str:
    tau_q = {group_tau_q(run.config(r["agent"], r["env_id"])) for r in rows}
    tau_text = ", ".join(f"{v:g}" for v in sorted(tau_q))
    parts = [f'<section id="run-{index}"><h2>{escape(label)}</h2>', _run_meta_html(run)]
    parts.append("<h3>Summary</h3>")
    parts.append(_summary_html(rows))
    parts.append(
        f'<p class="muted">SR@T: success within T exchanges; AT: exchanges to success, '
        f"failures counted as T; RCSR@T: successes whose mean rationality q up to the success "
        f"turn is at least τ<sub>q</sub> = {escape(tau_text)}. n counts non-errored episodes; "
        "errored ones are left out of every rate. 95% percentile-bootstrap CIs over episodes "
        f"({n_resamples:,} resamples).</p>"
    )
    if has_sl(rows):
        parts.append(
            '<p class="muted">SL (negotiation): sale-to-list ratio (p<sub>deal</sub> − '
            "p<sub>listing</sub>) / (p<sub>buyer target</sub> − p<sub>listing</sub>) of the "
            "episode's deal, 0 without one; a deal at the asking price scores 0 and is not a "
            "success. The agents of a negotiation env are ranked by mean SL.</p>"
        )
    parts.append(_config_html(run, rows))
    parts.append("<h3>Soft vs hard users</h3>")
    plotting = plots_available()
    bars = soft_hard_plot(rows) if plotting else None
    if bars:
        parts.append(
            f"<figure>{bars}<figcaption>Light: soft (over-compliant) users; dark: hard users. "
            "Whiskers: 95% CIs. A large drop from soft to hard, or from SR to RCSR, means the "
            "agent wins over users who give in rather than users it convinced.</figcaption>"
            "</figure>"
        )
    elif not plotting:
        parts.append(no_plot_html())
    else:
        parts.append(
            '<p class="muted">No agent was evaluated on both the <code>-soft</code> and the '
            "<code>-hard</code> env of a task.</p>"
        )
    parts.append("<h3>RCSR@t curves</h3>")
    curves = curves_plot(rows) if plotting else None
    if not plotting:
        parts.append(no_plot_html())
    elif curves:
        parts.append(
            f"<figure>{curves}<figcaption>RCSR@t (solid) and SR@t (dashed) for t = 1..T per "
            "env id; one colour per agent.</figcaption></figure>"
        )
    parts.append("<h3>Worst case over users</h3>")
    parts.append(_worst_html(worst_case_rows(run)))
    parts.append("<h3>Errored episodes</h3>")
    parts.append(_errors_html(run))
    parts.append(_usage_html(run, rows))
    parts.append("</section>")
    return "".join(parts)


def _paired_html(diffs: Sequence[Mapping[str, Any]]) -> str:
    if not diffs:
        return '<p class="muted">No agent × env id is in both runs.</p>'
    t = t_label(diffs)
    sl = any("sl" in row for row in diffs)
    keys = ("sr", "sl", "at", "rcsr") if sl else ("sr", "at", "rcsr")
    body = []
    for row in diffs:
        cells = [escape(row["agent"]), escape(row["env_id"]), escape(row["n_pairs"])]
        for key in keys:
            diff = row.get(key)
            if diff is None:
                cells += ["", ""]
                continue
            text = escape(diff_text(diff))
            significant = diff.n and (diff.low > 0 or diff.high < 0)
            cells += [f"<b>{text}</b>" if significant else text, escape(p_text(diff))]
        cells.append(escape(row["left_out"]))
        body.append(cells)
    headers = ["agent", "env", "pairs", f"ΔSR@{t} [95% CI]", "p"]
    headers += ["ΔSL [95% CI]", "p"] if sl else []
    headers += ["ΔAT [95% CI]", "p", f"ΔRCSR@{t} [95% CI]", "p", "left out"]
    return _table(headers, body, [False, False] + [True] * (len(headers) - 2), "paired")


def html_report(
    run_dirs: RunLike | Sequence[RunLike],
    max_transcripts: int = DEFAULT_MAX_TRANSCRIPTS,
    n_resamples: int = metrics.N_BOOTSTRAP,
    seed: int = 0,
) -> str:
    """The HTML report of one or two runs, as text (see :mod:`dialogue_gym.report`).

    Args:
        run_dirs: One or two run directories (or :class:`Run` objects).
        max_transcripts: Transcripts shown per (agent, env id): the first ones by episode
            index, plus up to as many errored ones beyond them.
        n_resamples: Bootstrap resamples.
        seed: Bootstrap seed.

    Returns:
        A complete, self-contained HTML document.

    Raises:
        ReportError: A run cannot be read, or ``max_transcripts`` is negative.
    """
    if max_transcripts < 0:
        raise ReportError(f"max_transcripts must be >= 0, got {max_transcripts}")
    runs = load_runs(run_dirs, max_transcripts=max_transcripts)
    rows = [summary_rows(r, n_resamples, seed) for r in runs]
    labels = [f"Run {i}: {r.path}" for i, r in enumerate(runs, start=1)]
    title = "dialogue_gym report — " + " vs ".join(str(r.path) for r in runs)

    from dialogue_gym import __version__

    generated = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    toc = [f'<li><a href="#run-{i}">{escape(label)}</a></li>' for i, label in enumerate(labels, 1)]
    sections = [
        _run_section(r, i, label, rr, n_resamples)
        for i, (r, label, rr) in enumerate(zip(runs, labels, rows, strict=True), 1)
    ]
    if len(runs) == 2:
        toc.append('<li><a href="#paired">Paired differences (run 2 − run 1)</a></li>')
        sections.append(
            '<section id="paired"><h2>Paired differences (run 2 − run 1)</h2>'
            "<p>Per agent × env id present in both runs, episodes matched on their seed (the same "
            "user); pairs where either side errored are left out. Bold: the 95% CI excludes 0. "
            "p: two-sided paired-bootstrap p-value. For AT, negative is better.</p>"
            f"{_paired_html(paired_rows(runs[0], runs[1], n_resamples, seed))}</section>"
        )
    for i, (r, label) in enumerate(zip(runs, labels, strict=True), start=1):
        toc.append(f'<li><a href="#transcripts-{i}">Transcripts, {escape(label)}</a></li>')
        sections.append(
            f'<section id="transcripts-{i}"><h2>Transcripts — {escape(label)}</h2>'
            f"{transcripts_html(r, max_transcripts)}</section>"
        )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        # Nothing may load or run: the file is self-contained, and dialogue text is escaped.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>dialogue_gym report</h1><p class="muted">Generated {escape(generated)} by '
        f"dialogue_gym {escape(__version__)} from {len(runs)} run(s).</p></header>"
        f"<nav><ul>{''.join(toc)}</ul></nav>{''.join(sections)}</body></html>\n"
    )
