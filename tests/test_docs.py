"""Every code block of README.md and docs/*.md runs as written (issue 18, item 2).

Each document's blocks run in order in one fresh temporary working directory:

* a ```` ```python ```` block runs in a fresh namespace (``__name__ == "__main__"``);
* a python block right after ``<!-- file: NAME.py -->`` is written to ``NAME.py`` in that
  directory and run as a script (``runpy``), so a later block can use the file (e.g.
  ``dialogue-gym eval ... --agent my_agent.py:Polite``);
* a ```` ```bash ```` block right after ``<!-- run -->`` runs in bash with ``set -e`` (cheap
  ``dialogue-gym`` commands only); other bash blocks (installs, long runs) are shown, not run;
* a python block right after ``<!-- skip: REASON -->`` is not run; every skip must say why
  (a GPU, a network, an API key, your copy of the corpora, minutes of compute).

The marker is the last non-blank line before the opening fence. README's test command is
also checked against ``.ci/run``, so that the two cannot drift apart.
"""

from __future__ import annotations

import ast
import os
import re
import runpy
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<language>[\w-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"^<!--\s*(?P<kind>skip|run|file)\s*(?::(?P<argument>.*?))?\s*-->$")
BASH_TIMEOUT_S = 120


@dataclass(frozen=True)
class Block:
    """One fenced code block of a document and the marker right before it."""

    path: Path
    line: int
    language: str
    code: str
    marker: str | None
    argument: str

    @property
    def where(self) -> str:
        """``file:line`` of the opening fence, for failure messages."""
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def code_blocks(path: Path) -> list[Block]:
    """The fenced code blocks of ``path`` in document order, each with its marker (if any)."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in FENCE.finditer(text):
        before = [line.strip() for line in text[: match.start()].splitlines() if line.strip()]
        marker = MARKER.match(before[-1]) if before else None
        blocks.append(
            Block(
                path=path,
                line=text.count("\n", 0, match.start()) + 1,
                language=match["language"],
                code=match["code"],
                marker=marker["kind"] if marker else None,
                argument=(marker["argument"] or "").strip() if marker else "",
            )
        )
    return blocks


def _all_blocks() -> list[Block]:
    return [block for path in DOCUMENTS for block in code_blocks(path)]


def test_the_documents_have_code_blocks() -> None:
    blocks = _all_blocks()
    assert len(DOCUMENTS) > 10, "docs/ is missing"
    assert sum(block.language == "python" for block in blocks) >= 10


def test_every_skip_says_why_and_every_marker_fits_its_block() -> None:
    skips = []
    for block in _all_blocks():
        if block.marker == "skip":
            assert block.language == "python", f"{block.where}: skip marks python blocks"
            assert len(block.argument) >= 10, f"{block.where}: a skip must give its reason"
            skips.append(block)
        elif block.marker == "run":
            assert block.language == "bash", f"{block.where}: run marks bash blocks"
        elif block.marker == "file":
            assert block.language == "python", f"{block.where}: file marks python blocks"
            assert re.fullmatch(r"[\w-]+\.py", block.argument), f"{block.where}: file NAME.py"
    python_blocks = [block for block in _all_blocks() if block.language == "python"]
    # Most examples must really run: skipped ones are the exception.
    assert len(skips) <= len(python_blocks) // 3, [block.where for block in skips]


def _bash_env() -> dict[str, str]:
    env = dict(os.environ)
    # The venv's scripts (dialogue-gym) first, whether or not the venv is activated.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _run_python(block: Block, cwd: Path) -> None:
    if block.marker == "file":
        (cwd / block.argument).write_text(block.code, encoding="utf-8")
        runpy.run_path(str(cwd / block.argument), run_name="__main__")
        return
    code = compile(block.code, block.where, "exec")
    exec(code, {"__name__": "__main__"})


def _run_bash(block: Block, cwd: Path) -> None:
    result = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + block.code],
        cwd=cwd,
        env=_bash_env(),
        capture_output=True,
        text=True,
        timeout=BASH_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, (
        f"{block.where} exited {result.returncode}:\n{result.stdout[-2000:]}\n"
        f"{result.stderr[-3000:]}"
    )


def _runnable(block: Block) -> bool:
    if block.language == "python":
        return block.marker != "skip"
    return block.language == "bash" and block.marker == "run"


RUNNABLE = [path for path in DOCUMENTS if any(_runnable(b) for b in code_blocks(path))]


@pytest.mark.parametrize("path", RUNNABLE, ids=[p.name for p in RUNNABLE])
def test_code_blocks_run(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # a block may import a file an earlier one wrote
    for block in filter(_runnable, code_blocks(path)):
        if block.language == "python":
            try:
                _run_python(block, tmp_path)
            except Exception as exc:
                raise AssertionError(f"{block.where} raised {exc!r}") from exc
        else:
            _run_bash(block, tmp_path)
    capsys.readouterr()  # the examples print; keep the test log quiet


def _steps(command: str) -> list[str]:
    """Normalized shell steps: ``sudo``, ``python -m``, ``-q`` and line continuations dropped."""
    steps = []
    for step in re.split(r"&&|\n", command.replace("\\\n", " ")):
        words = [w for w in shlex.split(step, comments=True) if w not in ("-q", "sudo")]
        if words[:2] == ["python", "-m"] and words[2:3] in (["pip"], ["pytest"]):
            words = words[2:]
        if words:
            steps.append(" ".join(words))
    return steps


def test_the_documented_test_command_is_what_ci_runs() -> None:
    commands = [
        block
        for block in _all_blocks()
        if block.language == "bash"
        and 'pytest -m "not slow"' in block.code
        and "pip install" in block.code  # the install-and-test command, not a dev cheat sheet
    ]
    assert any(block.path.name == "README.md" for block in commands), "README lacks it"
    ci_lines = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*(\$SUDO )?(apt-get|python -m (pip install|pytest))", line)
    ]
    ci_steps = [s.replace("$SUDO ", "") for line in ci_lines for s in _steps(line)]
    # Upgrading pip is hygiene of a fresh venv; the docs extra is for `mkdocs build`, not tests.
    ci_steps = [s for s in ci_steps if s != "pip install --upgrade pip" and ".[docs]" not in s]
    ci_test_steps = [s for s in ci_steps if s != "pytest -m slow"]
    for block in commands:
        assert _steps(block.code) == ci_test_steps, f"{block.where} differs from .ci/run"


def test_readme_links_to_existing_pages_and_every_page_is_in_the_nav() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)(?:#[\w-]+)?\)", readme))
    assert linked, "README links no docs page"
    for target in linked:
        assert (ROOT / target).is_file(), f"README links {target}, which does not exist"
    nav = set(re.findall(r"([\w-]+\.md)", (ROOT / "mkdocs.yml").read_text(encoding="utf-8")))
    pages = {path.name for path in DOCUMENTS if path.parent.name == "docs"}
    assert pages == nav, f"pages not in the nav: {pages - nav}; nav without page: {nav - pages}"


# Names the docs cite that are not modules: entry-point groups.
ENTRY_POINT_GROUPS = {"dialogue_gym.agents", "dialogue_gym.trainers"}
DOTTED = re.compile(r"`((?:dialogue_gym|dialogue_gym_agents)(?:\.\w+)+)(?::(\w+))?")


def _module_file(dotted: str) -> Path | None:
    if dotted == "dialogue_gym.catalog":  # pyproject's package-dir: the task cards in envs/
        return ROOT / "envs" / "__init__.py"
    top = ROOT / "agents" if dotted.startswith("dialogue_gym_agents") else ROOT
    base = top.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _defines(node: ast.AST, name: str) -> ast.AST | None:
    """The statement of ``node``'s body that defines or imports ``name`` (no import needed)."""
    for statement in getattr(node, "body", []):
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if statement.name == name:
                return statement
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            if any((alias.asname or alias.name).split(".")[0] == name for alias in statement.names):
                return statement
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return statement
    return None


def _resolves(dotted: str, attribute: str | None) -> bool:
    """Whether a module path (and the names after it) exists, read from the source files."""
    parts = [*dotted.split("."), *([attribute] if attribute else [])]
    for split in range(len(parts), 0, -1):
        source = _module_file(".".join(parts[:split]))
        if source is None:
            continue
        node: ast.AST | None = ast.parse(source.read_text(encoding="utf-8"))
        for name in parts[split:]:
            node = _defines(node, name) if node is not None else None
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign)):
                return True  # re-exported or assigned: its members are not checked statically
        return node is not None
    return False


def test_every_module_file_and_test_the_docs_name_exists() -> None:
    missing = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for match in DOTTED.finditer(text):
            if match[1] not in ENTRY_POINT_GROUPS and not _resolves(match[1], match[2]):
                missing.append(f"{path.name}: {match[0]}`")
        for match in re.finditer(
            r"`((?:dialogue_gym|scripts|benchmarks|tests|envs|examples|agents)/[\w/.-]+\.\w+)", text
        ):
            if not (ROOT / match[1]).exists():
                missing.append(f"{path.name}: {match[1]}")
        test_file = None  # `test_x.py::name`, then `::other` for another test of the same file
        for match in re.finditer(r"`(test_\w+\.py)?(?:::(\w+))?`", text):
            test_file = match[1] or test_file
            if test_file is None or not (match[1] or match[2]):
                continue
            source = ROOT / "tests" / test_file
            if not source.is_file():
                missing.append(f"{path.name}: tests/{test_file}")
            elif match[2] and not re.search(rf"def {match[2]}\b", source.read_text("utf-8")):
                missing.append(f"{path.name}: {test_file}::{match[2]}")
    assert not missing, "the docs name what does not exist:\n" + "\n".join(missing)
