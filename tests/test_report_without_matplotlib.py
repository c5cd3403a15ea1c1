"""The report without matplotlib (the `report` extra): written in full minus the plots, and
it says so once."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
from test_report import toy_records, write_run

from dialogue_gym import report


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes every ``import matplotlib...`` fail, as on an install without the extra."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import raises ImportError
    monkeypatch.setattr(report.plots, "_said_no_plots", False)


def test_report_without_matplotlib_leaves_out_plots_and_says_so_once(
    no_matplotlib: None, tmp_path: Path
) -> None:
    run = write_run(tmp_path / "toy", toy_records())
    with pytest.warns(UserWarning, match=r"matplotlib is not installed.*dialogue-gym\[report\]"):
        out = report.write_report([run], tmp_path / "report.html", n_resamples=200)
    page = out.read_text(encoding="utf-8")
    assert "<img" not in page and "Plot left out: matplotlib is not installed" in page
    assert "Toy-soft-v0" in page and "Worst case over users" in page  # the rest is there
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once: a second report is quiet
        again = report.write_report([run], tmp_path / "again.html", n_resamples=200)
        assert report.soft_hard_plot(report.summary_rows(report.load_run(run))) is None
    assert again.read_text(encoding="utf-8").count("Plot left out") == 2  # bars, curves
    md = report.write_report([run], tmp_path / "table.md", fmt="md", n_resamples=200)
    assert "Toy-soft-v0" in md.read_text(encoding="utf-8")


def test_plots_are_there_with_matplotlib(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    run = write_run(tmp_path / "toy", toy_records())
    out = report.write_report([run], tmp_path / "report.html", n_resamples=200)
    assert out.read_text(encoding="utf-8").count('<img class="plot"') == 2
    assert report.plots_available()
