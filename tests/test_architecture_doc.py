"""ARCHITECTURE.md names only what exists: every path, and every ``file.py:Name`` in it."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "ARCHITECTURE.md"
# A bare name in the doc ("cli.py", "report/") is relative to one of these.
ROOTS = (ROOT, ROOT / "dialogue_gym", ROOT / "agents" / "dialogue_gym_agents")
# `path/to/file.py:Name.attr`, `path/to/dir/`, `envs/p4g.toml`, `docs/masp.md`, ...
_PATH = re.compile(r"^\.?[\w./-]*?(?:/|\.py|\.toml|\.md)(?::[\w.]+)?$")
# The doc's placeholders for the reader's own files (`file.py:Name`, `path/to/file.py:Class`).
PLACEHOLDERS = ("file.py", "path/")
_DIAGRAM_PATH = re.compile(r"(?<![\w/.-])(\w+(?:/\w+)*(?:\.py|/))(?![\w])")


def _doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def _code_spans(text: str) -> list[str]:
    prose = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return re.findall(r"`([^`\n]+)`", prose)


def _diagram(text: str) -> str:
    blocks = re.findall(r"```\n(.*?)```", text, flags=re.DOTALL)
    assert blocks, "ARCHITECTURE.md has no diagram block"
    return blocks[0]


def _resolve(path: str) -> Path | None:
    for root in ROOTS:
        candidate = root / path
        if candidate.exists():
            return candidate
    return None


@functools.cache
def _definitions(file: Path) -> dict[str, set[str]]:
    """Top-level names of ``file`` → the names defined in their body (for classes)."""
    tree = ast.parse(file.read_text(encoding="utf-8"))
    names: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {_target_name(item) for item in node.body} - {None}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names[node.name] = set()
        else:
            name = _target_name(node)
            if name:
                names[name] = set()
    return names


def _target_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return None


def _references() -> list[str]:
    """The code spans that name a path (placeholders left out)."""
    spans = {span.strip() for span in _code_spans(_doc_text())}
    return sorted(span for span in spans if _PATH.match(span) and not span.startswith(PLACEHOLDERS))


def test_code_spans_stay_on_one_line():
    """A span broken over lines would pair the wrong backticks and hide references."""
    prose = re.sub(r"```.*?```", "", _doc_text(), flags=re.DOTALL)
    for number, line in enumerate(prose.splitlines(), 1):
        assert line.count("`") % 2 == 0, f"ARCHITECTURE.md prose line {number}: {line!r}"


def test_doc_is_short_and_has_its_sections():
    text = _doc_text()
    assert 100 <= len(text.splitlines()) <= 260
    for heading in ("## Layers", "## One exchange", "## Where each paper concept lives"):
        assert heading in text
    for kind in ("**A task**", "**An agent**", "**A backend**", "**A judge**"):
        assert kind in text


@pytest.mark.parametrize("reference", _references())
def test_every_named_path_and_symbol_exists(reference):
    path, _, symbol = reference.partition(":")
    found = _resolve(path)
    assert found is not None, f"ARCHITECTURE.md names {path!r}, which does not exist"
    if not symbol:
        return
    assert found.suffix == ".py", f"{reference}: only Python files have symbols"
    name, _, attribute = symbol.partition(".")
    definitions = _definitions(found)
    assert name in definitions, f"{reference}: {name!r} is not defined in {path}"
    if attribute:
        assert attribute in definitions[name], f"{reference}: {name}.{attribute} is not defined"


def _diagram_paths(diagram: str) -> list[tuple[str, Path | None]]:
    """Each path of the diagram with the folder it is read in (``None``: a root).

    A line that starts with a folder (`` env/   registry.py ...``) names files of that folder,
    and so do the lines under it that start with ``│`` or ``├─``/``└─`` (its contents); a
    bare name elsewhere is relative to one of :data:`ROOTS`.
    """
    found = []
    folder: Path | None = None
    for line in diagram.splitlines():
        stripped = line.strip()
        paths = _DIAGRAM_PATH.findall(line)
        if stripped[:1] not in ("│", "├", "└"):
            first = paths[0] if paths and stripped.startswith(paths[0]) else None
            leading = _resolve(first) if first and first.endswith("/") else None
            folder = leading if leading is not None and leading.is_dir() else None
        found += [(path, folder) for path in paths]
    return found


def test_every_file_and_folder_in_the_diagram_exists():
    missing = sorted(
        {
            path
            for path, folder in _diagram_paths(_diagram(_doc_text()))
            if _resolve(path) is None
            and not (folder is not None and (folder / path).exists())
            and not path.startswith(PLACEHOLDERS)
        }
    )
    assert not missing, f"the diagram names paths that do not exist: {missing}"


def test_the_references_are_found():
    """The extraction itself works: the doc's key modules are among the checked references."""
    references = _references()
    assert "dialogue_gym/mind/latent.py:LatentSpace.progress" in references
    assert "agents/dialogue_gym_agents/common/grpo.py:grpo_loss" in references
    assert "benchmarks/invariance.py" in references
