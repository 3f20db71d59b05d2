"""Every distribution has an API reference page that renders it and that the site lists.

``nox -s docs`` fails on a `:::` target that does not exist; this check catches what the build
cannot: a package with no page at all, a page left out of the nav, a package griffe is not told
where to find, a public subpackage nobody documents. Stdlib only: mkdocs.yml is read as lines.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_NAV_ENTRY = re.compile(r"^\s+-\s+(?:[^:]+:\s+)?(?P<page>\S+\.md)\s*$")
_TOP_LEVEL_KEY = re.compile(r"^[A-Za-z_][\w-]*:")


def _distributions(root: Path) -> list[str]:
    return sorted(
        d.name
        for d in (root / "packages").iterdir()
        if d.is_dir() and not d.name.startswith((".", "_"))
    )


def _nav_pages(mkdocs_lines: list[str]) -> set[str]:
    """The pages the ``nav:`` block of mkdocs.yml lists (its indented lines up to the next key)."""
    pages: set[str] = set()
    in_nav = False
    for line in mkdocs_lines:
        if _TOP_LEVEL_KEY.match(line):
            in_nav = line.rstrip() == "nav:"
            continue
        entry = _NAV_ENTRY.match(line)
        if in_nav and entry:
            pages.add(entry.group("page"))
    return pages


def _public_subpackages(root: Path, dist: str) -> list[str]:
    """Dotted names of the import package's subpackages whose names do not start with ``_``."""
    module = dist.replace("-", "_")
    base = root / "packages" / dist / "src" / module
    if not base.is_dir():
        return []
    return sorted(
        f"{module}.{sub.name}"
        for sub in base.iterdir()
        if sub.is_dir() and not sub.name.startswith("_") and (sub / "__init__.py").is_file()
    )


def _has_directive(page_text: str, target: str) -> bool:
    return re.search(rf"^::: {re.escape(target)}\s*$", page_text, re.MULTILINE) is not None


def reference_problems(root: Path) -> list[str]:
    """One message per way docs/reference and mkdocs.yml fall short of packages/."""
    mkdocs = root / "mkdocs.yml"
    lines = mkdocs.read_text(encoding="utf-8").splitlines()
    nav = _nav_pages(lines)
    source_paths = {line.strip().removeprefix("- ").strip() for line in lines}
    problems: list[str] = []
    for dist in _distributions(root):
        module = dist.replace("-", "_")
        page = root / "docs" / "reference" / f"{dist}.md"
        shown = page.relative_to(root)
        if f"packages/{dist}/src" not in source_paths:
            problems.append(f"mkdocs.yml: mkdocstrings paths do not list packages/{dist}/src")
        if f"reference/{dist}.md" not in nav:
            problems.append(f"mkdocs.yml: nav does not list reference/{dist}.md")
        if not page.is_file():
            problems.append(f"{shown}: missing (packages/{dist} has no reference page)")
            continue
        text = page.read_text(encoding="utf-8")
        for target in [module, *_public_subpackages(root, dist)]:
            if not _has_directive(text, target):
                problems.append(f"{shown}: no `::: {target}` line renders {target}")
    return problems


def _tree(root: Path, dists: dict[str, list[str]], nav: list[str], paths: list[str]) -> None:
    """A fake repository: packages (with subpackages), one reference page each, a mkdocs.yml."""
    for dist, subpackages in dists.items():
        src = root / "packages" / dist / "src" / dist.replace("-", "_")
        for sub in ["", *subpackages]:
            (src / sub).mkdir(parents=True, exist_ok=True)
            (src / sub / "__init__.py").write_text('"""x."""\n')
        (root / "docs" / "reference").mkdir(parents=True, exist_ok=True)
        module = dist.replace("-", "_")
        sections = "".join(f"\n::: {module}.{sub}\n" for sub in subpackages)
        (root / "docs" / "reference" / f"{dist}.md").write_text(
            f"# {dist}\n\n::: {module}\n{sections}"
        )
    path_lines = "".join(f"            - {p}\n" for p in paths)
    nav_lines = "".join(f"      - {Path(p).stem}: {p}\n" for p in nav)
    (root / "mkdocs.yml").write_text(
        "site_name: x\nplugins:\n  - search\n  - mkdocstrings:\n      handlers:\n"
        f"        python:\n          paths:\n{path_lines}"
        f"nav:\n  - Home: index.md\n  - Reference:\n{nav_lines}"
        "extra:\n  - reference/dsh-ghost.md\n"
    )


def _complete(root: Path, dists: dict[str, list[str]]) -> None:
    _tree(
        root,
        dists,
        nav=[f"reference/{d}.md" for d in dists],
        paths=[f"packages/{d}/src" for d in dists],
    )


def test_every_distribution_has_a_listed_reference_page() -> None:
    assert reference_problems(ROOT) == []


def test_the_real_tree_has_reference_pages_for_the_testing_subpackages() -> None:
    pages = {p.stem: p.read_text(encoding="utf-8") for p in (ROOT / "docs/reference").glob("*.md")}
    for dist, target in [
        ("dsh-llm", "dsh_llm.testing"),
        ("dsh-persistence", "dsh_persistence.testing"),
        ("dsh-shell", "dsh_shell.testing"),
    ]:
        assert _has_directive(pages[dist], target), dist


def test_a_complete_fake_tree_passes(tmp_path: Path) -> None:
    _complete(tmp_path, {"dsh-llm": ["testing"], "dsh-paths": []})
    assert reference_problems(tmp_path) == []


def test_a_package_without_a_page_fails(tmp_path: Path) -> None:
    _complete(tmp_path, {"dsh-llm": [], "dsh-paths": []})
    (tmp_path / "docs" / "reference" / "dsh-paths.md").unlink()
    assert reference_problems(tmp_path) == [
        "docs/reference/dsh-paths.md: missing (packages/dsh-paths has no reference page)"
    ]


def test_a_page_that_does_not_render_its_package_fails(tmp_path: Path) -> None:
    _complete(tmp_path, {"dsh-llm": []})
    page = tmp_path / "docs" / "reference" / "dsh-llm.md"
    page.write_text("# dsh-llm\n\n::: dsh_llm.testing\n\nSee `::: dsh_llm` below.\n")
    assert reference_problems(tmp_path) == [
        "docs/reference/dsh-llm.md: no `::: dsh_llm` line renders dsh_llm"
    ]


def test_a_public_subpackage_left_out_of_the_page_fails(tmp_path: Path) -> None:
    _complete(tmp_path, {"dsh-shell": ["testing", "_private"]})
    page = tmp_path / "docs" / "reference" / "dsh-shell.md"
    page.write_text("# dsh-shell\n\n::: dsh_shell\n")
    assert reference_problems(tmp_path) == [
        "docs/reference/dsh-shell.md: no `::: dsh_shell.testing` line renders dsh_shell.testing"
    ]


def test_a_page_missing_from_the_nav_fails_even_if_named_elsewhere(tmp_path: Path) -> None:
    dists: dict[str, list[str]] = {"dsh-llm": [], "dsh-ghost": []}
    _tree(
        tmp_path,
        dists,
        nav=["reference/dsh-llm.md"],
        paths=[f"packages/{d}/src" for d in dists],
    )
    assert reference_problems(tmp_path) == ["mkdocs.yml: nav does not list reference/dsh-ghost.md"]


def test_a_package_griffe_is_not_pointed_at_fails(tmp_path: Path) -> None:
    dists: dict[str, list[str]] = {"dsh-llm": [], "dsh-paths": []}
    _tree(
        tmp_path,
        dists,
        nav=[f"reference/{d}.md" for d in dists],
        paths=["packages/dsh-llm/src"],
    )
    assert reference_problems(tmp_path) == [
        "mkdocs.yml: mkdocstrings paths do not list packages/dsh-paths/src"
    ]
