"""Check the dependency rule of DESIGN §2 from declared dependencies *and* actual imports.

- every distribution under packages/ has a known role (seam, implementation, composition);
- a seam depends on seams only; an implementation on seams, `dsh-paths` and third-party libraries;
  only the composition package may depend on implementations; a front end (`dsh-acp`) on the
  composition, the seams and third-party libraries;
- the sibling dependency graph has no cycle;
- inside a package, the module-level imports between its own modules have no cycle. Imports
  under ``if TYPE_CHECKING:`` count: a type-only import is not a cycle at run time, but it
  still ties the two modules to each other (``_handle`` needing ``_backend`` while ``_backend``
  builds handles), which the one-way module structure forbids; break it by passing what is
  needed or by moving the shared type to a third module. Imports inside functions are not
  module-level and do not count. An edge goes to the module an import names (``from pkg import
  name`` names ``pkg.name`` when that is a module, else ``pkg``'s ``__init__``), never to the
  parents Python imports on the way;
- every import in a package's source names the package itself, the standard library, or a
  distribution the package declares. A distribution that comes only with an optional extra
  (``dsh-agent-core[postgres]``) counts inside a `testing` module, or where its import does not
  run when the module is imported (inside a function, or under ``if TYPE_CHECKING:``), so the
  package imports without the extra;
- a package's tests import only what the package and its test group declare;
- every package has the lockstep version, and sibling requirements are compatible ranges that
  admit it.

Run: ``python tools/check_architecture.py [ROOT]``; exits 1 and lists every violation.
"""

from __future__ import annotations

import ast
import itertools
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

SEAMS = frozenset(
    {"dsh-llm", "dsh-session", "dsh-persistence", "dsh-shell", "dsh-tools", "dsh-agent"}
)
IMPLEMENTATIONS = frozenset(
    {
        "dsh-paths",
        "dsh-persistence-jsonl",
        "dsh-persistence-sqlite",
        "dsh-bash-local",
        "dsh-bash-sandbox",
        "dsh-tool-bash",
        "dsh-agent-loop",
        "dsh-model-openai",
        "dsh-persistence-postgres",
        "dsh-hooks",
        "dsh-compaction",
        "dsh-tool-fs",
        "dsh-tool-mcp",
        "dsh-tool-todo",
    }
)
COMPOSITION = frozenset({"dsh-agent-core"})
# Front ends over the composition (an editor's agent): they depend on the composition and the
# seams, never on an implementation directly; the composition reaches them through an extra.
FRONT_ENDS = frozenset({"dsh-acp"})
# Implementations may lean on these implementation packages as if they were seams.
SHARED_IMPLEMENTATIONS = frozenset({"dsh-paths"})

# Import names that differ from their distribution's name.
IMPORT_TO_DIST = {
    "pydantic_core": "pydantic",  # pydantic pins its own core; importing it is using pydantic
    "yaml": "pyyaml",
    "_pytest": "pytest",
    "pytest_asyncio": "pytest-asyncio",
    "psycopg": "psycopg",
    "acp": "agent-client-protocol",
}

_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _dist_name(requirement: str) -> str:
    match = _REQ_NAME.match(requirement)
    if match is None:
        raise ValueError(f"cannot read a distribution name from {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


@dataclass
class Package:
    name: str
    path: Path
    version: str
    requires: list[str]
    extras: dict[str, list[str]]
    test_group: list[str]
    deps: set[str] = field(default_factory=set)

    @property
    def import_name(self) -> str:
        return self.name.replace("-", "_")


def load_packages(root: Path) -> dict[str, Package]:
    packages: dict[str, Package] = {}
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        project = data["project"]
        groups = data.get("dependency-groups", {})
        pkg = Package(
            name=project["name"],
            path=pyproject.parent,
            version=project["version"],
            requires=list(project.get("dependencies", [])),
            extras={k: list(v) for k, v in project.get("optional-dependencies", {}).items()},
            test_group=[g for g in groups.get("test", []) if isinstance(g, str)],
        )
        pkg.deps = {_dist_name(r) for r in pkg.requires}
        packages[pkg.name] = pkg
    return packages


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name.split(".")[0]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def _dist_of_import(module: str, siblings: dict[str, str]) -> str | None:
    """The distribution an import names, or None for the standard library."""
    if module in sys.stdlib_module_names or module == "__future__":
        return None
    if module in siblings:
        return siblings[module]
    return IMPORT_TO_DIST.get(module, module.replace("_", "-").lower())


def _closure(name: str, packages: dict[str, Package]) -> set[str]:
    seen: set[str] = set()
    stack = [name]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        pkg = packages.get(current)
        if pkg is not None:
            stack.extend(pkg.deps)
            seen.update(pkg.deps)
    return seen


def _role_violations(pkg: Package, siblings: set[str]) -> list[str]:
    errors: list[str] = []
    name = pkg.name
    if name not in SEAMS | IMPLEMENTATIONS | COMPOSITION | FRONT_ENDS:
        return [
            f"{name}: not a known distribution; add it to docs/concepts/architecture.md and "
            "this checker"
        ]
    extra_deps = {_dist_name(r) for reqs in pkg.extras.values() for r in reqs}
    for dep in sorted((pkg.deps | extra_deps) & siblings):
        if name in SEAMS and dep not in SEAMS:
            errors.append(f"{name}: a seam may depend only on seams, not on {dep}")
        elif name in IMPLEMENTATIONS and dep not in SEAMS | SHARED_IMPLEMENTATIONS:
            errors.append(f"{name}: an implementation may not depend on implementation {dep}")
        elif name in FRONT_ENDS and dep not in SEAMS | SHARED_IMPLEMENTATIONS | COMPOSITION:
            errors.append(
                f"{name}: a front end depends on the composition and the seams, not on {dep}"
            )
    return errors


def _cycle_violations(packages: dict[str, Package]) -> list[str]:
    errors: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for dep in sorted(packages[name].deps & packages.keys()):
            if state.get(dep) == 1:
                cycle = [*trail[trail.index(dep) :], dep] if dep in trail else [name, dep]
                errors.append("dependency cycle: " + " -> ".join(cycle))
            elif dep not in state:
                visit(dep, [*trail, dep])
        state[name] = 2

    for name in sorted(packages):
        if name not in state:
            visit(name, [name])
    return errors


@dataclass(frozen=True)
class _ModuleImport:
    """One module-level import of a package's own module: where it is and what it names."""

    target: str
    line: int
    type_only: bool


def _module_name(source: Path, src: Path) -> str:
    parts = list(source.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _module_level_imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import that runs when the module is imported (class bodies and module-level
    ``if``/``try``/``with`` blocks included, function bodies not), with whether it is only
    under ``if TYPE_CHECKING:``."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def walk(body: list[ast.stmt], type_only: bool) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append((node, type_only))
            elif isinstance(node, ast.If):
                walk(node.body, type_only or _is_type_checking(node.test))
                walk(node.orelse, type_only)
            elif isinstance(node, ast.Try | ast.TryStar):
                for block in (node.body, node.orelse, node.finalbody):
                    walk(block, type_only)
                for handler in node.handlers:
                    walk(handler.body, type_only)
            elif isinstance(node, ast.With | ast.AsyncWith | ast.ClassDef):
                walk(node.body, type_only)

    walk(tree.body, False)
    return found


def _own_imports(
    source: Path, name: str, modules: set[str], is_package: bool
) -> list[_ModuleImport]:
    """The module-level imports of ``source`` (module ``name``) that name one of ``modules``."""
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    found: list[_ModuleImport] = []
    for node, type_only in _module_level_imports(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                submodule = f"{base}.{alias.name}" if base else alias.name
                targets.append(submodule if submodule in modules else base)
        found.extend(
            _ModuleImport(target, node.lineno, type_only)
            for target in dict.fromkeys(targets)
            if target in modules and target != name
        )
    return found


def _strongly_connected(graph: dict[str, dict[str, _ModuleImport]]) -> list[list[str]]:
    """The components of ``graph`` with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _a_cycle(
    start: str, members: set[str], graph: dict[str, dict[str, _ModuleImport]]
) -> list[str]:
    """A shortest cycle through ``start`` inside one component: ``[start, ..., start]``."""
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph[node]):
            if nxt not in members:
                continue
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    raise AssertionError(f"{start} is in a component but on no cycle")


def _module_cycle_violations(pkg: Package) -> list[str]:
    src = pkg.path / "src"
    sources = {_module_name(path, src): path for path in sorted(src.rglob("*.py"))}
    modules = set(sources)
    graph: dict[str, dict[str, _ModuleImport]] = {}
    for name, path in sources.items():
        edges: dict[str, _ModuleImport] = {}
        for found in _own_imports(path, name, modules, path.name == "__init__.py"):
            known = edges.get(found.target)
            if known is None or (known.type_only and not found.type_only):
                edges[found.target] = found  # a runtime import of the same module wins
        graph[name] = edges
    errors: list[str] = []
    top = pkg.import_name
    for component in _strongly_connected(graph):
        cycle = _a_cycle(component[0], set(component), graph)
        steps: list[str] = []
        for here, there in itertools.pairwise(cycle):
            edge = graph[here][there]
            rel = sources[here].relative_to(src.parent.parent.parent)
            how = " under TYPE_CHECKING" if edge.type_only else ""
            steps.append(f"{rel}:{edge.line} imports {there}{how}")
        shown = " -> ".join(m.removeprefix(f"{top}.") for m in cycle)
        others = sorted(set(component) - set(cycle))
        also = f" (also in the circle: {', '.join(others)})" if others else ""
        errors.append(f"{pkg.name}: import cycle {shown}{also}: " + "; ".join(steps))
    return errors


def _version_violations(packages: dict[str, Package]) -> list[str]:
    errors: list[str] = []
    versions = {p.version for p in packages.values()}
    if len(versions) > 1:
        errors.append(f"packages disagree on the lockstep version: {sorted(versions)}")
        return errors
    if not versions:
        return errors
    version = versions.pop()
    major, minor = (int(x) for x in version.split(".")[:2])
    expected = f">={major}.{minor},<{major}.{minor + 1}"
    for pkg in packages.values():
        extras = [r for requirements in pkg.extras.values() for r in requirements]
        for requirement in [*pkg.requires, *extras]:
            dep = _dist_name(requirement)
            if dep in packages:
                spec = requirement[len(dep) :].replace(" ", "")
                if spec != expected:
                    errors.append(
                        f"{pkg.name}: sibling requirement {requirement!r} must be "
                        f"'{dep}{expected}' for version {version}"
                    )
    return errors


def _extra_of(pkg: Package, dist: str) -> str | None:
    """The first extra of ``pkg`` (by name) that brings ``dist``, or None."""
    for extra, requirements in sorted(pkg.extras.items()):
        if dist in {_dist_name(r) for r in requirements}:
            return extra
    return None


def _runs_on_import(source: Path) -> set[int]:
    """The lines of the imports that run when ``source`` is imported (not those inside a
    function or under ``if TYPE_CHECKING:``)."""
    tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
    return {node.lineno for node, type_only in _module_level_imports(tree) if not type_only}


def _import_violations(pkg: Package, packages: dict[str, Package]) -> list[str]:
    errors: list[str] = []
    siblings = {p.import_name: p.name for p in packages.values()}
    extra_deps = {_dist_name(r) for reqs in pkg.extras.values() for r in reqs}
    test_deps = {_dist_name(r) for r in pkg.test_group}
    closure = _closure(pkg.name, packages)
    for dep in extra_deps:
        closure |= _closure(dep, packages)

    for source in sorted((pkg.path / "src").rglob("*.py")):
        in_testing = "testing" in source.relative_to(pkg.path / "src").parts or (
            source.stem == "testing"
        )
        on_import = _runs_on_import(source)
        for line, module in _imports(source):
            dist = _dist_of_import(module, siblings)
            if dist is None or dist == pkg.name or dist in pkg.deps:
                continue
            rel = source.relative_to(pkg.path.parent.parent)
            extra = _extra_of(pkg, dist)
            if extra is not None and (in_testing or line not in on_import):
                continue
            if extra is not None:
                errors.append(
                    f"{rel}:{line}: imports {module!r} when the module is imported, but {dist} "
                    f"comes only with {pkg.name}[{extra}]: import it where it is used (inside a "
                    f"function), so {pkg.name} imports without the extra"
                )
                continue
            errors.append(
                f"{rel}:{line}: imports {module!r} but {pkg.name} does not declare {dist}"
            )

    tests_dir = pkg.path / "tests"
    allowed_in_tests = closure | extra_deps | test_deps
    for source in sorted(tests_dir.rglob("*.py")) if tests_dir.exists() else []:
        for line, module in _imports(source):
            dist = _dist_of_import(module, siblings)
            if dist is None or dist in allowed_in_tests:
                continue
            if module in {"conftest", "tests"} or (tests_dir / f"{module}.py").exists():
                continue
            rel = source.relative_to(pkg.path.parent.parent)
            errors.append(
                f"{rel}:{line}: test imports {module!r}, which {pkg.name} and its test group "
                "do not declare (cross-package tests belong in tests-integration/)"
            )
    return errors


def _own_failure_codes(pkg: Package) -> list[str]:
    """An implementation that builds an ``LlmFailure`` with a code written as a string literal
    defines a failure code of its own: the vocabulary lives in dsh-llm (``FailureCode``)."""
    if pkg.name in SEAMS:
        return []
    errors: list[str] = []
    for source in sorted((pkg.path / "src").rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name != "LlmFailure":
                continue
            for keyword in node.keywords:
                value = keyword.value
                if keyword.arg == "code" and isinstance(value, ast.Constant):
                    rel = source.relative_to(pkg.path.parent.parent)
                    errors.append(
                        f"{rel}:{node.lineno}: LlmFailure code {value.value!r} is spelled "
                        "here; use dsh_llm.FailureCode (one vocabulary, in the model seam)"
                    )
    return errors


SEAM_CLOSED_ERRORS = frozenset(
    {"AgentClosedError", "PersistenceClosedError", "SessionHandleClosedError"}
)
"""The seams' closed errors: an implementation's own closed error must be one of them."""


def _own_closed_errors(pkg: Package) -> list[str]:
    """An implementation class named ``*ClosedError`` that is not a seam's closed error (a
    caller could not catch one error whatever closed), or a bare ``RuntimeError`` saying
    something is closed."""
    if pkg.name in SEAMS:
        return []
    errors: list[str] = []
    for source in sorted((pkg.path / "src").rglob("*.py")):
        tree = ast.parse(source.read_text(encoding="utf-8"), filename=str(source))
        rel = source.relative_to(pkg.path.parent.parent)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name.endswith("ClosedError"):
                bases = {
                    base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                    for base in node.bases
                }
                if not bases & SEAM_CLOSED_ERRORS:
                    errors.append(
                        f"{rel}:{node.lineno}: {node.name} is a closed error of its own; derive "
                        f"it from a seam's ({', '.join(sorted(SEAM_CLOSED_ERRORS))})"
                    )
            if (
                isinstance(node, ast.Raise)
                and isinstance(node.exc, ast.Call)
                and getattr(node.exc.func, "id", "") == "RuntimeError"
                and "closed" in ast.unparse(node.exc).lower()
            ):
                errors.append(
                    f"{rel}:{node.lineno}: a bare RuntimeError says something is closed; raise "
                    "the seam's closed error"
                )
    return errors


def check(root: Path) -> list[str]:
    """Every violation of the dependency rule under ``root``; empty when the tree is clean."""
    packages = load_packages(root)
    siblings = set(packages)
    errors: list[str] = []
    for pkg in packages.values():
        errors.extend(_role_violations(pkg, siblings))
        errors.extend(_import_violations(pkg, packages))
        errors.extend(_module_cycle_violations(pkg))
        errors.extend(_own_failure_codes(pkg))
        errors.extend(_own_closed_errors(pkg))
    errors.extend(_cycle_violations(packages))
    errors.extend(_version_violations(packages))
    return errors


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    errors = check(root)
    for error in errors:
        print(error)
    count = len(load_packages(root))
    if errors:
        print(f"architecture: {len(errors)} violation(s) in {count} packages")
        return 1
    print(f"architecture: {count} packages follow the dependency rule")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
