"""A tiny seccomp filter for confined commands: no ``AF_UNIX`` sockets, no foreign syscall ABI.

A read-only bind mount does not stop ``connect()`` on a socket file, so without it a confined
command could reach the host's ssh-agent, Docker or D-Bus socket through the filesystem. The
filter (classic BPF, handed to ``bwrap --seccomp FD``) makes ``socket(AF_UNIX, ...)`` fail with
``EACCES``; ``socketpair`` (an anonymous pair, no host endpoint) stays allowed. A syscall of
another ABI (i386 or x32 on x86-64), which could name ``socket`` differently, kills the process.
"""

from __future__ import annotations

import platform
import struct
from typing import Final

_LD_W_ABS: Final = 0x20
_JEQ_K: Final = 0x15
_JGE_K: Final = 0x35
_RET_K: Final = 0x06
_ALLOW: Final = 0x7FFF0000
_ERRNO_EACCES: Final = 0x00050000 | 13
_KILL_PROCESS: Final = 0x80000000
_AF_UNIX: Final = 1

# machine → (AUDIT_ARCH_*, the socket syscall's number, whether x32 numbers must be refused)
_ARCHES: Final = {
    "x86_64": (0xC000003E, 41, True),
    "aarch64": (0xC00000B7, 198, False),
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one), or ``None`` where none is known.

    Supported: ``x86_64`` and ``aarch64``. Layout: check the ABI (else kill), [x86_64: refuse
    x32 numbers (kill)], if the syscall is ``socket`` and its domain is ``AF_UNIX``, fail with
    ``EACCES``; allow everything else.
    """
    found = _ARCHES.get(machine if machine is not None else platform.machine())
    if found is None:
        return None
    arch, socket_nr, refuse_x32 = found
    program = [_op(_LD_W_ABS, 4)]  # seccomp_data.arch
    body = [_op(_LD_W_ABS, 0)]  # seccomp_data.nr
    if refuse_x32:
        body.append(b"x32")  # placeholder, patched below (jump to kill)
    body += [
        _op(_JEQ_K, socket_nr, 0, 2),  # socket? else allow
        _op(_LD_W_ABS, 16),  # seccomp_data.args[0], low 32 bits (little endian)
        _op(_JEQ_K, _AF_UNIX, 1, 0),  # AF_UNIX? refuse : allow
        _op(_RET_K, _ALLOW),
        _op(_RET_K, _ERRNO_EACCES),
        _op(_RET_K, _KILL_PROCESS),
    ]
    kill_at = len(body) - 1
    if refuse_x32:
        at = body.index(b"x32")
        body[at] = _op(_JGE_K, 0x40000000, kill_at - at - 1, 0)
    program.append(_op(_JEQ_K, arch, 0, kill_at + 1 - 1))  # wrong ABI: to kill
    return b"".join(program + body)
