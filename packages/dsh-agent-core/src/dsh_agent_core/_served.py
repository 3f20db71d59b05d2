"""How long a provider's server is given to say what it serves (``dsh models``,
``ProviderModel.served_models``); alone here so that ``dsh --help`` can show the default
without importing the models and their HTTP client."""

from __future__ import annotations

__all__ = ["SERVED_MODELS_TIMEOUT"]

SERVED_MODELS_TIMEOUT = 5.0
"""Seconds a provider's server is given to say what it serves."""
