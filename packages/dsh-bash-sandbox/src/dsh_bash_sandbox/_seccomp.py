"""A tiny seccomp filter for confined commands: no ``AF_UNIX`` sockets, no foreign syscall ABI.

A read-only bind mount does not stop ``connect()`` on a socket file, so without it a confined
command could reach the host's ssh-agent, Docker or D-Bus socket through the filesystem. The
filter (classic BPF, handed to ``bwrap --seccomp FD``) makes ``socket(AF_UNIX, ...)`` fail with
``EACCES`` and io_uring (which opens and connects sockets without ``socket``) fail with
``EPERM``; ``socketpair`` (an anonymous pair, no host endpoint) stays allowed. A syscall of
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


_ERRNO_EPERM: Final = 0x00050000 | 1
_IO_URING: Final = (425, 426, 427)
"""``io_uring_setup``, ``io_uring_enter``, ``io_uring_register`` (the same numbers on x86-64 and
aarch64): io_uring can open and connect sockets (``IORING_OP_SOCKET``/``CONNECT``) without the
``socket`` syscall, so it is refused outright."""

_Label = str
_Instruction = tuple[int, int, "_Label | None", "_Label | None"]


def _assemble(program: list[_Instruction | _Label]) -> bytes:
    """Classic BPF from instructions and labels (a string marks the next instruction); each
    conditional jump names the labels it goes to when true and when false (``None``: next)."""
    where: dict[str, int] = {}
    count = 0
    for item in program:
        if isinstance(item, str):
            where[item] = count
        else:
            count += 1
    out: list[bytes] = []
    index = 0
    for item in program:
        if isinstance(item, str):
            continue
        code, k, true, false = item
        jt = where[true] - index - 1 if true is not None else 0
        jf = where[false] - index - 1 if false is not None else 0
        out.append(struct.pack("<HBBI", code, jt, jf, k))
        index += 1
    return b"".join(out)


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one), or ``None`` where none is known.

    Supported: ``x86_64`` and ``aarch64``. Layout: check the ABI (else kill), [x86_64: refuse
    x32 numbers (kill)], refuse io_uring (``EPERM``), if the syscall is ``socket`` and its
    domain is ``AF_UNIX``, fail with ``EACCES``; allow everything else.
    """
    found = _ARCHES.get(machine if machine is not None else platform.machine())
    if found is None:
        return None
    arch, socket_nr, refuse_x32 = found
    program: list[_Instruction | _Label] = [
        (_LD_W_ABS, 4, None, None),  # seccomp_data.arch
        (_JEQ_K, arch, None, "kill"),  # wrong ABI: kill
        (_LD_W_ABS, 0, None, None),  # seccomp_data.nr
    ]
    if refuse_x32:
        program.append((_JGE_K, 0x40000000, "kill", None))
    program += [(_JEQ_K, nr, "eperm", None) for nr in _IO_URING]
    program += [
        (_JEQ_K, socket_nr, None, "allow"),  # socket? else allow
        (_LD_W_ABS, 16, None, None),  # seccomp_data.args[0], low 32 bits (little endian)
        (_JEQ_K, _AF_UNIX, "eacces", "allow"),
        "allow",
        (_RET_K, _ALLOW, None, None),
        "eacces",
        (_RET_K, _ERRNO_EACCES, None, None),
        "eperm",
        (_RET_K, _ERRNO_EPERM, None, None),
        "kill",
        (_RET_K, _KILL_PROCESS, None, None),
    ]
    return _assemble(program)
