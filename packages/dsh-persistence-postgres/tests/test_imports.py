"""The public names: importable, documented, and importing the package pulls in no test tool."""

from __future__ import annotations

import subprocess
import sys

import dsh_persistence_postgres


def test_every_public_name_is_documented() -> None:
    for name in dsh_persistence_postgres.__all__:
        value = getattr(dsh_persistence_postgres, name)
        if isinstance(value, int):
            continue
        assert (value.__doc__ or "").strip(), f"{name} has no docstring"


def test_importing_the_package_imports_no_pytest() -> None:
    code = "import sys, dsh_persistence_postgres; print('pytest' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "False", result.stderr
