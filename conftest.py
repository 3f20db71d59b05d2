"""Settings shared by every test run in this repository (package, integration and tool tests)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests must not depend on timing, and must repeat: no deadline, derandomized unless
# someone asks to explore with HYPOTHESIS_PROFILE=explore.
settings.register_profile(
    "dsh", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("explore", deadline=None, max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dsh"))

_PACKAGES = Path(__file__).resolve().parent / "packages"


def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail the run if a package under test was imported from the source tree, not a wheel."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("dsh_"):
            continue
        origin = getattr(module, "__file__", None)
        if origin and Path(origin).resolve().is_relative_to(_PACKAGES):
            raise pytest.UsageError(
                f"{name} was imported from the source tree ({origin}); tests must run against "
                "the installed wheel (run them through nox)"
            )
