"""Run inside an environment where one distribution was installed alone from dist/.

Checks that the package imports, that every public name in ``__all__`` resolves, and that the
environment holds exactly the package's declared dependency closure (read from the installed
metadata, with the extras a requirement asks for): nothing missing, nothing extra.

Usage: ``python tools/check_isolation.py DIST_NAME``
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import re
import sys

# Installer plumbing that a fresh environment may hold without anyone asking for it.
BASELINE = frozenset({"pip", "setuptools", "wheel", "uv"})


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def closure(root: str, installed: set[str]) -> set[str]:
    """The distributions ``root`` requires, transitively, with the extras that are asked for.

    Only the standard library is available here (installing ``packaging`` would spoil the
    check), so markers are read plainly: a requirement behind ``extra == "x"`` counts only when
    a dependent asked for that extra (``pyjwt[crypto]``); one behind another marker (a Python
    version, a platform) counts only when it is installed.
    """
    seen: set[tuple[str, str]] = set()
    names: set[str] = set()
    stack: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    while stack:
        name, extras = stack.pop()
        names.add(name)
        for extra in {"", *extras}:
            if (name, extra) in seen:
                continue
            seen.add((name, extra))
            for raw in md.requires(name) or []:
                requirement, _, marker = raw.partition(";")
                match = _NAME.match(requirement)
                if match is None:
                    raise SystemExit(f"{name}: cannot read requirement {raw!r}")
                dep = _norm(match.group(1))
                wanted = frozenset(_norm(e) for e in (match.group(2) or "").split(",") if e.strip())
                needs = _EXTRA.search(marker)
                if needs is not None:
                    if _norm(needs.group(1)) != extra:
                        continue
                    rest = _EXTRA.sub("", marker)
                    if re.search(r"[a-z_]+\s*[<>=!~]", rest) and dep not in installed:
                        continue
                elif extra or (marker.strip() and dep not in installed):
                    continue
                stack.append((dep, wanted))
    return names


def main(dist: str) -> int:
    dist = _norm(dist)
    module = importlib.import_module(dist.replace("-", "_"))
    missing = [n for n in getattr(module, "__all__", []) if not hasattr(module, n)]
    if not hasattr(module, "__all__"):
        print(f"{dist}: the package has no __all__")
        return 1
    if missing:
        print(f"{dist}: __all__ names missing from the module: {missing}")
        return 1
    installed = {_norm(d.metadata["Name"]) for d in md.distributions()} - BASELINE
    expected = closure(dist, installed)
    extra, absent = installed - expected, expected - installed
    if extra or absent:
        print(f"{dist}: installed set differs from the declared closure")
        print(f"  installed but not declared: {sorted(extra)}")
        print(f"  declared but not installed: {sorted(absent)}")
        return 1
    print(f"{dist}: imports alone; installed set == declared closure ({len(expected)} dists)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
