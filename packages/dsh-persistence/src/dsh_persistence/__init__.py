"""The DSH session persistence seam: what backends implement and what consumers can rely on.

Protocols (``SessionPersistence``, ``SessionHandle``), the ``SessionSnapshot`` of ``stat``/
``list``, the error vocabulary under ``SessionPersistenceError``, the pure validation helpers
every backend shares, ``export_session``, and the bases a backend builds on (``PersistenceBase``,
``SessionHandleBase``: the bookkeeping the contract certifies, no storage). The backend contract
suite is ``dsh_persistence.testing``.
"""

from dsh_persistence._backend_base import PersistenceBase
from dsh_persistence._barrier import flush_handles
from dsh_persistence._bulk import gc_paused
from dsh_persistence._errors import (
    PersistenceClosedError,
    SessionAlreadyExistsError,
    SessionAlreadyOwnedError,
    SessionFormatUnsupportedError,
    SessionHandleClosedError,
    SessionOwnershipLostError,
    SessionPersistenceCorruptionError,
    SessionPersistenceError,
    SessionPersistenceNotFoundError,
    SessionReadOnlyError,
    SessionStorageError,
)
from dsh_persistence._export import export_session
from dsh_persistence._frames import ZstdApi, decompress_frame
from dsh_persistence._handle_base import HandleIdentity, SessionHandleBase
from dsh_persistence._protocols import Access, SessionHandle, SessionPersistence
from dsh_persistence._snapshot import SessionSnapshot
from dsh_persistence._text_columns import TEXT_COLUMN_ESCAPE, text_from_column, text_to_column
from dsh_persistence._validation import (
    AppendBatch,
    assert_contiguous,
    assert_format_version,
    assert_stored_id,
    assert_writable_event,
    assert_writable_events,
    check_read_range,
    decode_stored_event,
    decode_stored_header,
    encode_append_batch,
    format_version_refusal,
    materialize_append_batch,
    materialize_create_header,
    refuse_reserved_type,
)

__all__ = [
    "TEXT_COLUMN_ESCAPE",
    "Access",
    "AppendBatch",
    "HandleIdentity",
    "PersistenceBase",
    "PersistenceClosedError",
    "SessionAlreadyExistsError",
    "SessionAlreadyOwnedError",
    "SessionFormatUnsupportedError",
    "SessionHandle",
    "SessionHandleBase",
    "SessionHandleClosedError",
    "SessionOwnershipLostError",
    "SessionPersistence",
    "SessionPersistenceCorruptionError",
    "SessionPersistenceError",
    "SessionPersistenceNotFoundError",
    "SessionReadOnlyError",
    "SessionSnapshot",
    "SessionStorageError",
    "ZstdApi",
    "assert_contiguous",
    "assert_format_version",
    "assert_stored_id",
    "assert_writable_event",
    "assert_writable_events",
    "check_read_range",
    "decode_stored_event",
    "decode_stored_header",
    "decompress_frame",
    "encode_append_batch",
    "export_session",
    "flush_handles",
    "format_version_refusal",
    "gc_paused",
    "materialize_append_batch",
    "materialize_create_header",
    "refuse_reserved_type",
    "text_from_column",
    "text_to_column",
]
