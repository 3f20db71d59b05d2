"""The package's modules import each other without cycles (TYPE_CHECKING imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

import dsh_persistence_sqlite

PACKAGE = "dsh_persistence_sqlite"


def _imports(path: Path) -> set[str]:
    """The package modules ``path`` imports, anywhere in the file (``if TYPE_CHECKING:`` too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == PACKAGE:
                found.update(f"{PACKAGE}.{alias.name}" for alias in node.names)
            elif node.module.startswith(PACKAGE + "."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(PACKAGE + "."))
    return found


def _graph() -> dict[str, set[str]]:
    root = Path(dsh_persistence_sqlite.__file__).parent
    modules = {f"{PACKAGE}.{p.stem}": p for p in root.glob("_*.py") if p.stem != "__init__"}
    return {name: _imports(path) & modules.keys() for name, path in modules.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph[node]):
            found = visit(target, [*path, node])
            if found:
                return found
        done.add(node)
        return None

    for start in sorted(graph):
        found = visit(start, [])
        if found:
            return found
    return None


def test_the_private_modules_import_each_other_without_a_cycle() -> None:
    graph = _graph()
    assert f"{PACKAGE}._handle" in graph
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_handle_does_not_import_the_backend_module() -> None:
    assert f"{PACKAGE}._backend" not in _graph()[f"{PACKAGE}._handle"]
