"""The lockstep bump moves versions, sibling ranges and changelogs together, or touches nothing."""

from __future__ import annotations

import datetime
import importlib.util
import re
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DAY = datetime.date(2027, 1, 15)


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


bump = _load("bump_version")

LLM_PYPROJECT = (
    '[project]\nname = "dsh-llm"\nversion = "0.1.0"\ndependencies = ["pydantic>=2.11"]\n'
)
SESSION_PYPROJECT = (
    '[project]\nname = "dsh-session"\nversion = "0.1.0"\n'
    'dependencies = ["dsh-llm>=0.1,<0.2", "pydantic>=2.11"]\n'
)
LLM_CHANGELOG = (
    "# Changelog of dsh-llm\n\n"
    "## [Unreleased]\n\n"
    "- `ModelInfo` reports context windows.\n"
    "- A malformed source kind is refused.\n\n"
    "## [0.1.0] - 2026-12-02\n\n"
    "- The first version.\n"
)
SESSION_CHANGELOG = (
    "# Changelog of dsh-session\n\n"
    "## [Unreleased]\n\n"
    "## [0.1.0] - 2026-12-02\n\n"
    "- The first version.\n"
)


def _tree(root: Path) -> Path:
    """Two packages: dsh-llm with entries under Unreleased, dsh-session with none."""
    for name, pyproject, changelog in [
        ("dsh-llm", LLM_PYPROJECT, LLM_CHANGELOG),
        ("dsh-session", SESSION_PYPROJECT, SESSION_CHANGELOG),
    ]:
        base = root / "packages" / name
        base.mkdir(parents=True)
        (base / "pyproject.toml").write_text(pyproject, encoding="utf-8")
        (base / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    return root


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_bump_writes_versions_ranges_and_dated_changelogs(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    changed = bump.bump(root, "0.2.0", today=DAY)
    assert sorted(str(p.relative_to(root)) for p in changed) == [
        "packages/dsh-llm/CHANGELOG.md",
        "packages/dsh-llm/pyproject.toml",
        "packages/dsh-session/CHANGELOG.md",
        "packages/dsh-session/pyproject.toml",
    ]
    assert _snapshot(root) == {
        "packages/dsh-llm/CHANGELOG.md": (
            "# Changelog of dsh-llm\n\n"
            "## [Unreleased]\n\n"
            "## [0.2.0] - 2027-01-15\n\n"
            "- `ModelInfo` reports context windows.\n"
            "- A malformed source kind is refused.\n\n"
            "## [0.1.0] - 2026-12-02\n\n"
            "- The first version.\n"
        ),
        "packages/dsh-llm/pyproject.toml": LLM_PYPROJECT.replace("0.1.0", "0.2.0"),
        "packages/dsh-session/CHANGELOG.md": (
            "# Changelog of dsh-session\n\n"
            "## [Unreleased]\n\n"
            "## [0.2.0] - 2027-01-15\n\n"
            "- Version aligned with the other dsh-py distributions (no changes of its own).\n\n"
            "## [0.1.0] - 2026-12-02\n\n"
            "- The first version.\n"
        ),
        "packages/dsh-session/pyproject.toml": (
            '[project]\nname = "dsh-session"\nversion = "0.2.0"\n'
            'dependencies = ["dsh-llm>=0.2,<0.3", "pydantic>=2.11"]\n'
        ),
    }


def test_a_second_bump_releases_only_what_was_added_since(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    bump.bump(root, "0.2.0", today=DAY)
    changelog = root / "packages" / "dsh-session" / "CHANGELOG.md"
    text = changelog.read_text(encoding="utf-8")
    changelog.write_text(
        text.replace("## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n\n- A fix.\n"),
        encoding="utf-8",
    )
    bump.bump(root, "0.2.1", today=datetime.date(2027, 2, 1))
    assert changelog.read_text(encoding="utf-8").startswith(
        "# Changelog of dsh-session\n\n"
        "## [Unreleased]\n\n"
        "## [0.2.1] - 2027-02-01\n\n### Fixed\n\n- A fix.\n\n"
        "## [0.2.0] - 2027-01-15\n\n- Version aligned"
    )
    llm = (root / "packages" / "dsh-llm" / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [0.2.1] - 2027-02-01\n\n" + bump.ALIGNED + "\n\n## [0.2.0]" in llm


def test_empty_sub_headings_under_unreleased_are_not_entries(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    changelog = root / "packages" / "dsh-session" / "CHANGELOG.md"
    changelog.write_text(
        SESSION_CHANGELOG.replace("## [Unreleased]\n", "## [Unreleased]\n\n### Added\n"),
        encoding="utf-8",
    )
    bump.bump(root, "0.2.0", today=DAY)
    assert "## [0.2.0] - 2027-01-15\n\n" + bump.ALIGNED + "\n\n## [0.1.0]" in changelog.read_text(
        encoding="utf-8"
    )


def test_unreleased_as_the_last_section_is_released(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    changelog = root / "packages" / "dsh-session" / "CHANGELOG.md"
    changelog.write_text("# Changelog\n\n## [Unreleased]\n\n- New.\n", encoding="utf-8")
    bump.bump(root, "0.2.0", today=DAY)
    assert changelog.read_text(encoding="utf-8") == (
        "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2027-01-15\n\n- New.\n"
    )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.unlink(), r"dsh-session/CHANGELOG\.md: missing"),
        (
            lambda p: p.write_text("# Changelog\n\n## [0.1.0]\n\n- x\n", encoding="utf-8"),
            r"dsh-session/CHANGELOG\.md: no '## \[Unreleased\]' heading",
        ),
        (
            lambda p: p.write_text("## [Unreleased]\n\n## [Unreleased]\n", encoding="utf-8"),
            r"dsh-session/CHANGELOG\.md: 2 '## \[Unreleased\]' heading",
        ),
        (
            lambda p: p.write_text(
                "## [Unreleased]\n\n## [0.2.0] - 2027-01-01\n", encoding="utf-8"
            ),
            r"dsh-session/CHANGELOG\.md: already has a heading for 0\.2\.0",
        ),
    ],
    ids=["missing", "no-unreleased", "two-unreleased", "already-released"],
)
def test_a_bad_changelog_is_named_and_nothing_is_written(
    tmp_path: Path, damage: Callable[[Path], object], message: str
) -> None:
    root = _tree(tmp_path)
    # dsh-session sorts after dsh-llm: a tool that wrote as it went would have bumped dsh-llm.
    damage(root / "packages" / "dsh-session" / "CHANGELOG.md")
    before = _snapshot(root)
    with pytest.raises(SystemExit, match=message):
        bump.bump(root, "0.2.0", today=DAY)
    assert _snapshot(root) == before


@pytest.mark.parametrize("new", ["0.1.0", "0.0.9", "0.0.10"])
def test_a_version_not_greater_than_the_current_one_is_refused(tmp_path: Path, new: str) -> None:
    root = _tree(tmp_path)
    before = _snapshot(root)
    with pytest.raises(
        SystemExit, match=rf"dsh-llm/pyproject\.toml: {re.escape(new)} is not greater"
    ):
        bump.bump(root, new, today=DAY)
    assert _snapshot(root) == before


def test_versions_compare_as_numbers_not_text(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    bump.bump(root, "0.10.0", today=DAY)
    text = (root / "packages" / "dsh-session" / "pyproject.toml").read_text(encoding="utf-8")
    assert 'version = "0.10.0"' in text
    assert '"dsh-llm>=0.10,<0.11"' in text
    with pytest.raises(SystemExit, match=r"0\.9\.0 is not greater than the current 0\.10\.0"):
        bump.bump(root, "0.9.0", today=DAY)


def test_a_malformed_version_is_refused(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    before = _snapshot(root)
    with pytest.raises(SystemExit, match=r"not a MAJOR\.MINOR\.PATCH version: '0\.2'"):
        bump.bump(root, "0.2", today=DAY)
    assert _snapshot(root) == before


def _real_packages() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))


def test_the_real_tree_has_packages() -> None:
    assert len(_real_packages()) >= 20


@pytest.mark.parametrize("package", _real_packages(), ids=lambda p: p.name)
def test_every_real_package_has_a_changelog_for_its_current_version(package: Path) -> None:
    with (package / "pyproject.toml").open("rb") as f:
        version = tomllib.load(f)["project"]["version"]
    changelog = package / "CHANGELOG.md"
    assert changelog.is_file(), f"{changelog} is missing"
    text = changelog.read_text(encoding="utf-8")
    assert re.search(r"^## \[Unreleased\]$", text, re.MULTILINE), f"{changelog}: no Unreleased"
    assert re.search(rf"^## \[{re.escape(version)}\]( - \d{{4}}-\d{{2}}-\d{{2}})?$", text, re.M), (
        f"{changelog}: no heading for the current version {version}"
    )


def test_sibling_requirements_with_extras_move_too(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    pyproject = root / "packages" / "dsh-session" / "pyproject.toml"
    test_group = '\n[dependency-groups]\ntest = ["dsh-llm[testing]>=0.1,<0.2", "pytest>=8"]\n'
    pyproject.write_text(SESSION_PYPROJECT + test_group, encoding="utf-8")
    bump.bump(root, "0.2.0", today=DAY)
    text = pyproject.read_text(encoding="utf-8")
    assert '"dsh-llm[testing]>=0.2,<0.3"' in text
    assert '"dsh-llm>=0.2,<0.3"' in text
    assert "0.1" not in text.replace('version = "0.2.0"', "")


@pytest.mark.parametrize(
    "requirement", ['"dsh-llm==0.1.0"', '"dsh-llm>=0.1"', '"dsh-llm[testing]~=0.1"']
)
def test_a_sibling_requirement_the_bump_cannot_move_is_refused_before_writing(
    tmp_path: Path, requirement: str
) -> None:
    root = _tree(tmp_path)
    pyproject = root / "packages" / "dsh-session" / "pyproject.toml"
    pyproject.write_text(SESSION_PYPROJECT.replace('"dsh-llm>=0.1,<0.2"', requirement))
    before = _snapshot(root)
    with pytest.raises(SystemExit, match="is not a sibling range the bump moves"):
        bump.bump(root, "0.2.0", today=DAY)
    assert _snapshot(root) == before


def test_every_sibling_requirement_of_the_real_tree_is_one_the_bump_moves() -> None:
    for pyproject in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        text = pyproject.read_text(encoding="utf-8")
        assert bump._unmovable_siblings(pyproject, text) == []
        moved = bump._bumped_pyproject(text, "9.8.0")
        assert ">=0.1,<0.2" not in moved, pyproject
