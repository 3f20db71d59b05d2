"""Deliberately broken copies of the subprocess executor, one defect each.

Each ``Broken*`` class makes one mistake an executor author could make; ``test_broken_variants.py``
runs the contract suite against each and checks that a *named* clause fails with a message that
points at the mistake. No pytest here: `make_executor` also builds a variant in a child process.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
from typing import Any

from example_dsh_shell_subprocess import SubprocessExecutor
from example_dsh_shell_subprocess._command import Command

from dsh_shell import ShellExecSpec, ShellRunResult


class BrokenIgnoresTimeout(SubprocessExecutor):
    """Runs every command with the longest timeout, whatever the spec says."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        return await super().run(dataclasses.replace(spec, timeout=self.max_timeout))


class BrokenLeaksTheParentEnvironment(SubprocessExecutor):
    """Hands the command this process's whole environment, then the overlays: no scrub."""

    def _child_environment(self, spec: ShellExecSpec) -> dict[str, str]:
        return {**os.environ, **(spec.env or {}), **(spec.dsh_env or {})}


class BrokenMergesStderrIntoStdout(SubprocessExecutor):
    """Sends stderr down the stdout pipe (the ``2>&1`` shortcut): stderr is always empty."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        return await super().run(dataclasses.replace(spec, command=f"exec 2>&1\n{spec.command}"))


class BrokenKillsOnlyTheProcessGroup(SubprocessExecutor):
    """Terminates the command's process group only, missing descendants that left it."""

    async def _terminate(self, command: Command) -> None:
        group = command.process.pid
        for number in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, number)
            await asyncio.sleep(self.grace)


VARIANTS: dict[str, type[SubprocessExecutor]] = {
    cls.__name__: cls
    for cls in (
        BrokenIgnoresTimeout,
        BrokenLeaksTheParentEnvironment,
        BrokenMergesStderrIntoStdout,
        BrokenKillsOnlyTheProcessGroup,
    )
}
"""Every broken variant, by class name."""


def make_executor(args: dict[str, Any]) -> SubprocessExecutor:
    """The variant ``args["variant"]`` names (the real executor for ``None``), built with the
    other ``args`` as keyword arguments."""
    options = dict(args)
    variant = options.pop("variant", None)
    return (SubprocessExecutor if variant is None else VARIANTS[variant])(**options)
