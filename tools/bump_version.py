"""Move every distribution to one new version, keep sibling ranges compatible, date the changelogs.

Usage: ``python tools/bump_version.py 0.2.0`` (or ``nox -s bump -- 0.2.0``).

Every package is checked before any file is written: its ``pyproject.toml`` must hold a version
lower than the new one, and its ``CHANGELOG.md`` must exist with one ``## [Unreleased]`` heading
and no heading for the new version yet. Then, in each changelog, the entries under Unreleased
move under ``## [NEW] - YYYY-MM-DD`` and an empty Unreleased stays on top; a package with no
entries of its own gets a line saying its version was aligned with the others.
"""

from __future__ import annotations

import datetime
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ALIGNED = "- Version aligned with the other dsh-py distributions (no changes of its own)."
_VERSION = re.compile(r'^version = "[^"]+"$', re.MULTILINE)
_SIBLING = re.compile(r'"(dsh-[a-z0-9-]+(?:\[[a-z0-9,-]+\])?)>=\d+\.\d+,<\d+\.\d+"')
"""A sibling requirement, extras included (``"dsh-shell[testing]>=0.1,<0.2"``)."""
_ANY_SIBLING = re.compile(r'"dsh-[a-z0-9-]+(?:\[[^\]]*\])?\s*[<>=!~;@][^"]*"')
"""Any quoted requirement of a sibling: every one must be a `_SIBLING` the bump moves."""
_UNRELEASED = re.compile(r"^## \[Unreleased\][ \t]*$", re.MULTILINE)
_SECTION = re.compile(r"^## ", re.MULTILINE)


def _parse(version: str) -> tuple[int, int, int]:
    if not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise SystemExit(f"not a MAJOR.MINOR.PATCH version: {version!r}")
    major, minor, patch = (int(x) for x in version.split("."))
    return major, minor, patch


def _current_version(pyproject: Path) -> str:
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        version = data["project"]["version"]
    except (tomllib.TOMLDecodeError, KeyError) as exc:
        raise SystemExit(f"{pyproject}: no readable [project] version ({exc})") from None
    if not isinstance(version, str) or not re.fullmatch(r"\d+\.\d+\.\d+", version):
        raise SystemExit(f"{pyproject}: version {version!r} is not MAJOR.MINOR.PATCH")
    return version


def _unmovable_siblings(pyproject: Path, text: str) -> list[str]:
    """The sibling requirements of ``text`` the bump could not move (each must be a range)."""
    return [
        f'{pyproject}: {found} is not a sibling range the bump moves ("dsh-x>=M.N,<M.N+1")'
        for found in _ANY_SIBLING.findall(text)
        if not _SIBLING.fullmatch(found)
    ]


def _bumped_pyproject(text: str, new: str) -> str:
    major, minor, _ = _parse(new)
    updated = _VERSION.sub(f'version = "{new}"', text, count=1)
    return _SIBLING.sub(rf'"\1>={major}.{minor},<{major}.{minor + 1}"', updated)


def _released_changelog(path: Path, new: str, day: datetime.date) -> str:
    """The changelog at ``path`` with its Unreleased entries moved under a heading for ``new``."""
    if not path.is_file():
        raise SystemExit(f"{path}: missing; every package keeps a CHANGELOG.md")
    text = path.read_text(encoding="utf-8")
    headings = list(_UNRELEASED.finditer(text))
    if len(headings) != 1:
        found = "no" if not headings else f"{len(headings)}"
        raise SystemExit(f"{path}: {found} '## [Unreleased]' heading(s); exactly one is needed")
    if re.search(rf"^## \[{re.escape(new)}\]", text, re.MULTILINE):
        raise SystemExit(f"{path}: already has a heading for {new}")
    heading = headings[0]
    following = _SECTION.search(text, heading.end())
    body_end = following.start() if following else len(text)
    body = text[heading.end() : body_end].strip("\n")
    # Sub-headings with nothing under them (an empty "### Added") are not entries.
    has_entries = any(line.strip() and not line.startswith("#") for line in body.splitlines())
    entries = body if has_entries else ALIGNED
    rest = text[body_end:]
    released = f"## [Unreleased]\n\n## [{new}] - {day.isoformat()}\n\n{entries}\n"
    return text[: heading.start()] + released + ("\n" + rest if rest else "")


def bump(root: Path, new: str, *, today: datetime.date | None = None) -> list[Path]:
    """Move every package under ``root/packages`` to ``new``; return the files that changed.

    Raises ``SystemExit`` naming the file before anything is written when a package cannot be
    bumped (a version not greater than the current one, a missing or malformed changelog).
    """
    new_key = _parse(new)
    day = today if today is not None else datetime.date.today()
    writes: list[tuple[Path, str]] = []
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        current = _current_version(pyproject)
        if new_key <= _parse(current):
            raise SystemExit(f"{pyproject}: {new} is not greater than the current {current}")
        text = pyproject.read_text(encoding="utf-8")
        unmovable = _unmovable_siblings(pyproject, text)
        if unmovable:
            raise SystemExit("\n".join(unmovable))
        writes.append((pyproject, _bumped_pyproject(text, new)))
        changelog = pyproject.parent / "CHANGELOG.md"
        writes.append((changelog, _released_changelog(changelog, new, day)))
    changed: list[Path] = []
    for path, updated in writes:
        if updated != path.read_text(encoding="utf-8"):
            path.write_text(updated, encoding="utf-8")
            changed.append(path)
    return changed


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: bump_version.py NEW_VERSION")
    for path in bump(ROOT, sys.argv[1]):
        print(f"bumped {path.relative_to(ROOT)}")
