"""JSONL session persistence for DSH: one plain (or zstd) log file per session under a root.

``JsonlPersistence(root, compression="none" | "zstd", pack_chunks=False)`` implements the
``dsh_persistence.SessionPersistence`` seam; ``migrate_root`` converts a zstd root to a plain one.
"""

from dsh_persistence_jsonl._backend import JsonlPersistence
from dsh_persistence_jsonl._errors import RootEncodingError
from dsh_persistence_jsonl._handle import JsonlSessionHandle
from dsh_persistence_jsonl._migrate import (
    MigrationReport,
    MigrationRootError,
    MigrationStep,
    migrate_root,
)
from dsh_persistence_jsonl._pathcodec import encode_segment, project_key

__all__ = [
    "JsonlPersistence",
    "JsonlSessionHandle",
    "MigrationReport",
    "MigrationRootError",
    "MigrationStep",
    "RootEncodingError",
    "encode_segment",
    "migrate_root",
    "project_key",
]
