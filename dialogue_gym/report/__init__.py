"""Reports of evaluation runs: one self-contained HTML file, or md/csv leaderboard tables.

A *run directory* is what :func:`dialogue_gym.evaluate` (``dialogue-gym eval --out DIR``)
writes: ``DIR/episodes.jsonl`` (one record per episode) and ``DIR/summary.json``. Every number
in a report is recomputed from ``episodes.jsonl`` with :mod:`dialogue_gym.metrics`, so a run
that was interrupted (no ``summary.json`` yet) or resumed reports exactly what is on disk;
``summary.json`` only contributes the configuration stamp (``T``, ``τ_q``, versions) and the
LLM usage.

The HTML report is a single file with no external references (inline CSS, plots as inline
SVG images, no JavaScript): per run a summary table (SR@T, AT, RCSR@T with 95% bootstrap CIs,
episodes and errored episodes per agent × env; on negotiation tasks also the sale-to-list ratio
SL next to SR, with the agents ranked by it), soft-vs-hard bars, RCSR@t curves, the worst
case over user types, the errored episodes, and collapsible per-episode transcripts with the
per-exchange progress ``s_t``, the user's revealed BDI state, the judge's label and votes,
rationality ``q`` and the user's events. Given two runs it adds paired bootstrap differences
(run 2 − run 1) per (agent, env id), matched on episode seeds.

The package: :mod:`.load` reads run directories, :mod:`.stats` computes the numbers,
:mod:`.tables` writes md/csv, :mod:`.plots` draws (matplotlib optional), :mod:`.html` and
:mod:`.transcripts` build the HTML file, :mod:`.cli` writes files and runs the command;
:mod:`.cells` formats values for all of them. Everything public is importable from here.

Errored episodes are never dropped silently: the metrics leave them out of every rate (see
:mod:`dialogue_gym.metrics`), the tables count them, and the HTML lists each with its error.

Example:
    >>> from dialogue_gym.report import markdown_table, write_report
    >>> write_report(["runs/a"], "runs/a/report.html")  # doctest: +SKIP
    >>> print(markdown_table(["runs/a", "runs/b"]))  # doctest: +SKIP

Command line::

    dialogue-gym report runs/a                      # writes runs/a/report.html
    dialogue-gym report runs/a runs/b --out cmp.html
    dialogue-gym report runs/a --format md          # the leaderboard table on stdout
"""

from dialogue_gym.report.cli import FORMATS, add_parser, default_output, run, write_report
from dialogue_gym.report.html import DEFAULT_MAX_TRANSCRIPTS, html_report
from dialogue_gym.report.load import ReportError, Run, RunLike, load_run, load_runs
from dialogue_gym.report.plots import PLOTS_HINT, curves_plot, plots_available, soft_hard_plot
from dialogue_gym.report.stats import paired_rows, summary_rows, worst_case_rows
from dialogue_gym.report.tables import CSV_COLUMNS, csv_table, markdown_table

__all__ = [
    "CSV_COLUMNS",
    "DEFAULT_MAX_TRANSCRIPTS",
    "FORMATS",
    "PLOTS_HINT",
    "ReportError",
    "Run",
    "RunLike",
    "add_parser",
    "csv_table",
    "curves_plot",
    "default_output",
    "html_report",
    "load_run",
    "load_runs",
    "markdown_table",
    "paired_rows",
    "plots_available",
    "run",
    "soft_hard_plot",
    "summary_rows",
    "worst_case_rows",
    "write_report",
]
