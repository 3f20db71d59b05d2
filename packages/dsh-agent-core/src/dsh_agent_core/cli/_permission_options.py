"""``--sandbox`` and ``--approval``: one definition for every command that starts sessions
(``dsh``/``dsh chat``, ``dsh run``, ``dsh acp``), and the config override they make."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from dsh_shell import SANDBOX_MODES

__all__ = ["APPROVAL_CHOICES", "permission_options", "sandbox_overrides"]

APPROVAL_CHOICES = ("ask", "never")
"""``dsh_agent.APPROVAL_POLICIES``, spelled here so that ``dsh --help`` does not import the
agent seam (and pydantic); a test keeps the two equal."""

F = TypeVar("F", bound=Callable[..., Any])


def permission_options(approval_help: str) -> Callable[[F], F]:
    """The two options, passed to the command as ``sandbox_mode`` and ``approval``
    (``None`` when not given); ``approval_help`` says who is asked."""

    def decorate(command: F) -> F:
        command = click.option(
            "--approval",
            type=click.Choice(APPROVAL_CHOICES),
            help=approval_help,
        )(command)
        return click.option(
            "--sandbox",
            "sandbox_mode",
            type=click.Choice(SANDBOX_MODES),
            help="Where commands may write (default: the config's, else workspace-write).",
        )(command)

    return decorate


def sandbox_overrides(sandbox_mode: str | None, approval: str | None) -> dict[str, Any]:
    """The config override the options make: ``{"sandbox": {...}}`` with what was given,
    ``{}`` when neither was."""
    sandbox: dict[str, Any] = {}
    if sandbox_mode is not None:
        sandbox["mode"] = sandbox_mode
    if approval is not None:
        sandbox["approval"] = approval
    return {"sandbox": sandbox} if sandbox else {}
