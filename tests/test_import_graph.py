"""The core's import graph: no cycles, no agents, no module over 600 lines (issue 17 item 3).

The graph is read from the source with :mod:`ast`, without importing anything. A module's edges
are every ``dialogue_gym.*`` module it imports, at module level, inside a function (a lazy
import is still a dependency; it only moves the cycle to run time) or under
``if TYPE_CHECKING:`` (issue 36 item 4: an import that never runs is still a dependency of the
code's meaning; a type two modules share lives in :mod:`dialogue_gym.types`, which imports
nothing of the package), plus the ``"module:attr"`` strings the registries load by name. One
thing is left out on purpose:

* the implicit import of a module's parent packages (``import a.b.c`` runs ``a/__init__`` and
  ``a/b/__init__``): counting it would put every submodule in a cycle with a package
  ``__init__`` that re-exports it, which says nothing about the layering. An explicit
  ``from dialogue_gym.users import X`` is an edge to ``dialogue_gym.users`` like any other.

Cycles are checked twice: between modules, and between the core's top-level parts (a
subpackage such as ``users`` or ``judges`` counted as one node, a top-level module as itself),
which is where a layering mistake like users <-> judges shows.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import dialogue_gym

PACKAGE_DIR = Path(dialogue_gym.__file__).resolve().parent
MAX_LINES = 600

# Modules allowed over MAX_LINES, each with why (none: every module was split).
ALLOWED_OVER_600: set[str] = set()

# Import cycles that remain, each as the set of modules in it (a strongly connected component
# of the module graph) with why it is still there. Same rule: a cycle that is gone is reported
# as a warning until its entry is removed.
KNOWN_MODULE_CYCLES: dict[frozenset[str], str] = {}

# Cycles between the core's top-level parts (see the module doc), as above.
KNOWN_PART_CYCLES: dict[frozenset[str], str] = {}

_REGISTRY_STRING = re.compile(r"^(dialogue_gym(?:\.\w+)*):\w+$")
# A string that names an agents module (a "module:attr" path or an import_module argument).
_AGENTS_STRING = re.compile(r"^dialogue_gym_agents(?:\.\w+)*(?::\w+)?$")


def _module_files() -> dict[str, Path]:
    """Every module of the core by dotted name (a package by its ``__init__``)."""
    modules = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _imported_names(tree: ast.Module, package: str) -> Iterator[tuple[str, str | None]]:
    """Yields (module, imported name or None) for every import and registry string.

    Imports under ``if TYPE_CHECKING:`` count like any other.
    """
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, None
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                yield source, alias.name
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _REGISTRY_STRING.match(node.value)
            if match:
                yield match.group(1), None
        stack.extend(ast.iter_child_nodes(node))


def _resolve(name: str, modules: Mapping[str, Path]) -> str | None:
    """The innermost known module a dotted name lies in, or None outside the core."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def import_graph() -> dict[str, set[str]]:
    """Module -> the core modules it imports (see the module doc for what counts)."""
    modules = _module_files()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for source, imported in _imported_names(_parse(path), package):
            # ``from pkg import sub`` imports the submodule when there is one.
            target = f"{source}.{imported}" if imported else source
            resolved = target if target in modules else _resolve(source, modules)
            if resolved and resolved != name:
                edges.add(resolved)
        graph[name] = edges
    return graph


def strongly_connected(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The graph's cycles as strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def cycle_path(graph: Mapping[str, set[str]], component: frozenset[str]) -> list[str]:
    """One closed path through a component, for the failure message (``a -> b -> a``)."""
    start = min(component)
    # Breadth-first inside the component from start until an edge leads back to start.
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node] & component):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if succ not in parents:
                    parents[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {sorted(component)}")


def part_of(module: str) -> str:
    """The top-level part of the core a module belongs to (``dialogue_gym.users``, ...)."""
    return ".".join(module.split(".")[:2])


def part_graph(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The module graph with every top-level part collapsed into one node."""
    parts: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = parts.setdefault(part_of(module), set())
        edges.update(part_of(t) for t in targets if part_of(t) != part_of(module))
    return parts


def _check_cycles(graph: dict[str, set[str]], known: Mapping[frozenset[str], str]) -> None:
    found = strongly_connected(graph)
    new = [c for c in found if c not in known]
    gone = [c for c in known if c not in found]
    messages = [" -> ".join(cycle_path(graph, c)) for c in new]
    assert not new, "import cycles:\n  " + "\n  ".join(messages)
    for cycle in gone:
        warnings.warn(f"cycle gone; remove it from the known list: {sorted(cycle)}", stacklevel=1)


def test_no_import_cycle_between_modules() -> None:
    _check_cycles(import_graph(), KNOWN_MODULE_CYCLES)


def test_no_import_cycle_between_parts() -> None:
    _check_cycles(part_graph(import_graph()), KNOWN_PART_CYCLES)


def test_core_never_imports_agents() -> None:
    offenders = []
    for name, path in _module_files().items():
        tree = _parse(path)
        for source, _ in _imported_names(tree, name):
            if source.split(".")[0] == "dialogue_gym_agents":
                offenders.append(f"{name} imports {source}")
        for node in ast.walk(tree):
            value = node.value if isinstance(node, ast.Constant) else None
            if isinstance(value, str) and _AGENTS_STRING.match(value):
                offenders.append(f"{name} loads {value!r} by name")
    assert not offenders, offenders


def test_no_module_over_600_lines() -> None:
    sizes = {
        name: len(path.read_text(encoding="utf-8").splitlines())
        for name, path in _module_files().items()
    }
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    unexpected = {name: n for name, n in over.items() if name not in ALLOWED_OVER_600}
    assert not unexpected, f"modules over {MAX_LINES} lines: {unexpected}"
    for name in sorted(ALLOWED_OVER_600 - set(over)):
        message = f"{name} is at most {MAX_LINES} lines; remove it from ALLOWED_OVER_600"
        warnings.warn(message, stacklevel=1)


def test_cycle_finder_reports_a_path() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    (component,) = strongly_connected(graph)
    assert component == {"a", "b", "c"}
    assert cycle_path(graph, component) == ["a", "b", "c", "a"]


def test_graph_sees_lazy_imports_and_registry_strings() -> None:
    graph = import_graph()
    # users/__init__ loads its simulators by "module:attr" name.
    assert "dialogue_gym.users.cognitive" in graph["dialogue_gym.users"]
    # backends/__init__ imports the OpenAI backend inside a function.
    assert "dialogue_gym.backends.openai_backend" in graph["dialogue_gym.backends"]


def test_type_checking_imports_are_edges() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import typing\n"
        "if TYPE_CHECKING:\n"
        "    from dialogue_gym.cards.card import TaskCard\n"
        "if typing.TYPE_CHECKING:\n"
        "    import dialogue_gym.mind.encoders\n"
    )
    found = {source for source, _ in _imported_names(ast.parse(source), "dialogue_gym")}
    assert {"dialogue_gym.cards.card", "dialogue_gym.mind.encoders"} <= found


def test_a_type_checking_cycle_fails() -> None:
    """A cycle closed only by a ``TYPE_CHECKING`` import is a cycle (three were, until issue 36)."""
    graph = import_graph()
    # Each of these closed a cycle through a TYPE_CHECKING import (calibration <-> data as parts).
    assert "dialogue_gym.cards.card" not in graph["dialogue_gym.cards.sections"]
    assert "dialogue_gym.mind.encoders" not in graph["dialogue_gym.text.view"]
    assert not {
        m for m in graph["dialogue_gym.calibration.fit"] if m.startswith("dialogue_gym.data")
    }
    planted = {name: set(edges) for name, edges in graph.items()}
    planted["dialogue_gym.cards.sections"].add(
        "dialogue_gym.cards.card"
    )  # the old TYPE_CHECKING edge
    with pytest.raises(AssertionError, match="import cycles"):
        _check_cycles(planted, KNOWN_MODULE_CYCLES)


def test_shared_types_import_nothing_of_the_package() -> None:
    assert import_graph()["dialogue_gym.types"] == set()


def test_stance_reader_is_neutral() -> None:
    graph = import_graph()
    assert not {part_of(t) for t in graph["dialogue_gym.cards.stance"]} & {
        "dialogue_gym.users",
        "dialogue_gym.judges",
    }
    from dialogue_gym.cards.stance import classify_stance
    from dialogue_gym.judges import embedded

    assert embedded.classify_stance is classify_stance


# Public names that moved when a module was split, by the module they are still imported from.
SPLIT_MODULES_PUBLIC_NAMES = {
    "dialogue_gym.env.vector": [
        "AUTORESET_MODES",
        "BatchingBackend",
        "BatchingEncoder",
        "SingleAgentVectorEnv",
        "StepRounds",
        "StrategyVectorEnv",
        "SubEnvError",
        "VectorDialogueEnv",
        "make_vec",
    ],
    "dialogue_gym.plugins.cb.seller": [
        "HARD",
        "SELLER_PRESETS",
        "SOFT",
        "Listing",
        "SellerPreset",
        "SellerUser",
        "listing_bank",
        "price_step",
        "seller_preset",
    ],
    "dialogue_gym.text.prices": ["PriceMention", "extract_prices", "offer_in", "mask_prices"],
    "dialogue_gym.testing.server": ["Fault", "RequestRecord", "TestServer", "main"],
    "dialogue_gym.backends": ["make_backend", "OpenAIBackend"],
    "dialogue_gym.judges": ["classify_stance"],
    "dialogue_gym.judges.embedded": ["classify_stance"],
}


def test_split_modules_keep_their_public_names() -> None:
    import importlib

    for module_name, names in SPLIT_MODULES_PUBLIC_NAMES.items():
        module = importlib.import_module(module_name)
        missing = [name for name in names if not hasattr(module, name)]
        assert not missing, f"{module_name} lost {missing}"
        exported = getattr(module, "__all__", names)
        assert set(names) <= set(exported), module_name
