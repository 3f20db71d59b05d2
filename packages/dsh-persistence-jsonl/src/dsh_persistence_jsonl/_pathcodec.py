"""Layout path encoding (the TypeScript harness's): session ids and cwds never reach the
filesystem raw.

Both encodings walk UTF-16 code units (not code points), so an astral character becomes two
escapes and lone surrogates stay distinct. An encoded session segment longer than
``MAX_SEGMENT_BYTES`` is cut and suffixed with a hash of the whole id, so every id is storable;
the header's id stays authoritative and is checked on open.
"""

from __future__ import annotations

import functools
import hashlib
import re

MAX_SEGMENT_BYTES = 200
"""Longest encoded session-id segment kept whole; longer ones are cut and hash-suffixed."""

NO_CWD_DIR = "_no-cwd"
"""Project directory of a session whose header has no ``cwd``."""

_PROJECT_KEY_UNITS = 251
_HASH_MARK = "~~"  # never produced by an uncut encoding: every `~` there starts a 4-hex escape
_HASH_HEX = 32
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_SEPARATORS = frozenset((ord("/"), ord("\\"), ord(":")))
_ALL_SAFE = re.compile(r"[A-Za-z0-9._-]+")
_UNSAFE_BMP = re.compile(r"[^A-Za-z0-9._-]")
_ASTRAL = re.compile(r"[^\u0000-\uffff]")


def _escape(match: re.Match[str]) -> str:
    return f"~{ord(match.group()):04X}"


def _code_units(text: str) -> list[int]:
    raw = text.encode("utf-16-le", "surrogatepass")
    return [raw[i] | (raw[i + 1] << 8) for i in range(0, len(raw), 2)]


def encode_segment(text: str) -> str:
    """Encode ``text`` as one safe path segment, injectively (the harness's ``encodeSegment``).

    ``''`` raises ``ValueError``; ``.`` and ``..`` are escaped; every UTF-16 code unit outside
    ``[A-Za-z0-9._-]`` becomes ``~`` plus four uppercase hex digits (``~`` itself included).
    """
    if text == "":
        raise ValueError("cannot encode an empty string as a path segment")
    if text == ".":
        return "~002E"
    if text == "..":
        return "~002E~002E"
    if _ALL_SAFE.fullmatch(text):
        return text
    if not _ASTRAL.search(text):  # every character is one UTF-16 code unit
        return _UNSAFE_BMP.sub(_escape, text)
    parts: list[str] = []
    for unit in _code_units(text):
        parts.append(chr(unit) if unit in _SAFE else f"~{unit:04X}")
    return "".join(parts)


def session_segment(session_id: str) -> str:
    """The directory name of a session: its encoded id, cut and hash-suffixed past 200 bytes."""
    encoded = encode_segment(session_id)
    if len(encoded) <= MAX_SEGMENT_BYTES:
        return encoded
    digest = hashlib.sha256(session_id.encode("utf-16-le", "surrogatepass")).hexdigest()
    keep = MAX_SEGMENT_BYTES - len(_HASH_MARK) - _HASH_HEX
    cut = encoded[:keep]
    # never leave half an escape behind: drop a partial `~XXXX` at the cut
    tilde = cut.rfind("~", max(0, keep - 4))
    if tilde != -1 and tilde + 5 > keep:
        cut = cut[:tilde]
    return f"{cut}{_HASH_MARK}{digest[:_HASH_HEX]}"


@functools.lru_cache(maxsize=4096)
def project_key(cwd: str) -> str:
    """The project directory for ``cwd`` (the harness's ``projectKey``; lossy by design).

    Each run of ``/``, ``\\`` or ``:`` becomes one ``-``, other unsafe code units ``~XXXX``,
    leading ``-`` are stripped, an empty slug is ``root``, the slug keeps 251 code units, and the
    result is ``--<slug>--``: ``/`` → ``--root--``, ``/home/u/p`` → ``--home-u-p--``.
    """
    if cwd == "":
        raise ValueError("cannot derive a project key from an empty cwd")
    out: list[str] = []
    in_run = False
    for unit in _code_units(cwd):
        if unit in _SEPARATORS:
            if not in_run:
                out.append("-")
            in_run = True
            continue
        in_run = False
        out.append(chr(unit) if unit in _SAFE else f"~{unit:04X}")
    slug = "".join(out).lstrip("-") or "root"
    return f"--{slug[:_PROJECT_KEY_UNITS]}--"


def project_dir_name(cwd: str | None) -> str:
    """``project_key(cwd)``, or ``_no-cwd`` for a header without a cwd."""
    return NO_CWD_DIR if cwd is None else project_key(cwd)
