"""What every ``dsh`` command shares: the context object, consoles, and one-line errors."""

from __future__ import annotations

import asyncio
import functools
import logging
import select
import sys
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar

import click

from dsh_agent_core.cli._terminal import (
    TerminalConsole,
    TerminalLogHandler,
    discard,
    terminal_text,
)

if TYPE_CHECKING:
    from dsh_agent_core._config import Config

__all__ = ["State", "async_command", "err", "fail", "log_to_terminal", "out", "stdout_closed"]

P = ParamSpec("P")
T = TypeVar("T")

out = TerminalConsole()
"""Standard output (paths and ids are never wrapped; controls shown, never interpreted)."""
err = TerminalConsole(stderr=True)
"""Standard error: progress, status lines, warnings and errors."""


def log_to_terminal() -> None:
    """Show the warnings of every library on standard error through the sanitizer (once per
    process; without it Python's last-resort handler would write them raw)."""
    root = logging.getLogger()
    if not any(isinstance(handler, TerminalLogHandler) for handler in root.handlers):
        root.addHandler(TerminalLogHandler(err))


@dataclass
class State:
    """The group's options, shared by every command."""

    profile: str | None
    home: str | None
    config_path: str | None
    debug: bool

    def config(self, **overrides: Any) -> Config:
        """Load the configuration with the group's options (and command ``overrides``)."""
        from dsh_agent_core._config_load import load_config  # pydantic: only once a command runs

        return load_config(
            self.profile, dsh_home=self.home, path=self.config_path, overrides=overrides or None
        )


def fail(message: str, *, code: int = 1) -> NoReturn:
    """Print ``dsh: error: <message>`` on standard error (one line, controls shown) and exit
    with ``code``."""
    err.print(f"dsh: error: {terminal_text(message, one_line=True)}", markup=False)
    sys.exit(code)


def _one_line(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_one_line(inner) for inner in error.exceptions)
    text = terminal_text(str(error) or type(error).__name__)  # before \x85 counts as a space
    return " ".join(text.split())


def async_command(
    function: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, T]:
    """Run an ``async`` command body with ``asyncio.run``; a library error becomes one line on
    standard error and exit status 1 (``--debug`` shows the traceback instead)."""

    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        state = click.get_current_context().find_object(State)
        try:
            return asyncio.run(_awaited(function(*args, **kwargs)))
        except KeyboardInterrupt:
            fail("interrupted", code=130)
        except (click.ClickException, click.exceptions.Exit, SystemExit):
            raise
        except BrokenPipeError:
            if not stdout_closed():
                raise
            discard(sys.stdout)  # `dsh sessions list | head -1`: the reader had what it wanted
            sys.exit(0)
        except Exception as error:
            if state is not None and state.debug:  # the traceback, through the sanitizer too
                err.print(terminal_text("".join(traceback.format_exception(error))))
                sys.exit(1)
            fail(_one_line(error))

    return run


def stdout_closed() -> bool:
    """Whether standard output is a pipe whose reader went away (then writing to it fails with
    ``EPIPE``; any other broken pipe is an error to report)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(mask & select.POLLERR for _, mask in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable
