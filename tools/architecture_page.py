"""Write (or check) the parts of docs/concepts/architecture.md that the pyproject.toml files
decide: the layer drawing, the package map and each distribution's dependencies.

Each part sits between ``<!-- begin generated: NAME -->`` and ``<!-- end generated: NAME -->``
lines; everything else on the page is prose and stays as written. A distribution's kind comes
from the roles `check_architecture.py` checks; what it holds is its ``description``; what it
depends on is its ``dependencies`` (siblings first, then third-party libraries) and its extras.

Usage: ``python tools/architecture_page.py`` rewrites the page; ``--check`` exits 1 when the
page differs from what the pyproject.toml files say (``nox -s architecture`` and
tools/tests/test_architecture.py run it).
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
PAGE = Path("docs") / "concepts" / "architecture.md"

_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_REGION = re.compile(
    r"(?P<begin>^<!-- begin generated: (?P<name>[a-z-]+) -->\n)"
    r".*?"
    r"(?P<end>^<!-- end generated: (?P=name) -->$)",
    re.MULTILINE | re.DOTALL,
)
_WIDTH = 81
"""The layer drawing's width, its box borders included."""


def _roles() -> ModuleType:
    """check_architecture.py, which holds the role of every distribution."""
    spec = importlib.util.spec_from_file_location(
        "check_architecture", Path(__file__).with_name("check_architecture.py")
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("check_architecture", module)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Dist:
    """One distribution as its pyproject.toml declares it."""

    name: str
    description: str
    requires: tuple[str, ...]
    extras: dict[str, tuple[str, ...]]
    kind: str

    def depends_on(self, siblings: set[str]) -> str:
        """Its dependencies by name, siblings first, then its extras (``[mcp] dsh-tool-mcp``)."""
        parts = [", ".join(_ordered(self.requires, siblings)) or "—"]
        for extra, requirements in self.extras.items():
            if extra == "all":
                continue  # the union of the others
            parts.append(f"extra `[{extra}]`: " + ", ".join(_ordered(requirements, siblings)))
        return "; ".join(parts)


def _name(requirement: str) -> str:
    match = _REQ_NAME.match(requirement)
    if match is None:
        raise ValueError(f"cannot read a distribution name from {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _ordered(requirements: tuple[str, ...], siblings: set[str]) -> list[str]:
    names = [_name(r) for r in requirements]
    own = sorted(n for n in names if n in siblings)
    return own + sorted(n for n in names if n not in siblings)


def load(root: Path) -> list[Dist]:
    """Every distribution under ``root/packages``: seams, implementations, the composition,
    then the front ends, each group by name."""
    roles = _roles()
    order = {
        "seam": 0,
        "implementation (shared)": 1,
        "implementation": 2,
        "composition": 3,
        "front end": 4,
    }
    found: list[Dist] = []
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        name = project["name"]
        if name in roles.SEAMS:
            kind = "seam"
        elif name in roles.SHARED_IMPLEMENTATIONS:
            kind = "implementation (shared)"
        elif name in roles.IMPLEMENTATIONS:
            kind = "implementation"
        elif name in roles.COMPOSITION:
            kind = "composition"
        elif name in roles.FRONT_ENDS:
            kind = "front end"
        else:
            raise SystemExit(f"{name}: no role in tools/check_architecture.py")
        extras = {k: tuple(v) for k, v in project.get("optional-dependencies", {}).items()}
        found.append(
            Dist(
                name=name,
                description=" ".join(str(project.get("description", "")).split()),
                requires=tuple(project.get("dependencies", [])),
                extras={k: v for k, v in extras.items() if k != "testing"},
                kind=kind,
            )
        )
    return sorted(found, key=lambda d: (order[d.kind], d.name))


def _box(title: str, rows: list[str]) -> list[str]:
    inner = _WIDTH - 2
    top = f"┌─ {title} " + "─" * (inner - len(title) - 3) + "┐"
    body = [f"│  {row}".ljust(_WIDTH - 1) + "│" for row in rows]
    return [top, *body, "└" + "─" * inner + "┘"]


def _columns(names: list[str], per_row: int = 3) -> list[str]:
    width = max((len(n) for n in names), default=0) + 2
    rows = [names[i : i + per_row] for i in range(0, len(names), per_row)]
    return ["".join(n.ljust(width) for n in row).rstrip() for row in rows]


def layers(dists: list[Dist]) -> str:
    """The layer drawing: the front ends, the composition, the implementations, the seams
    with what each seam depends on."""
    siblings = {d.name for d in dists}
    front_ends = [d.name for d in dists if d.kind == "front end"]
    composition = [d.name for d in dists if d.kind == "composition"]
    implementations = [d.name for d in dists if d.kind.startswith("implementation")]
    seams = [d for d in dists if d.kind == "seam"]
    seam_width = max(len(d.name) for d in seams) + 2
    seam_rows = []
    for seam in seams:
        deps = [n for n in _ordered(seam.requires, siblings) if n in siblings]
        seam_rows.append(seam.name.ljust(seam_width) + "──► " + (", ".join(deps) or "nothing"))
    arrow = " " * 40 + "│"
    for row in (*front_ends, *composition, *implementations, *seam_rows):
        if len(row) > _WIDTH - 4:
            raise SystemExit(f"{row!r} does not fit in the layer drawing")
    lines = [
        "```text",
        *_box("front ends", _columns(front_ends)),
        arrow + " the composition and the seams only",
        *_box("composition", _columns(composition)),
        arrow + " may depend on anything below",
        *_box("implementations", _columns(implementations)),
        arrow + " only seams, dsh-paths (shared) and third-party",
        arrow + " libraries; never each other",
        *_box("seams (each with the seams it depends on)", seam_rows),
        "```",
    ]
    return "\n".join(lines)


def _cell(text: str) -> str:
    """``text`` as plain text in a Markdown table cell (``mcp__<server>__<tool>``, ``DSH_*``)."""
    for raw, escaped in (("|", "\\|"), ("*", "\\*"), ("<", "&lt;"), (">", "&gt;")):
        text = text.replace(raw, escaped)
    return text


def package_map(dists: list[Dist]) -> str:
    """The package map: distribution, kind, what it holds, what it depends on."""
    siblings = {d.name for d in dists}
    lines = [
        "| distribution | kind | what it holds | depends on |",
        "|---|---|---|---|",
    ]
    for dist in dists:
        link = f"[`{dist.name}`](../packages.md#{dist.name})"
        lines.append(
            f"| {link} | {dist.kind} | {_cell(dist.description)} | "
            f"{_cell(dist.depends_on(siblings))} |"
        )
    return "\n".join(lines)


def render(root: Path, text: str) -> str:
    """``text`` (the page) with every generated region rewritten from ``root``'s packages;
    ``SystemExit`` for a region this tool does not know or one the page lacks."""
    dists = load(root)
    parts = {"layers": layers(dists), "package-map": package_map(dists)}
    seen: set[str] = set()

    def fill(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in parts:
            raise SystemExit(f"{PAGE}: unknown generated region {name!r}")
        seen.add(name)
        return f"{match.group('begin')}{parts[name]}\n{match.group('end')}"

    result = _REGION.sub(fill, text)
    missing = sorted(set(parts) - seen)
    if missing:
        raise SystemExit(f"{PAGE}: no generated region for {', '.join(missing)}")
    return result


def main(argv: list[str]) -> int:
    check = "--check" in argv[1:]
    page = ROOT / PAGE
    text = page.read_text(encoding="utf-8")
    wanted = render(ROOT, text)
    if wanted == text:
        print(f"{PAGE}: the package map matches the pyproject.toml files")
        return 0
    if check:
        print(
            f"{PAGE}: the package map differs from the pyproject.toml files; "
            "run python tools/architecture_page.py"
        )
        return 1
    page.write_text(wanted, encoding="utf-8")
    print(f"{PAGE}: rewritten from the pyproject.toml files")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
