"""The bubblewrap backend: a session's program in Linux namespaces, seeing only its room.

bubblewrap (Debian's `bwrap`) builds the program's view of the file system
from mounts, in order: the whole system read-only (the kernel's settings in
`/proc/sys` too), then empty private folders (tmpfs) over `/tmp`, `/var/tmp`
and the home folders (the session's and Cadre's user's; writable, gone when
the session ends), over `/home` and what the room hides (Cadre's folder, its
user data: read-only), then the work folder writable and the room's readable
folders read-only, each at its own path, so paths mean the same inside and
out. Mounts are laid from the shallowest path to the deepest, so a work folder
inside a hidden folder shows through, and a hidden folder inside the work
folder stays hidden.

Sockets are covered too: a read-only mount does not stop a connection to a
socket, and a daemon reached through one (docker, systemd, D-Bus, LXD) would
act outside the sandbox; so the per-user runtime folders (`/run/user`) are
hidden and every socket found under `/run` or bound on this machine (LXD's is
under `/var`) that the program would see is covered with `/dev/null`.
Abstract sockets are cut only with the network (`code_exec_network` off).

The program keeps no capability (`--cap-drop ALL`): where Cadre runs as root,
bubblewrap would otherwise leave it every one, and a command could unmount
what hides Cadre's files or remount the system writable.

The program gets its own process namespace and `/proc` (it sees only its own
processes; when bubblewrap's first process ends, the kernel ends every
process inside, so `reset` and stop leave nothing behind) and dies with
Cadre (`--die-with-parent`). The network is shared unless the room cuts it
(`--unshare-net`: only a loopback of its own). The session keeps the terminal
Cadre gave it, so job control, `/dev/tty` and questions work as outside (no
`--new-session`: that terminal is the session's own, so what a command types
into it with TIOCSTI reaches only the sandbox itself).
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import shutil
import stat
import subprocess
from pathlib import Path

from execution.sandbox import Room, SandboxUnavailable

#: Private, empty and writable in the sandbox (when they exist on the host), with the home.
PRIVATE = ("/tmp", "/var/tmp")
#: Empty and read-only in the sandbox: other users' homes; the per-user runtime folders
#: (session bus, keyring and ssh-agent sockets).
HIDDEN_SYSTEM = ("/home", "/run/user")
#: Where daemons' sockets are (docker, podman, systemd, D-Bus): each one found is covered,
#: since a read-only mount does not stop a connection to a socket, and a command talking
#: to such a daemon could act outside the sandbox. Folders this deep are searched.
SOCKET_ROOTS = ("/run",)
SOCKET_DEPTH = 4
#: The kernel's settings, read-only over the sandbox's own /proc. A command is uid 0 inside
#: where Cadre runs as root and, capabilities dropped or not, owns these files: through
#: kernel.core_pattern (`|/work/folder/x`) it would have the host run its program as root
#: outside the sandbox. bubblewrap leaves /proc/sys writable (it takes the folder's own
#: mode, read-only for everyone, for its files'). Bound from the host's /proc: the same
#: settings (network ones: of the host's network, still read-only).
KERNEL_SETTINGS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/fs", "/proc/irq", "/proc/bus")
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
        #: Cadre's user's homes (its HOME, the one the system names): always hidden, also
        #: when `code_exec_env` gives sessions another HOME. "/" (some service users') is
        #: never one: an empty tmpfs there would be the whole system.
        self.own_homes = tuple(h for h in {self.home, _passwd_home()} if h and h != Path("/"))

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
        # No capability inside: run as root (a container, CI), bubblewrap would keep them
        # all, and a command could unmount what hides Cadre's files or remount / writable.
        command = [self.program, "--die-with-parent", "--unshare-pid", "--unshare-ipc",
                   "--cap-drop", "ALL"]  # fmt: skip
        if not room.network:
            command.append("--unshare-net")
        command += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        command += [a for path in KERNEL_SETTINGS for a in ("--ro-bind-try", path, path)]
        mounts = self._mounts(room, Path(env.get("HOME") or self.home))
        for kind, path in mounts:
            text = str(path)
            if kind in HIDING:
                command += ["--tmpfs", text]
            elif kind == "socket":
                command += ["--ro-bind", "/dev/null", text]
            else:
                command += [f"--{kind}", text, text]
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
        return _cover(_real(path), self._mounts(room, self.home, sockets=False)) not in HIDING

    def _mounts(self, room: Room, home: Path, sockets: bool = True) -> list[tuple[str, Path]]:
        """(kind, path) from the shallowest path to the deepest; kinds: `private` (empty,
        writable), `hide` (empty, read-only), `ro-bind`, `bind`, `socket` (covered)."""
        private = [Path(p) for p in PRIVATE if os.path.isdir(p)] + [home, *self.own_homes]
        mounts = [("private", p) for p in dict.fromkeys(_real(p) for p in private if p.is_dir())]
        hidden = [*map(Path, HIDDEN_SYSTEM), *room.hidden]
        mounts += [("hide", _real(p)) for p in hidden if p.is_dir()]
        mounts += [("ro-bind", _real(p)) for p in room.readable if p.exists()]
        mounts.append(("bind", _real(room.work)))
        if sockets:  # a program is never a socket: `sees` need not look for them
            # Those the program would reach through the read-only system: a hidden or
            # private folder keeps the others out, and the work folder's are its own.
            shown = list(mounts)
            mounts += [("socket", p) for p in daemon_sockets() if _cover(p, shown) is None]
        # Stable: at one path the later kind (shown) wins over the earlier (hidden).
        return sorted(mounts, key=lambda m: len(m[1].parts))


def _cover(target: Path, mounts: list[tuple[str, Path]]) -> str | None:
    """The kind of the deepest of `mounts` that holds `target`; None: the read-only system."""
    cover, depth = None, -1
    for kind, mount in mounts:
        if (target == mount or mount in target.parents) and len(mount.parts) >= depth:
            cover, depth = kind, len(mount.parts)  # at one path the later kind wins
    return cover


def daemon_sockets() -> list[Path]:
    """The sockets under `SOCKET_ROOTS` (a few folders deep) and every named socket bound on
    this machine's network (daemons keep theirs elsewhere too: LXD's and Incus' root-granting
    ones are under /var), by their real paths."""
    found = bound_sockets()
    for root in SOCKET_ROOTS:
        for folder, dirs, files in os.walk(root):
            depth = len(Path(folder).relative_to(root).parts)
            if depth >= SOCKET_DEPTH:
                dirs.clear()
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in HIDDEN_SYSTEM]
            for name in files:
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError):
                    if stat.S_ISSOCK(os.lstat(path).st_mode):
                        found.append(_real(Path(path)))
    return list(dict.fromkeys(found))


def bound_sockets() -> list[Path]:
    """The named unix sockets bound in Cadre's network namespace (listed in /proc/net/unix,
    listening or not) that are sockets at those paths here."""
    try:
        lines = Path("/proc/net/unix").read_text(errors="replace").splitlines()[1:]
    except OSError:
        return []
    found: list[Path] = []
    for line in lines:
        fields = line.split(None, 7)  # the path, the eighth field, may hold spaces
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unnamed, or abstract (`@`: cut only with the network)
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.lstat(fields[7]).st_mode):
                found.append(_real(Path(fields[7])))
    return found


def _passwd_home() -> Path | None:
    """The home the system names for Cadre's user (None for a uid without a passwd entry)."""
    try:
        return _real(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except KeyError:
        return None


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


@functools.lru_cache(maxsize=8)
def probe(program: str) -> str:
    """What keeps `program` from making a sandbox here; empty when it can (checked once)."""
    argv = [program, "--die-with-parent", "--unshare-pid", "--cap-drop", "ALL",
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--", "true"]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.strip()[-500:] or f"exit code {done.returncode}"
    return ""
