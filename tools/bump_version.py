"""Move every distribution to one new version and keep sibling ranges compatible.

Usage: ``python tools/bump_version.py 0.2.0`` (or ``nox -s bump -- 0.2.0``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_VERSION = re.compile(r'^version = "[^"]+"$', re.MULTILINE)
_SIBLING = re.compile(r'"(dsh-[a-z0-9-]+)>=\d+\.\d+,<\d+\.\d+"')


def bump(root: Path, new: str) -> list[Path]:
    if not re.fullmatch(r"\d+\.\d+\.\d+", new):
        raise SystemExit(f"not a MAJOR.MINOR.PATCH version: {new!r}")
    major, minor = (int(x) for x in new.split(".")[:2])
    changed: list[Path] = []
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        text = pyproject.read_text(encoding="utf-8")
        updated = _VERSION.sub(f'version = "{new}"', text, count=1)
        updated = _SIBLING.sub(rf'"\1>={major}.{minor},<{major}.{minor + 1}"', updated)
        if updated != text:
            pyproject.write_text(updated, encoding="utf-8")
            changed.append(pyproject)
    return changed


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: bump_version.py NEW_VERSION")
    for path in bump(ROOT, sys.argv[1]):
        print(f"bumped {path.relative_to(ROOT)}")
