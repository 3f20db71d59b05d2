"""Run every ```python block of a README, each in a fresh interpreter in a scratch directory.

A README's examples are part of the package's promise, so they run with the package's tests
(against the installed wheel). A block whose info string says ``python no-run reason="..."`` is
illustrative (for example a contract-suite subclass that needs a third party's backend) and is
only compiled; its reason is required. ``python runs=docs`` needs packages this one does not
install: it is compiled here and run by ``tools/run_doc_examples.py`` in the docs session.

Usage: ``python tools/run_readme_examples.py packages/<dist>/README.md``
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

_FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def blocks(text: str) -> list[tuple[int, str, str]]:
    """(1-based line of the opening fence, info string, code) for each python block."""
    found = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        if info.split(" ")[0] in {"python", "py"}:
            line = text.count("\n", 0, match.start()) + 1
            found.append((line, info, match.group("body")))
    return found


def main(readme: Path) -> int:
    failures = 0
    examples = blocks(readme.read_text(encoding="utf-8"))
    for line, info, code in examples:
        where = f"{readme}:{line}"
        options = info.split()
        if "no-run" in options:
            compile(code, where, "exec")
            if not re.search(r'reason="[^"]+"', info):
                failures += 1
                print(f'{where}: a no-run block needs reason="..." saying why it cannot run')
                continue
            print(f"{where}: compiled (no-run)")
            continue
        if "runs=docs" in options:
            compile(code, where, "exec")
            print(f"{where}: compiled (run by the docs session)")
            continue
        with tempfile.TemporaryDirectory() as scratch:
            result = subprocess.run(
                [sys.executable, "-c", code], cwd=scratch, capture_output=True, text=True
            )
        if result.returncode != 0:
            failures += 1
            print(f"{where}: example failed (exit {result.returncode})\n{result.stderr}")
        else:
            print(f"{where}: ran")
    if not examples:
        print(f"{readme}: no python example (each package README shows a working use)")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
