"""A third-party ``ShellExecutor``: plain asyncio subprocesses running ``bash -c``.

What an executor author writes against the ``dsh-shell`` seam, and nothing else from dsh-py.
`SubprocessExecutor` runs each command in a new session with the seam's child environment
(`dsh_shell.compose_child_environment`), stdin given or ``/dev/null``, bounded output with
spill files, and a timeout, cancellation or kill that takes the command's whole process family
down (SIGTERM, a grace period, SIGKILL). `BackgroundProcess` is what `SubprocessExecutor.start`
returns. Linux first: the family is found through ``/proc``; elsewhere only the process group
is signalled.
"""

from example_dsh_shell_subprocess._background import BackgroundProcess
from example_dsh_shell_subprocess._executor import SubprocessExecutor

__all__ = ["BackgroundProcess", "SubprocessExecutor"]
