"""DSH home resolution: an explicit value, else a non-blank ``$DSH_HOME``, else ``~/.dsh``."""

from dsh_paths._home import (
    DSH_HOME_DIR_NAME,
    DSH_HOME_ENV,
    DshHomeError,
    dsh_cache_dir,
    dsh_home_display,
    dsh_home_path,
    expand_home,
    resolve_dsh_home,
)

__all__ = [
    "DSH_HOME_DIR_NAME",
    "DSH_HOME_ENV",
    "DshHomeError",
    "dsh_cache_dir",
    "dsh_home_display",
    "dsh_home_path",
    "expand_home",
    "resolve_dsh_home",
]
