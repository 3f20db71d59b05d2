"""Executors for the contract tests, buildable from a name (also in a child process).

`make_local` builds the real `LocalBashExecutor`; `make_broken` one of `BROKEN`: subclasses of
it with exactly one deliberate bug each, which the contract suite must catch by a named clause.
No pytest here: the ``child_process`` clauses import this file in a child Python process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
from pathlib import Path
from typing import Any

from dsh_bash_local import LocalBashConfig, LocalBashExecutor, _fd_child
from dsh_bash_local._child import Launch
from dsh_bash_local._collector import OutputCollector
from dsh_shell import (
    DSH_ENV_PREFIX,
    CollectedOutput,
    OutputListener,
    OutputStream,
    ShellExecRequest,
    ShellExecSpec,
    ShellRunResult,
)

FACTORIES = Path(__file__)
"""This file, as a ``child_factory`` path (``f"{FACTORIES}:make_local"``)."""


def config_from(args: dict[str, Any]) -> LocalBashConfig:
    """The config ``args`` describe (``grace``, ``max_spill_bytes``, ``spill_dir``, timeouts)."""
    names = ("grace", "max_spill_bytes", "spill_dir", "timeout", "max_timeout")
    fields = {k: args[k] for k in names if k in args}
    return LocalBashConfig(**fields)


def make_local(args: dict[str, Any]) -> LocalBashExecutor:
    """The real executor; ``{"pidfd": false}`` takes the portable spawn path."""
    if args.get("pidfd") is False:
        _fd_child.PIDFD_AVAILABLE = False
    return LocalBashExecutor(config_from(args))


class BrokenIgnoresTimeout(LocalBashExecutor):
    """Runs every command with the longest timeout, whatever the spec says."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        return await super().run(dataclasses.replace(spec, timeout=self.config.max_timeout))


class BrokenLosesExitCode(LocalBashExecutor):
    """Reports exit code 0 for every command that exited."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        result = await super().run(spec)
        code = 0 if result.exit_code is not None else None
        return dataclasses.replace(result, exit_code=code)


class BrokenUnboundedOutput(LocalBashExecutor):
    """Keeps all of stdout in memory: the request's stdout_max_bytes is ignored."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        return await super().run(dataclasses.replace(spec, stdout_max_bytes=2**62))


class BrokenUnboundedSpill(LocalBashExecutor):
    """Spills streams of any size: no spill cap."""

    def _collector(
        self, max_bytes: int, label: OutputStream, on_output: OutputListener | None = None
    ) -> OutputCollector:
        on_text = None if on_output is None else functools.partial(on_output, label)
        return OutputCollector(max_bytes, 2**62, lambda: self._spill.open(label), on_text)


class BrokenNeverSpills(LocalBashExecutor):
    """Truncates without ever writing a spill file."""

    def _collector(
        self, max_bytes: int, label: OutputStream, on_output: OutputListener | None = None
    ) -> OutputCollector:
        on_text = None if on_output is None else functools.partial(on_output, label)
        return OutputCollector(max_bytes, 0, lambda: self._spill.open(label), on_text)


class BrokenIgnoresEnv(LocalBashExecutor):
    """Drops the request's env overlay."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        return await super().run(dataclasses.replace(spec, env=None))


class BrokenIgnoresDshEnv(LocalBashExecutor):
    """Drops the managed dsh_env overlay."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        return await super().run(dataclasses.replace(spec, dsh_env=None))


class BrokenInheritedDshWins(LocalBashExecutor):
    """Lets inherited DSH_* values override dsh_env (the layers in the wrong order)."""

    def _launch(
        self, spec: ShellExecSpec, stdout: OutputCollector, stderr: OutputCollector
    ) -> Launch:
        launch = super()._launch(spec, stdout, stderr)
        stale = {k: v for k, v in os.environ.items() if k.upper().startswith(DSH_ENV_PREFIX)}
        return dataclasses.replace(launch, env={**launch.env, **stale})


class BrokenResolveDropsReservedEnv(LocalBashExecutor):
    """Silently drops DSH_* keys from env instead of refusing them (ReservedEnvKeyError)."""

    def resolve(self, request: ShellExecRequest) -> ShellExecSpec:
        env = request.env
        if env is not None:
            env = {k: v for k, v in env.items() if not k.upper().startswith(DSH_ENV_PREFIX)}
        return super().resolve(dataclasses.replace(request, env=env))


class BrokenInheritsStdin(LocalBashExecutor):
    """A command given no stdin reads this process's stdin instead of /dev/null."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        if spec.stdin is not None:
            return await super().run(spec)
        command = f"exec 0</proc/{os.getpid()}/fd/0\n{spec.command}"
        return await super().run(dataclasses.replace(spec, command=command))


class BrokenDropsStdin(LocalBashExecutor):
    """Never writes the request's stdin: every command reads /dev/null."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        return await super().run(dataclasses.replace(spec, stdin=None))


class BrokenStdinPipeLeftOpen(LocalBashExecutor):
    """Writes the request's stdin but never closes the pipe: a reader waits for the timeout."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        if spec.stdin is None:
            return await super().run(spec)
        command = f"{{ cat; exec sleep 600; }} | {{\n{spec.command}\n}}"
        return await super().run(dataclasses.replace(spec, command=command))


class BrokenIgnoresWorkdir(LocalBashExecutor):
    """Runs every command in this process's current directory."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        return await super().run(dataclasses.replace(spec, workdir=Path.cwd()))


class BrokenCancelLeavesTheCommandRunning(LocalBashExecutor):
    """On cancellation reports aborted at once and leaves the command running."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        running = asyncio.ensure_future(super().run(spec))
        try:
            return await asyncio.shield(running)
        except asyncio.CancelledError:
            return ShellRunResult(
                exit_code=None,
                signal=None,
                timed_out=False,
                aborted=True,
                timeout=spec.timeout,
                stdout=CollectedOutput(""),
                stderr=CollectedOutput(""),
                duration=0.0,
            )


class BrokenCancelledCallerGetsAnotherError(LocalBashExecutor):
    """Called from a cancelled task, raises a RuntimeError (and starts nothing)."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise RuntimeError("refusing to run in a cancelled task")
        return await super().run(spec)


class BrokenOutputOnlyAtTheEnd(LocalBashExecutor):
    """Tells ``on_output`` the whole output once the command has ended (and lets a failing
    listener's exception out)."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        listener = spec.on_output
        result = await super().run(dataclasses.replace(spec, on_output=None))
        if listener is not None:
            listener("stdout", result.stdout.text)
            listener("stderr", result.stderr.text)
        return result


class BrokenLiveOutputOnOneStream(LocalBashExecutor):
    """Tells ``on_output`` every piece as stdout, stderr's included."""

    async def run(self, spec: ShellExecSpec) -> ShellRunResult:
        listener = spec.on_output
        if listener is None:
            return await super().run(spec)
        return await super().run(
            dataclasses.replace(spec, on_output=lambda _stream, text: listener("stdout", text))
        )


BROKEN: dict[str, type[LocalBashExecutor]] = {
    cls.__name__: cls
    for cls in (
        BrokenIgnoresTimeout,
        BrokenLosesExitCode,
        BrokenUnboundedOutput,
        BrokenUnboundedSpill,
        BrokenNeverSpills,
        BrokenIgnoresEnv,
        BrokenIgnoresDshEnv,
        BrokenInheritedDshWins,
        BrokenResolveDropsReservedEnv,
        BrokenInheritsStdin,
        BrokenDropsStdin,
        BrokenStdinPipeLeftOpen,
        BrokenIgnoresWorkdir,
        BrokenCancelLeavesTheCommandRunning,
        BrokenCancelledCallerGetsAnotherError,
        BrokenOutputOnlyAtTheEnd,
        BrokenLiveOutputOnOneStream,
    )
}
"""Every broken variant by name."""


def make_broken(args: dict[str, Any]) -> LocalBashExecutor:
    """The broken variant ``args["variant"]`` over the config ``args`` describe."""
    return BROKEN[args["variant"]](config_from(args))
