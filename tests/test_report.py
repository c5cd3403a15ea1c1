"""Tests for dialogue_gym.report: md/csv tables, errors, paired differences, the HTML report.

Two kinds of run directories are used: a real one written by ``evaluate`` (P4G soft and hard,
the hashing encoder, a few episodes, and an agent that says ``<script>`` and fails on one
seed), and hand-written ones whose numbers are known exactly. The HTML report is opened in
headless Chromium (Debian's ``/usr/bin/chromium`` driven by playwright; no browser download).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dialogue_gym import metrics
from dialogue_gym.cli.commands import main
from dialogue_gym.evaluation.run import EPISODES_FILE, SUMMARY_FILE, EvalResult, evaluate
from dialogue_gym.report import (
    CSV_COLUMNS,
    ReportError,
    csv_table,
    html_report,
    load_run,
    markdown_table,
    paired_rows,
    summary_rows,
    worst_case_rows,
    write_report,
)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCRIPT_TEXT = "<script>window.__pwned = 1</script> Please donate & help </td> the children."

AGENT_FILE = textwrap.dedent(
    f"""
    class Shouty:
        \"\"\"Says HTML, and fails at its third turn of the episode seeded 2.\"\"\"

        def __init__(self, card=None, **kwargs):
            self.seed = None
            self.turn = 0

        def reset(self, seed=None):
            self.seed = seed
            self.turn = 0

        def act(self, observation):
            self.turn += 1
            if self.seed == 2 and self.turn == 3:
                raise RuntimeError("boom <b>not bold</b>")
            return {SCRIPT_TEXT!r}
    """
)

BDI = {
    "belief": "The user doubts small gifts help.",
    "desire": "The user wants impact.",
    "intention": "The user intends to listen.",
    "receptivity": 0.3,
    "confidence": 0.3,
    "valence": 0.0,
}


# -- run directories ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run written by ``evaluate``: scripted and Shouty on P4G-soft and P4G-hard."""
    base = tmp_path_factory.mktemp("real")
    agent_file = base / "shouty_agent.py"
    agent_file.write_text(AGENT_FILE, encoding="utf-8")
    out = base / "run"
    evaluate(
        ["scripted", f"{agent_file}:Shouty"],
        ["P4G-soft", "P4G-hard"],
        episodes=4,
        out=out,
        env_kwargs={"encoder": "hashing"},
        agent_kwargs={"encoder": "hashing"},  # the scripted agent's concern detector
        progress=False,
    )
    return out


def episode(
    agent: str,
    env_id: str,
    index: int,
    *,
    success_turn: int | None = None,
    q: list[int] | None = None,
    errored: bool = False,
    seed: int | None = None,
    turns: int | None = None,
    T: int = 8,
) -> dict[str, Any]:
    """A hand-written episode record in the format ``evaluate`` writes."""
    n = turns if turns is not None else (success_turn or T)
    q = q if q is not None else [1] * n
    transcript = []
    for k in range(1, n + 1):
        transcript.append({"role": "system", "text": f"system turn {k} of episode {index}"})
        transcript.append({"role": "user", "text": f"user turn {k} of episode {index}"})
    return {
        "agent": agent,
        "env_id": env_id,
        "episode": index,
        "seed": index if seed is None else seed,
        "success": success_turn is not None,
        "success_turn": success_turn,
        "turns": n,
        "T": T,
        "q": q,
        "s": [round(0.1 * k, 3) for k in range(1, n + 1)],
        "labels": ["neutral"] * (n - 1) + ["agree" if success_turn else "neutral"],
        "scores": [-0.5] * (n - 1) + [1.0 if success_turn else -0.5],
        "return_system": 0.5,
        "return_user": 1.0,
        "fallbacks": 0,
        "errored": errored,
        "error": "RuntimeError: boom" if errored else None,
        "error_source": "agent" if errored else None,
        "transcript": transcript,
        "events": [["rapport"] for _ in range(n)],
        "initial_state": dict(BDI),
        "states": [dict(BDI, receptivity=round(0.3 + 0.05 * k, 2)) for k in range(1, n + 1)],
        "votes": [["neutral", "neutral", "positive"] for _ in range(n)],
    }


def write_run(path: Path, records: list[dict[str, Any]], summary: Any = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in records]
    (path / EPISODES_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    if summary is not None:
        (path / SUMMARY_FILE).write_text(json.dumps(summary), encoding="utf-8")
    return path


def toy_records() -> list[dict[str, Any]]:
    """Alpha on Toy-soft (10 episodes, one errored), Toy-hard (5) and Other-hard (3)."""
    soft = "Toy-soft-v0"
    records = [episode("alpha", soft, i, success_turn=3) for i in range(3)]  # rational
    records += [episode("alpha", soft, i, success_turn=5, q=[1, -1, -1, 1, 1]) for i in (3, 4)]
    records += [episode("alpha", soft, i) for i in (5, 6, 7, 8)]  # failures
    records.append(episode("alpha", soft, 9, errored=True, turns=2))
    records.append(episode("alpha", "Toy-hard-v0", 0, success_turn=8))
    records += [episode("alpha", "Toy-hard-v0", i) for i in range(1, 5)]
    records += [episode("alpha", "Other-hard-v0", i, success_turn=2) for i in range(3)]
    return records


@pytest.fixture
def toy_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "toy", toy_records())


def expected_soft() -> dict[str, Any]:
    """The alpha × Toy-soft-v0 numbers, computed here from the records' definition."""
    valid = [r for r in toy_records() if r["env_id"] == "Toy-soft-v0" and not r["errored"]]
    sr = [float(r["success"] and r["success_turn"] <= 8) for r in valid]
    at = [float(r["success_turn"]) if r["success"] else 8.0 for r in valid]
    rc = [
        float(r["success"] and sum(r["q"][: r["success_turn"]]) / r["success_turn"] >= 0.7)
        for r in valid
    ]
    assert (sum(sr), sum(at), sum(rc), len(valid)) == (5, 51, 3, 9)
    return {
        "n": len(valid),
        "sr": metrics.bootstrap_ci(sr),
        "at": metrics.bootstrap_ci(at),
        "rcsr": metrics.bootstrap_ci(rc),
    }


def ci_text(interval: metrics.Interval) -> str:
    return f"{interval.mean:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


# -- md and csv --------------------------------------------------------------------------------


def test_markdown_table_numbers(toy_run: Path) -> None:
    expected = expected_soft()
    text = markdown_table(toy_run)
    lines = text.strip().splitlines()
    assert lines[0] == (
        "| agent | env | SR@8 [95% CI] | AT [95% CI] | RCSR@8 [95% CI] | n | errored |"
    )
    assert lines[1] == "|---|---|---:|---:|---:|---:|---:|"
    assert len(lines) == 2 + 3  # one row per agent × env
    soft = lines[2]
    assert soft == (
        f"| alpha | Toy-soft-v0 | {ci_text(expected['sr'])} | {ci_text(expected['at'])} | "
        f"{ci_text(expected['rcsr'])} | 9 | 1 |"
    )
    assert "| alpha | Toy-hard-v0 | 0.20 [" in lines[3] and lines[3].endswith("| 5 | 0 |")


def test_csv_table_numbers(toy_run: Path) -> None:
    expected = expected_soft()
    rows = list(csv.DictReader(io.StringIO(csv_table([toy_run]))))
    assert list(rows[0]) == list(CSV_COLUMNS)
    assert [(r["agent"], r["env_id"]) for r in rows] == [
        ("alpha", "Toy-soft-v0"),
        ("alpha", "Toy-hard-v0"),
        ("alpha", "Other-hard-v0"),
    ]
    soft = rows[0]
    assert (soft["T"], soft["n"], soft["n_errored"], soft["tau_q"]) == ("8", "9", "1", "0.7")
    for key in ("sr", "at", "rcsr"):
        interval = expected[key]
        assert float(soft[key]) == pytest.approx(interval.mean, abs=1e-6)
        assert float(soft[f"{key}_ci_low"]) == pytest.approx(interval.low, abs=1e-6)
        assert float(soft[f"{key}_ci_high"]) == pytest.approx(interval.high, abs=1e-6)
    assert soft["csr"] == "" and soft["proactivity"] == ""  # no latent-concern metrics here
    assert float(rows[2]["sr"]) == 1.0 and float(rows[2]["at"]) == 2.0


def test_latent_concern_metrics_are_columns(tmp_path: Path) -> None:
    result = evaluate(
        "random",
        "Merchant-hard",
        episodes=3,
        out=tmp_path,
        env_kwargs={"encoder": "hashing"},
        progress=False,
    )
    (summary,) = result.summaries
    header = markdown_table(tmp_path).splitlines()[0]
    assert "CSR" in header and "proactivity" in header and "proactive turns" in header
    (row,) = csv.DictReader(io.StringIO(csv_table(tmp_path)))
    for key in ("csr", "proactivity", "proactive_turns"):
        assert float(row[key]) == pytest.approx(summary[key], abs=1e-6), key


def test_all_errored_group_is_counted_not_dropped(tmp_path: Path) -> None:
    run_dir = write_run(
        tmp_path / "broken",
        [episode("alpha", "Toy-hard-v0", i, errored=True, turns=1) for i in range(3)],
    )
    rows = list(csv.DictReader(io.StringIO(csv_table(run_dir))))
    assert rows[0]["n"] == "0" and rows[0]["n_errored"] == "3" and rows[0]["sr"] == ""
    assert "| alpha | Toy-hard-v0 | n/a | n/a | n/a | 0 | 3 |" in markdown_table(run_dir)
    page = html_report(run_dir)
    assert "3 episode(s) errored" in page and "RuntimeError: boom" in page


def test_summary_rows_match_summary_json(real_run: Path) -> None:
    written = json.loads((real_run / SUMMARY_FILE).read_text(encoding="utf-8"))["summaries"]
    rows = summary_rows(load_run(real_run))
    assert [(r["agent"], r["env_id"]) for r in rows] == [(s["agent"], s["env_id"]) for s in written]
    for row, stored in zip(rows, written, strict=True):
        for key in ("n", "n_errored", "sr", "sr_ci", "at", "at_ci", "rcsr", "rcsr_ci"):
            assert row[key] == stored[key], key
        assert row["rcsr_curve"] == stored["rcsr_curve"]
    assert sum(r["n_errored"] for r in rows) == 2  # Shouty fails on seed 2, soft and hard


def test_worst_case_rows(real_run: Path, toy_run: Path) -> None:
    run = load_run(real_run)
    from_eval = EvalResult(records=run.records, summaries=[]).worst_case()
    rows = worst_case_rows(run)
    assert {(r["agent"], r["users"]) for r in rows} == {
        (agent, task) for agent, tasks in from_eval.items() for task in tasks
    }
    for row in rows:
        assert row["sr"] == from_eval[row["agent"]][row["users"]]["sr"]
        assert row["rcsr"] == from_eval[row["agent"]][row["users"]]["rcsr"]

    toy = {r["users"]: r for r in worst_case_rows(load_run(toy_run))}
    assert set(toy) == {"Toy", "all"}  # Other has one user type only
    assert toy["Toy"]["sr"] == ("Toy-hard-v0", pytest.approx(0.2))
    assert toy["all"]["env_ids"] == ["Toy-soft-v0", "Toy-hard-v0", "Other-hard-v0"]
    assert toy["all"]["rcsr"] == ("Toy-hard-v0", pytest.approx(0.2))


# -- two runs ----------------------------------------------------------------------------------


def second_run(path: Path) -> Path:
    """Alpha × Toy-soft again: episodes renumbered (pairing is on seeds) and outcomes changed."""
    records = []
    for record in toy_records():
        if record["env_id"] != "Toy-soft-v0":
            continue
        seed = record["seed"]
        if seed == 0:
            changed = episode("alpha", "Toy-soft-v0", 100, seed=0)  # now a failure
        elif seed in (5, 6):
            changed = episode("alpha", "Toy-soft-v0", 100 + seed, seed=seed, success_turn=4)
        else:
            changed = dict(record, episode=100 + seed)
        records.append(changed)
    records.append(episode("alpha", "Toy-soft-v0", 110, seed=10, success_turn=1))  # no partner
    records.append(episode("beta", "Toy-soft-v0", 0, success_turn=1))  # agent not in run 1
    records.reverse()  # file order does not matter
    return write_run(path, records)


def test_paired_differences(tmp_path: Path) -> None:
    run_1 = write_run(tmp_path / "one", toy_records())
    run_2 = second_run(tmp_path / "two")
    rows = paired_rows(load_run(run_1), load_run(run_2))
    assert [(r["agent"], r["env_id"]) for r in rows] == [("alpha", "Toy-soft-v0")]
    row = rows[0]
    # Seeds 0..8 pair up; seed 9 errored in both runs, seed 10 is only in run 2.
    assert row["n_pairs"] == 9 and row["left_out"] == 10 + 11 - 18

    old = {r["seed"]: r for r in toy_records() if r["env_id"] == "Toy-soft-v0"}
    new_sr = [0.0 if s == 0 else 1.0 if s in (5, 6) else float(old[s]["success"]) for s in range(9)]
    old_sr = [float(old[s]["success"]) for s in range(9)]
    expected = metrics.paired_bootstrap_diff(new_sr, old_sr)
    assert row["sr"] == expected
    assert row["sr"].mean == pytest.approx(1 / 9)
    new_at = [8.0 if s == 0 else 4.0 if s in (5, 6) else None for s in range(9)]
    old_at = [float(old[s]["success_turn"] or 8) for s in range(9)]
    new_at = [v if v is not None else old_at[s] for s, v in enumerate(new_at)]
    assert row["at"] == metrics.paired_bootstrap_diff(new_at, old_at)

    text = markdown_table([run_1, run_2])
    assert text.splitlines()[0].startswith("| run | agent | env | SR@8 [95% CI]")
    assert f"run 1 = `{run_1}`, run 2 = `{run_2}`" in text
    diff = f"{expected.mean:+.2f} [{expected.low:+.2f}, {expected.high:+.2f}]"
    assert f"| alpha | Toy-soft-v0 | 9 | {diff} | {expected.p_value:.3g} |" in text

    rows_csv = list(csv.DictReader(io.StringIO(csv_table([run_1, run_2]))))
    assert {r["run"] for r in rows_csv} == {str(run_1), str(run_2)}
    page = html_report([run_1, run_2])
    assert 'id="paired"' in page and diff in page
    assert page.count('<table class="summary">') == 2


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"agent": "a"}\n', f"{EPISODES_FILE}:1: record lacks field(s) 'env_id', 'success'"),
        ("[1, 2]\n", f"{EPISODES_FILE}:1: expected a JSON object per line, got list"),
        ("", f"{EPISODES_FILE}: no episode records"),
        ("GOOD\n{not json}\nGOOD\n", f"{EPISODES_FILE}:2: corrupt record, not valid JSON"),
        ("GOOD\n\n" + '{"agent": "a", "env_id": "E", "success": "yes"}\n', ":3: 'success' must"),
    ],
    # An incomplete last line is not an error (tests/test_journal.py: eval and report agree).
    ids=["missing-fields", "not-an-object", "empty", "corrupt-line", "types"],
)
def test_bad_episode_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    good = json.dumps(episode("alpha", "Toy-soft-v0", 0))
    (run_dir / EPISODES_FILE).write_text(content.replace("GOOD", good), encoding="utf-8")
    with pytest.raises(ReportError, match=re.escape(message)):
        load_run(run_dir)
    for fmt in ("html", "md", "csv"):
        assert main(["report", str(run_dir), "--format", fmt]) == 2
        err = capsys.readouterr().err
        assert err.startswith("dialogue-gym report: error: ") and message in err
        assert "Traceback" not in err
    assert not (run_dir / "report.html").exists()


def test_bad_run_directories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing"
    empty = tmp_path / "empty"
    empty.mkdir()
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    bad_summary = write_run(tmp_path / "bad_summary", toy_records())
    (bad_summary / SUMMARY_FILE).write_text("{", encoding="utf-8")
    for path, message in (
        (missing, f"{missing}: no such run directory"),
        (empty, f"{empty}: no {EPISODES_FILE} here"),
        (a_file, f"{a_file}: not a directory"),
        (bad_summary, f"{bad_summary / SUMMARY_FILE}: unreadable summary"),
    ):
        assert main(["report", str(path)]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    # The second run is checked too.
    assert main(["report", str(bad_summary.parent / "toy"), str(missing)]) == 2
    assert main(["report", str(empty), "--max-transcripts", "-1"]) == 2
    assert "must be >= 0" in capsys.readouterr().err
    with pytest.raises(ReportError, match="unknown report format 'pdf'"):
        write_report([missing], fmt="pdf")
    with pytest.raises(ReportError, match="one or two run directories"):
        markdown_table([empty, empty, empty])


# -- the command line --------------------------------------------------------------------------


def test_cli_outputs(toy_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(toy_run), "--format", "md"]) == 0
    assert capsys.readouterr().out == markdown_table(toy_run)
    assert main(["report", str(toy_run), "--format", "csv"]) == 0
    assert capsys.readouterr().out == csv_table(toy_run)

    out = tmp_path / "tables" / "board.csv"
    assert main(["report", str(toy_run), "--format", "csv", "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"Report: {out}"
    assert out.read_text(encoding="utf-8") == csv_table(toy_run)

    assert main(["report", str(toy_run)]) == 0
    assert capsys.readouterr().out.strip() == f"Report: {toy_run / 'report.html'}"
    assert (toy_run / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# -- HTML --------------------------------------------------------------------------------------


def strip_data_uris(page: str) -> str:
    return re.sub(r"data:image/svg\+xml;base64,[A-Za-z0-9+/=]+", "DATA", page)


def test_html_escapes_dialogue_text(real_run: Path) -> None:
    page = html_report(real_run)
    shouty = [r for r in load_run(real_run).records if r["agent"].endswith(":Shouty")]
    assert any(t["text"] == SCRIPT_TEXT for r in shouty for t in r["transcript"])
    assert "<script" not in page.lower()  # the page has no script, and none leaks in
    assert (
        "&lt;script&gt;window.__pwned = 1&lt;/script&gt; Please donate &amp; help &lt;/td&gt;"
        in (page)
    )
    assert "boom &lt;b&gt;not bold&lt;/b&gt;" in page and "<b>not bold" not in page
    # Self-contained: nothing refers outside the file.
    text = strip_data_uris(page)
    assert "http://" not in text and "https://" not in text
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?!DATA|#)""", text)


def test_html_contents(real_run: Path) -> None:
    page = html_report(real_run)
    assert page.count('<table class="summary">') == 1
    assert page.count('<img class="plot" src="data:image/svg+xml;base64,') == 2  # bars, curves
    assert "SR@8 [95% CI]" in page and "RCSR@8 [95% CI]" in page
    assert "Worst case over users" in page and "P4G users" in page
    assert "2 episode(s) errored" in page
    assert page.count('<details class="episode">') == 16
    assert "user's BDI state after (revealed)" in page
    assert "votes: " in page and "s<sub>t</sub>" in page


def test_transcript_cap_and_alignment(tmp_path: Path) -> None:
    records = [episode("alpha", "Toy-soft-v0", i, success_turn=2) for i in range(8)]
    records += [episode("alpha", "Toy-soft-v0", i, errored=True, turns=1) for i in (8, 9)]
    opening = episode("alpha", "Toy-hard-v0", 0, success_turn=2)
    opening["transcript"] = [
        {"role": "user", "text": "corpus opening by the user"},
        {"role": "system", "text": "corpus opening by the system"},
        *opening["transcript"],
    ]
    broken = episode("alpha", "Toy-hard-v0", 1, errored=True, turns=1)
    broken["transcript"].append({"role": "system", "text": "asked, never answered"})
    records += [opening, broken]
    records.reverse()  # the cap keeps the lowest episode indices whatever the file order
    run_dir = write_run(tmp_path / "capped", records)

    run = load_run(run_dir, max_transcripts=2)
    kept = {(r["env_id"], r["episode"]) for r in run.records if "transcript" in r}
    assert kept == {("Toy-soft-v0", i) for i in (0, 1, 8, 9)} | {
        ("Toy-hard-v0", 0),
        ("Toy-hard-v0", 1),
    }

    page = html_report(run_dir, max_transcripts=2)
    assert "alpha · Toy-soft-v0 — 4 of 10 episode(s) shown, 2 errored" in page
    shown = re.findall(r"<summary>episode (\d+) · seed", page)
    assert shown == ["0", "1", "0", "1", "8", "9"]  # groups in file order, episodes sorted
    assert "Showing 6 of 12 episode(s)" in page
    # Openings stay outside the judged exchanges; exchange 1 is the first system/user pair.
    assert page.count("(opening turn)") == 2
    first_row = re.search(
        r'<tr><td class="num">1</td><td>(.*?)</td>', page.split("corpus opening by the system")[1]
    )
    assert first_row is not None and "system turn 1 of episode 0" in first_row.group(1)
    assert 'asked, never answered</div><span class="muted">(not judged' in page


def artifacts_dir(tmp_path: Path) -> Path:
    configured = os.environ.get("DIALOGUE_GYM_ARTIFACTS")
    path = Path(configured) if configured else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed: pip install -e '.[test]' (no browser download)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def test_html_in_headless_chromium(real_run: Path, tmp_path: Path, browser: Any) -> None:
    artifacts = artifacts_dir(tmp_path)
    report = write_report([real_run], artifacts / "report.html")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on(
        "console",
        lambda message: (
            problems.append(f"console {message.type}: {message.text}")
            if message.type == "error"
            else None
        ),
    )
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(report.resolve().as_uri())
    page.wait_for_load_state("load")

    table = page.locator("table.summary")
    assert table.is_visible()
    assert table.locator("tbody tr").count() == 4
    plots = page.locator("img.plot")
    assert plots.count() == 2
    for i in range(plots.count()):
        plot = plots.nth(i)
        plot.scroll_into_view_if_needed()
        assert plot.is_visible()
        box = plot.bounding_box()
        assert box is not None and box["width"] > 100 and box["height"] > 100
        assert plot.evaluate("img => img.complete && img.naturalWidth > 0")  # decoded

    group = page.locator("details.group", has_text="Shouty · P4G-hard-v0")
    episode_details = group.locator("details.episode").first
    transcript = episode_details.locator("table.transcript")
    assert not transcript.is_visible()
    group.locator("summary").first.click()
    episode_details.locator("summary").click()
    assert episode_details.evaluate("d => d.open")
    assert transcript.is_visible()
    assert SCRIPT_TEXT in transcript.inner_text()  # shown as text, never run
    assert page.evaluate("() => window.__pwned") is None
    transcript.scroll_into_view_if_needed()

    screenshot = artifacts / "report.png"
    page.screenshot(path=str(screenshot), full_page=True)
    print(f"report screenshot: {screenshot}")
    assert screenshot.stat().st_size > 0
    assert problems == []
    assert all(url.startswith(("file:", "data:")) for url in requests), requests
