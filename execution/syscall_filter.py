"""The sandbox's system-call filter: what no command may do, even to files it may write.

Where Cadre runs as root, the work folder is shown to a session's user through an
idmapped mount (execution/sandbox_launch.py), so what commands write there is root's on
disk. A probe found what that allowed on the host:

- `chmod u+s` on a copy of `id` it made: a setuid-root program, which `nobody` on the
  host ran with euid 0 (the same with `open(..., O_CREAT, 0o4755)`);
- from a user namespace of its own (every capability inside, over the files its root
  owns), file capabilities (`cap_setuid+ep`) written onto a copy of Python, kept on disk
  for the host: `nobody` ran it and became root;
- `fallocate`: 8 GB of disk taken at once, far past the scratch space's limit before its
  next count (execution/scratch.py), so a loop of them fills the disk in a moment.

bubblewrap loads this filter (`--seccomp`) just before the session's first program, and
every process inside inherits it. It is classic BPF over `struct seccomp_data`, built
here for the machine's own architecture (no libseccomp needed). Refused:

- a set-user-ID or set-group-ID bit by chmod, fchmod, fchmodat, fchmodat2, or when a file
  is made (open, openat and creat with O_CREAT or O_TMPFILE, mknod, mknodat): EPERM;
- a new user namespace (unshare, clone with CLONE_NEWUSER): EPERM; clone3, whose flags
  are in memory the filter cannot read: ENOSYS, on which C libraries use clone instead;
- openat2, whose mode is in memory too: ENOSYS (callers fall back to openat); io_uring,
  whose operations (an open with a mode among them) pass no filter: ENOSYS;
- fallocate: EOPNOTSUPP, as on a file system without it (posix_fallocate then writes
  the bytes, as fast as the scratch space's count can follow);
- any system call of another architecture (a 32-bit program, x32): ENOSYS, since the
  numbers checked here are the machine's own.
"""

from __future__ import annotations

import errno
import os
import struct
from dataclasses import dataclass

# struct seccomp_data: nr (u32), arch (u32), instruction_pointer (u64), args[6] (u64). The
# machines below are little-endian: an argument's low 32 bits come first.
_NR, _ARCH, _ARGS = 0, 4, 16
# Classic BPF opcodes.
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE, _JSET = 0x15, 0x35, 0x45  # BPF_JMP | op | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF_0000
_ERRNO = 0x0005_0000

O_CREAT = 0o100
O_TMPFILE = 0o20000000  # the bit of O_TMPFILE that is not O_DIRECTORY
SETID = 0o6000  # S_ISUID | S_ISGID
CLONE_NEWUSER = 0x1000_0000
X32_BIT = 0x4000_0000


@dataclass(frozen=True)
class Machine:
    """One architecture's numbers: its audit arch and its system calls (None: it has none)."""

    arch: int
    calls: dict[str, int | None]
    #: System call numbers at or past this one are another ABI's (x86-64's x32).
    foreign_from: int | None = None


# The generic table (arm64, riscv64) has no open, creat, chmod or mknod: only the *at forms.
_GENERIC = {"open": None, "creat": None, "chmod": None, "mknod": None, "fchmod": 52,
            "fchmodat": 53, "openat": 56, "mknodat": 33, "fchmodat2": 452, "unshare": 97,
            "clone": 220, "clone3": 435, "openat2": 437, "io_uring_setup": 425,
            "fallocate": 47}  # fmt: skip
MACHINES = {
    "x86_64": Machine(
        0xC000_003E,
        {
            "open": 2,
            "creat": 85,
            "chmod": 90,
            "mknod": 133,
            "fchmod": 91,
            "fchmodat": 268,
            "openat": 257,
            "mknodat": 259,
            "fchmodat2": 452,
            "unshare": 272,
            "clone": 56,
            "clone3": 435,
            "openat2": 437,
            "io_uring_setup": 425,
            "fallocate": 285,
        },
        foreign_from=X32_BIT,
    ),  # fmt: skip
    "aarch64": Machine(0xC000_00B7, _GENERIC),
    "riscv64": Machine(0xC000_00F3, _GENERIC),
}

#: Calls refused when an argument has a bit: name -> (argument, bits).
WITH_BIT = {
    "chmod": (1, SETID), "fchmod": (1, SETID), "fchmodat": (2, SETID), "fchmodat2": (2, SETID),
    "creat": (1, SETID), "mknod": (1, SETID), "mknodat": (2, SETID),
    "unshare": (0, CLONE_NEWUSER), "clone": (0, CLONE_NEWUSER),
}  # fmt: skip
#: Calls that make a file (flags O_CREAT or O_TMPFILE), refused with a set-id mode:
#: name -> (flags argument, mode argument).
MAKING = {"open": (1, 2), "openat": (2, 3)}
#: Calls refused whatever their arguments, and the error they get.
REFUSED = {"clone3": errno.ENOSYS, "openat2": errno.ENOSYS, "io_uring_setup": errno.ENOSYS,
           "fallocate": errno.EOPNOTSUPP}  # fmt: skip


class _Program:
    """Instructions with named jump targets, resolved when assembled."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def load(self, offset: int) -> None:
        self.code.append((_LD_ABS, 0, 0, offset))

    def jump(self, op: int, value: int, yes: str | int = 0, no: str | int = 0) -> None:
        self.code.append((op, yes, no, value))

    def ret(self, value: int) -> None:
        self.code.append((_RET, 0, 0, value))

    def assemble(self) -> bytes:
        out = []
        for index, (op, yes, no, value) in enumerate(self.code):
            jt, jf = (self.labels[t] - index - 1 if isinstance(t, str) else t for t in (yes, no))
            assert 0 <= jt < 256 and 0 <= jf < 256, "jump out of reach"
            out.append(struct.pack("=HBBI", op, jt, jf, value))
        return b"".join(out)


def program(machine: str | None = None) -> bytes | None:
    """The filter for `machine` (this one's by default), as bubblewrap's `--seccomp` reads it;
    None where its numbers are not known here."""
    known = MACHINES.get(machine or os.uname().machine)
    if known is None:
        return None
    calls = {name: number for name, number in known.calls.items() if number is not None}
    p = _Program()
    p.load(_ARCH)
    p.jump(_JEQ, known.arch, no="enosys")
    p.load(_NR)
    if known.foreign_from is not None:
        p.jump(_JGE, known.foreign_from, yes="enosys")
    for name, number in calls.items():
        p.jump(_JEQ, number, yes=name)
    p.ret(_ALLOW)
    for name in calls:
        p.label(name)
        if name in REFUSED:
            p.ret(_ERRNO | REFUSED[name])
            continue
        if name in MAKING:
            flags, mode = MAKING[name]
            p.load(_ARGS + 8 * flags)
            p.jump(_JSET, O_CREAT | O_TMPFILE, no="allow")
            argument, bits = mode, SETID
        else:
            argument, bits = WITH_BIT[name]
        p.load(_ARGS + 8 * argument)
        p.jump(_JSET, bits, yes="eperm", no="allow")
    for name, value in (("allow", _ALLOW), ("eperm", _ERRNO | errno.EPERM),
                        ("enosys", _ERRNO | errno.ENOSYS)):  # fmt: skip
        p.label(name)
        p.ret(value)
    return p.assemble()
