"""The bubblewrap backend: a session's program in Linux namespaces, seeing only its room.

bubblewrap (Debian's `bwrap`) builds the program's view of the file system
from mounts, in order: the whole system read-only, then empty private folders
(tmpfs) over `/tmp`, `/var/tmp` and the home folder (writable, gone when the
session ends), over `/home` and what the room hides (Cadre's folder, its user
data: read-only), then the work folder writable and the room's readable
folders read-only, each at its own path, so paths mean the same inside and
out. Mounts are laid from the shallowest path to the deepest, so a work folder
inside a hidden folder shows through, and a hidden folder inside the work
folder stays hidden.

The program gets its own process namespace and `/proc` (it sees only its own
processes; when bubblewrap's first process ends, the kernel ends every
process inside, so `reset` and stop leave nothing behind) and dies with
Cadre (`--die-with-parent`). The network is shared unless the room cuts it
(`--unshare-net`: only a loopback of its own). The session keeps the terminal
Cadre gave it, so job control, `/dev/tty` and questions work as outside.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

from execution.sandbox import Room, SandboxUnavailable

#: Private, empty and writable in the sandbox (when they exist on the host), with the home.
PRIVATE = ("/tmp", "/var/tmp")
#: Where other users' homes are: empty and read-only in the sandbox.
HOMES = "/home"
#: Mount kinds that show an empty folder instead of the host's.
HIDING = ("private", "hide")
#: Seconds the check that bubblewrap works here may take.
PROBE_TIMEOUT = 10.0
#: Cadre's variables the session's program needs (the driver removes it at once).
KEPT_OWN = ("CADRE_READY_TOKEN",)


class Bubblewrap:
    """Runs a session's program through bubblewrap (see the module docstring)."""

    name = "bubblewrap"

    def __init__(self, program: str) -> None:
        self.program = program
        self.home = Path(os.path.expanduser("~")).resolve()

    @classmethod
    def create(cls, program: str) -> Bubblewrap:
        """The backend, once bubblewrap is found and works here; SandboxUnavailable if not."""
        found = shutil.which(program)
        if found is None:
            raise SandboxUnavailable(
                f"bubblewrap ({program!r}) is not installed here; install it "
                "(Debian/Ubuntu: apt-get install bubblewrap) or set code_exec_bwrap"
            )
        failure = probe(found)
        if failure:
            raise SandboxUnavailable(f"bubblewrap ({found}) does not work here: {failure}")
        return cls(found)

    def wrap(self, argv: list[str], env: dict[str, str], room: Room) -> list[str]:
        command = [self.program, "--die-with-parent", "--unshare-pid", "--unshare-ipc"]
        if not room.network:
            command.append("--unshare-net")
        command += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        mounts = self._mounts(room, Path(env.get("HOME") or self.home))
        for kind, path in mounts:
            text = str(path)
            command += ["--tmpfs", text] if kind in HIDING else [f"--{kind}", text, text]
        # Hidden folders stay empty: read-only once what shows through them is mounted
        # (a remount is of that one mount, not of those below it).
        last = {path: kind for kind, path in mounts}
        command += [a for p, k in last.items() if k == "hide" for a in ("--remount-ro", str(p))]
        # Cadre's own variables stay outside: the process tracker reads its mark from
        # bubblewrap itself, which everything inside descends from.
        for name in env:
            if name.startswith("CADRE_") and name not in KEPT_OWN:
                command += ["--unsetenv", name]
        return [*command, "--chdir", str(room.work), "--", *argv]

    def sees(self, path: Path, room: Room) -> bool:
        target = _real(path)
        cover = "bind"
        for kind, mount in self._mounts(room, self.home):
            if target == mount or mount in target.parents:
                cover = kind  # deeper mounts come later and win
        return cover not in HIDING

    def _mounts(self, room: Room, home: Path) -> list[tuple[str, Path]]:
        """(kind, path) from the shallowest path to the deepest; kinds: `private` (empty,
        writable), `hide` (empty, read-only), `ro-bind`, `bind`."""
        private = [Path(p) for p in PRIVATE if os.path.isdir(p)] + [home]
        mounts = [("private", _real(p)) for p in private if p.is_dir()]
        hidden = [Path(HOMES), *room.hidden]
        mounts += [("hide", _real(p)) for p in hidden if p.is_dir()]
        mounts += [("ro-bind", _real(p)) for p in room.readable if p.exists()]
        mounts.append(("bind", _real(room.work)))
        # Stable: at one path the later kind (shown) wins over the earlier (hidden).
        return sorted(mounts, key=lambda m: len(m[1].parts))


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@functools.lru_cache(maxsize=8)
def probe(program: str) -> str:
    """ "" when `program` can make a sandbox here, else what went wrong (checked once)."""
    argv = [program, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/",
            "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true"]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.strip()[-500:] or f"exit code {done.returncode}"
    return ""
