"""Plots of a report: matplotlib figures as inline SVG images (matplotlib is optional).

Figures are made without pyplot, so no global backend state is touched. matplotlib is the
``report`` extra: without it the report leaves out its plots and says so
(:func:`plots_available`).
"""

from __future__ import annotations

import base64
import io
import math
import re
import textwrap
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from dialogue_gym.report.cells import escape, missing, t_label

__all__ = ["PLOTS_HINT", "curves_plot", "no_plot_html", "plots_available", "soft_hard_plot"]


# An env id of the shipped catalog: task, user type, version (``P4G-hard-v0``).
_USERS = re.compile(r"^(?P<task>.+)-(?P<users>soft|hard)(?:-(?P<version>v\d+))?$")


PLOTS_HINT = 'pip install "dialogue-gym[report]"'
"""How to get the plots (matplotlib is the ``report`` extra)."""


_said_no_plots = False


def plots_available() -> bool:
    """Whether matplotlib imports (the ``report`` extra).

    The first time it does not, warns once that the report leaves out its plots (everything
    else is written as usual).
    """
    global _said_no_plots
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if not _said_no_plots:
            _said_no_plots = True
            warnings.warn(
                f"matplotlib is not installed: the report leaves out its plots ({PLOTS_HINT})",
                stacklevel=2,
            )
        return False
    return True


def no_plot_html() -> str:
    """The note that stands in for a plot when matplotlib is not installed."""
    return (
        f'<p class="muted">Plot left out: matplotlib is not installed ({escape(PLOTS_HINT)}).</p>'
    )


def _svg_image(figure: Any, alt: str, css_class: str = "plot") -> str:
    """The figure as an ``<img>`` holding an SVG data URI (self-contained, ids isolated)."""
    import matplotlib

    buffer = io.BytesIO()
    # Glyphs as paths: the SVG needs no font; a fixed hash salt and no date: same input,
    # same bytes.
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "dialogue-gym"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    width, height = (round(v * 96) for v in figure.get_size_inches())  # CSS px
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return (
        f'<img class="{css_class}" src="data:image/svg+xml;base64,{data}" '
        f'width="{width}" height="{height}" alt="{escape(alt)}">'
    )


def _plot_label(agent: str, width: int = 24) -> str:
    """A short agent name for plot labels: ``file.py:Class`` for a path, wrapped to ``width``."""
    name = agent.replace("\\", "/").rsplit("/", 1)[-1]
    return "\n".join(textwrap.wrap(name, width)) or name


def _agent_colors(agents: Sequence[str]) -> dict[str, Any]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    palette = [cmap(i) for i in range(cmap.N)]
    return {agent: palette[i % len(palette)] for i, agent in enumerate(agents)}


def _soft_hard_pairs(
    rows: Sequence[Mapping[str, Any]],
) -> list[tuple[str, str, Mapping[str, Any], Mapping[str, Any]]]:
    """``(agent, task, soft row, hard row)`` for every agent × task run with both users."""
    found: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
    for row in rows:
        match = _USERS.match(row["env_id"])
        if match is None:
            continue
        task = match["task"] + (f"-{match['version']}" if match["version"] else "")
        found.setdefault((row["agent"], task), {})[match["users"]] = row
    return [
        (agent, task, users["soft"], users["hard"])
        for (agent, task), users in found.items()
        if "soft" in users and "hard" in users
    ]


def _bar_values(
    rows: Sequence[Mapping[str, Any]], key: str
) -> tuple[list[float], list[list[float]]]:
    """Bar heights and asymmetric error bars from the CIs (undefined values: 0, no bar)."""
    heights, below, above = [], [], []
    for row in rows:
        value, (low, high) = row.get(key), row.get(f"{key}_ci") or (None, None)
        if value is None or missing(value):
            heights.append(0.0)
            below.append(0.0)
            above.append(0.0)
            continue
        heights.append(float(value))
        low_ok, high_ok = not (low is None or missing(low)), not (high is None or missing(high))
        below.append(max(0.0, float(value) - float(low)) if low is not None and low_ok else 0.0)
        above.append(max(0.0, float(high) - float(value)) if high is not None and high_ok else 0.0)
    return heights, [below, above]


def soft_hard_plot(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Grouped bars of SR@T and RCSR@T, soft versus hard users, per agent × task.

    Args:
        rows: :func:`summary_rows` of one run.

    Returns:
        An ``<img>`` element, or ``None`` when no agent was run on both the ``-soft`` and the
        ``-hard`` env of a task, or matplotlib is not installed (:func:`plots_available`).
    """
    pairs = _soft_hard_pairs(rows)
    if not pairs or not plots_available():
        return None
    from matplotlib.figure import Figure

    t = t_label([row for pair in pairs for row in pair[2:]])
    figure = Figure(figsize=(max(6.0, 2.0 * len(pairs) + 1.5), 5.2), layout="constrained")
    axes = figure.subplots(2, 1, sharex=True)
    positions = list(range(len(pairs)))
    width = 0.38
    for ax, key, title in zip(axes, ("sr", "rcsr"), (f"SR@{t}", f"RCSR@{t}"), strict=True):
        for offset, users, color, column in (
            (-width / 2, "soft", "#9ecae1", 0),
            (width / 2, "hard", "#2171b5", 1),
        ):
            chosen = [pair[2:][column] for pair in pairs]  # the soft or the hard row
            heights, errors = _bar_values(chosen, key)
            bars = ax.bar(
                [p + offset for p in positions],
                heights,
                width,
                yerr=errors,
                capsize=3,
                color=color,
                label=f"{users} users",
                error_kw={"elinewidth": 1, "ecolor": "#444444"},
            )
            labels = ["n/a" if missing(row.get(key)) else f"{row[key]:.2f}" for row in chosen]
            ax.bar_label(bars, labels=labels, padding=2, fontsize=7, label_type="edge")
        ax.set_ylabel(title)
        ax.set_ylim(0, 1.18)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0].legend(loc="upper right", fontsize=8, ncols=2, frameon=False)
    axes[0].set_title("Soft vs hard users (95% bootstrap CIs)", fontsize=10)
    axes[1].set_xticks(
        positions, labels=[f"{_plot_label(agent)}\n{task}" for agent, task, _, _ in pairs]
    )
    return _svg_image(figure, f"Bar chart: SR@{t} and RCSR@{t} for soft versus hard users")


def curves_plot(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """RCSR@t (solid) and SR@t (dashed) for t = 1..T, one panel per env id, one line per agent.

    Args:
        rows: :func:`summary_rows` of one run.

    Returns:
        An ``<img>`` element, or ``None`` when there are no rows or matplotlib is not
        installed (:func:`plots_available`).
    """
    if not rows or not plots_available():
        return None
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    env_ids = list(dict.fromkeys(row["env_id"] for row in rows))
    colors = _agent_colors(list(dict.fromkeys(row["agent"] for row in rows)))
    columns = min(3, len(env_ids))
    lines = math.ceil(len(env_ids) / columns)
    figure = Figure(figsize=(4.0 * columns + 0.6, 3.0 * lines + 0.9), layout="constrained")
    axes = figure.subplots(lines, columns, squeeze=False)
    for ax, env_id in zip(axes.flat, env_ids, strict=False):
        for row in rows:
            if row["env_id"] != env_id:
                continue
            color = colors[row["agent"]]
            rc = [math.nan if v is None else v for v in row.get("rcsr_curve") or []]
            sr = [math.nan if v is None else v for v in row.get("sr_curve") or []]
            ax.plot(range(1, len(rc) + 1), rc, marker="o", markersize=3, color=color)
            ax.plot(range(1, len(sr) + 1), sr, linestyle="--", color=color, alpha=0.45)
        horizon = max(len(row.get("rcsr_curve") or []) for row in rows if row["env_id"] == env_id)
        ax.set_xticks(range(1, horizon + 1))
        ax.set_xlim(0.7, horizon + 0.3)
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(env_id, fontsize=10)
        ax.set_xlabel("t (exchanges)")
        ax.set_ylabel("rate")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(env_ids) :]:
        ax.set_visible(False)
    handles = [
        Line2D([], [], color=c, marker="o", markersize=3, label=_plot_label(a))
        for a, c in colors.items()
    ]
    handles += [
        Line2D([], [], color="#555555", label="RCSR@t (solid)"),
        Line2D([], [], color="#555555", linestyle="--", alpha=0.6, label="SR@t (dashed)"),
    ]
    figure.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(2 * columns, len(handles)),
        frameon=False,
    )
    return _svg_image(figure, "Line chart: RCSR@t and SR@t for t = 1..T per env id and agent")
