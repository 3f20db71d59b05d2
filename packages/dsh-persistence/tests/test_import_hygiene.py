"""Importing the seam, or the suite's validate(), never imports pytest."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_seam_and_validate_does_not_import_pytest() -> None:
    code = (
        "import sys, dsh_persistence, dsh_persistence.testing\n"
        "from dsh_persistence.testing import validate, PersistenceFixture\n"
        "assert 'pytest' not in sys.modules, 'pytest was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_persistence_contract_is_loaded_on_demand() -> None:
    import dsh_persistence.testing as testing

    assert testing.PersistenceContract.__name__ == "PersistenceContract"


def test_importing_the_seam_does_not_load_the_file_lock() -> None:
    code = "import sys, dsh_persistence\nassert 'dsh_persistence.filelock' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)
