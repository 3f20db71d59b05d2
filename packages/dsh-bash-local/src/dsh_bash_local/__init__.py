"""The local bash executor of DSH: ``bash -c`` children in their own process groups.

`LocalBashExecutor` implements `dsh_shell.ShellExecutor`; `LocalBashConfig` holds its limits.
"""

from dsh_bash_local._config import LocalBashConfig
from dsh_bash_local._executor import LocalBashExecutor
from dsh_bash_local._process import LocalShellProcess

__all__ = ["LocalBashConfig", "LocalBashExecutor", "LocalShellProcess"]
