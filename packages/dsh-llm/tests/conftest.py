"""Shared test settings."""

from __future__ import annotations

from hypothesis import settings

# Properties must not fail on a slow or loaded machine: no per-example deadline.
settings.register_profile("dsh", deadline=None)
settings.load_profile("dsh")
