"""The agent core's errors: one base, ``DshError``, each naming the key, file or session."""

from __future__ import annotations

__all__ = ["ConfigError", "DshError", "HomeConflictError", "UnknownPresetError"]


class DshError(Exception):
    """Base of the agent core's errors; the message is one line a shell user can act on."""


class ConfigError(DshError):
    """The configuration is invalid: ``key`` names where (file and key), ``reason`` what."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"config {key}: {reason}")
        self.key = key
        self.reason = reason


class HomeConflictError(ConfigError):
    """``dsh_home`` and ``skills.local.dsh_home`` resolve to different directories."""

    def __init__(self, top: str, skills: str) -> None:
        super().__init__(
            "skills.local.dsh_home",
            f"resolves to {skills}, but dsh_home resolves to {top}; set one of them, or the "
            "same directory in both",
        )
        self.top = top
        self.skills = skills


class UnknownPresetError(ConfigError):
    """A preset name the configuration does not define."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(
            f"presets.{name}", f"no such preset (defined: {', '.join(known) or 'none'})"
        )
        self.name = name
