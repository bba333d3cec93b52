"""The bubblewrap backend: a session's program in Linux namespaces, seeing only its room.

bubblewrap (Debian's `bwrap`) builds the program's view of the file system
from mounts, in order: the whole system read-only (the kernel's settings in
`/proc/sys` too), then the session's scratch space over `/tmp`, `/var/tmp`,
`/dev/shm` and its home (folders on disk, execution/scratch.py; empty folders
in memory when the room has none; the rest of `/dev` read-only), empty
read-only folders over `/home`, Cadre's user's other homes and what the room
hides (Cadre's folder, its user data), then the work folder writable and the
room's readable folders read-only, each at its own path, so paths mean the
same inside and out. Mounts are laid from the
shallowest path to the deepest, so a work folder inside a hidden folder shows
through, and a hidden folder inside the work folder stays hidden.

Sockets are covered too: a read-only mount does not stop a connection to a
socket, and a daemon reached through one (docker, systemd, D-Bus, LXD) would
act outside the sandbox; so `/run`, where daemons make theirs (also those
started after the session: a socket bound there later was reachable), is
hidden, but for its top-level links (NixOS keeps its system there), and every
other socket bound on this machine (LXD's is under `/var`) that the program
would see is covered with `/dev/null`.

The network is the session's own (`--unshare-net`): a loopback, and nothing of
this machine's, its loopback services and Cadre's own server included, nor
its abstract sockets. With the network on, the program is started through a
bridge (terminal_drivers/net_bridge.py) that listens on that loopback and
hands the listening socket to Cadre, whose checking proxy is then the only way
out (`HTTP_PROXY`...: execution/way_out.py).

The program keeps no capability (`--cap-drop ALL`), has its own process
namespace and `/proc` (it sees only its own processes; when bubblewrap's
first process ends, the kernel ends every process inside, so `reset` and stop
leave nothing behind) and dies with Cadre (`--die-with-parent`). It runs as a
user that owns nothing of this machine's: Cadre's own user inside a user
namespace where Cadre is not root, and where Cadre is root a uid of the
session's own, to which the work folder is shown through an idmapped mount
(execution/sandbox_launch.py, which starts bubblewrap); root-only files such as
`/etc/shadow` stay unreadable. Where this machine cannot do that, commands run
as root without capabilities, the kernel's settings read-only, and the page
says so. The session keeps the terminal Cadre gave it, so job control,
`/dev/tty` and questions work as outside (no `--new-session`: that terminal is
the session's own, so what a command types into it with TIOCSTI reaches only
the sandbox itself).
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from execution import syscall_filter
from execution.host_paths import daemon_sockets, held_folder, links
from execution.sandbox import (
    PROXY_ENV,
    PROXY_PORT,
    Confined,
    Room,
    SandboxUnavailable,
    find_program,
)
from execution.sandbox_launch import WARNING_PREFIX, data_pipe
from helpers.files import base_path

log = logging.getLogger(__name__)

#: The scratch space's folders, each over its path inside (the home's is added). /dev/shm
#: among them: bubblewrap's /dev, where it lies, is a folder in memory (read-only here).
SCRATCH = {"/tmp": "tmp", "/var/tmp": "var-tmp", "/dev/shm": "shm"}
SCRATCH_HOME = "home"
#: Empty and read-only in the sandbox: other users' homes; /run, where daemons keep their
#: sockets (docker, podman, systemd, D-Bus, a user's session bus, keyring and ssh-agent),
#: those bound after the session started too: a read-only mount does not stop a connection
#: to a socket, and a command talking to such a daemon could act outside the sandbox.
HIDDEN_SYSTEM = ("/home", "/run")
#: The hidden folder whose top-level links are made again inside: a system may keep its
#: programs behind one (NixOS: /run/current-system), and a link holds no socket itself.
RUN = Path("/run")
#: The kernel's settings, read-only over the sandbox's own /proc. Where the program runs as
#: uid 0 (Cadre as root on a machine that cannot give it a user of its own), it owns these
#: files, capabilities dropped or not: through kernel.core_pattern (`|/work/folder/x`) it
#: would have the host run its program as root outside the sandbox. bubblewrap leaves
#: /proc/sys writable (it takes the folder's own mode, read-only for everyone, for its
#: files'). Bound from the host's /proc: the same settings, still read-only.
KERNEL_SETTINGS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/fs", "/proc/irq", "/proc/bus")
#: Mount kinds that show an empty folder instead of the host's.
HIDING = ("private", "hide")
#: Mount kinds under which nothing of the host's path is seen (scratch: another folder).
UNSEEN = (*HIDING, "scratch")
#: Mount kinds whose source Cadre's launcher stages for an unprivileged user (root only).
STAGED = ("bind", "ro-bind", "scratch")
#: Seconds the check that bubblewrap works here may take.
PROBE_TIMEOUT = 10.0
#: Cadre's variables the session's program needs (the driver removes it at once): given
#: through bubblewrap's arguments, never its environment (its first process shows that).
KEPT_OWN = ("CADRE_READY_TOKEN",)
#: The launcher, and the bridge that makes the sandbox's listening socket.
LAUNCHER = base_path("execution", "sandbox_launch.py")
BRIDGE = base_path("execution", "terminal_drivers", "net_bridge.py")
#: Where Cadre runs as root, each session runs as a uid of its own from here on: owned by
#: nobody (no passwd entry, no file), and its own process count (RLIMIT_NPROC is per uid).
SESSION_UIDS = 0x7000_0000
#: The uid and gid commands have inside the sandbox then (a plain user's, not root's).
INSIDE_ID = 1000
_serial = itertools.count()

Mount = tuple[str, Path, Path]  # kind, path inside, path outside (the same but for scratch)


class Bubblewrap:
    """Runs a session's program through bubblewrap (see the module docstring)."""

    name = "bubblewrap"

    def __init__(self, program: str, own_user_failure: str = "") -> None:
        self.program = program
        root = os.geteuid() == 0
        #: Each session runs as a uid of its own: Cadre is root, and this machine allows it.
        self.own_user = root and not own_user_failure
        #: Why commands run as root inside ("" where they do not; see `probe_own_user`).
        self.as_root = own_user_failure if root else ""
        self.home = Path(os.path.expanduser("~")).resolve()
        #: Cadre's user's homes (its HOME, the one the system names): always hidden, also
        #: when `code_exec_env` gives sessions another HOME. "/" (some service users') is
        #: never one: an empty tmpfs there would be the whole system.
        self.own_homes = tuple(h for h in {self.home, _passwd_home()} if h and h != Path("/"))
        #: The last room `sees` was asked of, and its mounts.
        self._seen: tuple[tuple[Room, Path], list[Mount]] | None = None
        #: The system-call filter every session gets (execution/syscall_filter.py).
        self.syscall_filter = syscall_filter.program()
        if self.syscall_filter is None:
            log.warning(
                "no system-call filter for this machine (%s): sandboxed commands can make"
                " set-user-ID files in the work folder", os.uname().machine,
            )  # fmt: skip

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
        return cls(found, probe_own_user(found) if os.geteuid() == 0 else "")

    def wrap(self, argv: list[str], env: dict[str, str], room: Room) -> Confined:
        """Start the launcher, which becomes bubblewrap (execution/sandbox_launch.py)."""
        # Held before the arguments are made, which name it by the same path, not looked up
        # again: a link swapped into it since the check is refused here.
        work_fd = held_folder(room.work)
        try:
            python = _python_for_bridge(env, self, room) if room.network else None
            args, sources = self.arguments(argv, env, room, proxied=python is not None)
        except BaseException:
            os.close(work_fd)
            raise
        channel = child_end = None
        if python is not None:
            channel, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            bridge = [python, "-I", "-S", str(BRIDGE), str(child_end.fileno()), str(PROXY_PORT)]
            split = args.index("--") + 1  # the bridge runs first, then becomes the program
            args = [*args[:split], *bridge, "--", *args[split:]]
        uid = next_session_uid() if self.own_user else None
        plan = {
            "bwrap": self.program, "args": args, "stage": sources if uid is not None else [],
            "uid": uid, "nproc": room.limits.processes, "held": {str(room.work): work_fd},
            "unset": sorted(name for name in env if name.startswith("CADRE_")),
            "seccomp": (self.syscall_filter or b"").hex(),
        }  # fmt: skip
        plan_fd = data_pipe(json.dumps(plan).encode("utf-8", "surrogateescape"), inherited=False)
        fds = (plan_fd, work_fd, *([child_end.detach()] if child_end else []))
        launcher = [sys.executable, "-I", "-S", str(LAUNCHER), str(plan_fd)]
        return Confined(launcher, fds, channel)

    def arguments(
        self, argv: list[str], env: dict[str, str], room: Room, proxied: bool = False
    ) -> tuple[list[str], list[str]]:
        """bubblewrap's arguments, and the sources the launcher stages (marked in the
        arguments by a leading NUL where Cadre runs as root with a user of its own; the
        work folder's always: the launcher mounts it from a descriptor, `held_folder`)."""
        stage = self.own_user
        command = ["--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-net",
                   "--cap-drop", "ALL"]  # fmt: skip
        if stage:
            command += ["--unshare-user", "--uid", str(INSIDE_ID), "--gid", str(INSIDE_ID)]
        command += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        command += [a for path in KERNEL_SETTINGS for a in ("--ro-bind-try", path, path)]
        sources: list[str] = []
        mounts = self._mounts(room, Path(env.get("HOME") or self.home))
        for kind, path, source in mounts:
            text = str(path)
            if kind in STAGED and stage:
                sources.append(str(source))
            source_arg = ("\0" if kind == "bind" or kind in STAGED and stage else "") + str(source)
            if kind in HIDING:
                command += ["--tmpfs", text]
            elif kind == "socket":
                command += ["--ro-bind", "/dev/null", text]
            elif kind == "symlink":
                command += ["--symlink", str(source), text]
            elif kind == "scratch":
                command += ["--bind", source_arg, text]
            else:
                command += [f"--{kind}", source_arg, text]
        # Hidden folders stay empty: read-only once what shows through them is mounted
        # (a remount is of that one mount, not of those below it).
        last = {path: kind for kind, path, _ in mounts}
        command += [a for p, k in last.items() if k == "hide" for a in ("--remount-ro", str(p))]
        # bubblewrap's /dev is a tmpfs in memory, half of it, which a command could fill
        # uncounted (and a killed process cannot give back): read-only once what it holds
        # is mounted (devices stay writable; /dev/shm is scratch space on disk).
        command += ["--remount-ro", "/dev"]
        for name in KEPT_OWN:
            if name in env:
                command += ["--setenv", name, env[name]]
        if proxied:
            command += [a for name, value in PROXY_ENV.items() for a in ("--setenv", name, value)]
        return [*command, "--chdir", str(room.work), "--", *argv], sources

    def sees(self, path: Path, room: Room) -> bool:
        # The room's mounts, worked out once for all the paths asked of one room (a program
        # looked for along PATH asks of each folder: 27 here, each a score of realpath calls
        # on the agents' loop); a new session's room is another (its own scratch space).
        key = (room, self.home)
        if self._seen is None or self._seen[0] != key:
            self._seen = (key, self._mounts(room, self.home, sockets=False))
        return _cover(_real(path), self._seen[1]) not in UNSEEN

    def _mounts(self, room: Room, home: Path, sockets: bool = True) -> list[Mount]:
        """(kind, path, source) from the shallowest path to the deepest; kinds: `private`
        (empty, writable), `hide` (empty, read-only), `scratch` (a scratch folder, writable),
        `ro-bind`, `bind`, `socket` (covered), `symlink` (made again, to `source`)."""
        mounts: list[Mount] = []
        home = _real(home)
        if room.scratch is not None:
            places = {**SCRATCH, str(home): SCRATCH_HOME}
            for inside, folder in places.items():
                if os.path.isdir(inside) or inside == str(home):
                    mounts.append(("scratch", _real(Path(inside)), room.scratch / folder))
        else:
            private = [Path(p) for p in SCRATCH if os.path.isdir(p)] + [home]
            mounts += [("private", p, p) for p in dict.fromkeys(map(_real, private))]
        taken = {path for _, path, _ in mounts}
        hidden = [*map(Path, HIDDEN_SYSTEM), *self.own_homes, *room.hidden]
        mounts += [("hide", p, p) for p in map(_real, hidden) if p.is_dir() and p not in taken]
        if ("hide", RUN, RUN) in mounts:
            mounts += [("symlink", RUN / name, Path(target)) for name, target in links(RUN)]
        mounts += [("ro-bind", p, p) for p in map(_real, room.readable) if p.exists()]
        mounts.append(("bind", room.work, room.work))  # its real path, as checked
        if sockets:  # a program is never a socket: `sees` need not look for them
            # Those the program would reach through the read-only system: a hidden or
            # private folder keeps the others out, and the work folder's are its own.
            shown = [(kind, path) for kind, path, _ in mounts]
            mounts += [("socket", p, p) for p in daemon_sockets() if _cover(p, shown) is None]
        # Stable: at one path the later kind (shown) wins over the earlier (hidden).
        return sorted(mounts, key=lambda m: len(m[1].parts))


def next_session_uid() -> int:
    """A uid for a new session where Cadre is root: its own among this process's sessions,
    and (by the pid in it) very likely among another Cadre's on this machine."""
    return SESSION_UIDS + ((os.getpid() & 0xFFFF) << 12) + (next(_serial) & 0xFFF)


def _python_for_bridge(env: dict[str, str], sandbox: Bubblewrap, room: Room) -> str | None:
    """The python3 the sandbox shows, which runs the network bridge (None: there is none,
    and its commands have no network)."""
    return find_program("python3", env, sandbox, room)


def _cover(target: Path, mounts: list[tuple[str, Path]] | list[Mount]) -> str | None:
    """The kind of the deepest of `mounts` that holds `target`; None: the read-only system."""
    cover, depth = None, -1
    for kind, mount, *_ in mounts:
        if (target == mount or mount in target.parents) and len(mount.parts) >= depth:
            cover, depth = kind, len(mount.parts)  # at one path the later kind wins
    return cover


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
    """What keeps `program` from making a sandbox here; empty when it can (checked once).

    A whole session's start, as Cadre's own user (the launcher, bubblewrap, the system-call
    filter: a kernel without seccomp is found here, not at the first command)."""
    with tempfile.TemporaryDirectory(prefix="cadre-probe-") as folder:
        sandbox = Bubblewrap(program)
        sandbox.own_user = False  # the plain way; probe_own_user tries the other
        confined = sandbox.wrap(["true"], {}, Room(work=Path(folder), network=False))
        try:
            return _run_probe(confined.argv, confined.pass_fds)
        finally:
            confined.close()


@functools.lru_cache(maxsize=8)
def probe_own_user(program: str) -> str:
    """Where Cadre runs as root: what keeps a session from running as a user of its own, with
    a folder of root's shown to it as its own (empty when nothing does; checked once)."""
    with tempfile.TemporaryDirectory(prefix="cadre-probe-") as folder:
        os.chmod(folder, 0o700)  # as root's folders are: only the idmapped clone is reachable
        Path(folder, "file").write_text("root's\n")
        sandbox = Bubblewrap(program)
        sandbox.own_user = True  # what is probed
        room = Room(work=Path(folder), network=False)
        confined = sandbox.wrap(["sh", "-c", "echo more >> file"], {}, room)
        try:
            failure = _run_probe(confined.argv, confined.pass_fds, strict=True)
        finally:
            confined.close()
        if not failure and Path(folder, "file").read_text() != "root's\nmore\n":
            failure = "the work folder could not be written through its idmapped mount"
    return failure


def _run_probe(argv: list[str], pass_fds: tuple[int, ...] = (), strict: bool = False) -> str:
    """What went wrong running `argv` ("" when nothing did); `strict`: a warning of the
    launcher's counts as a failure too."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT,
                              pass_fds=pass_fds)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode != 0:
        return done.stderr.strip()[-500:] or f"exit code {done.returncode}"
    warned = [line for line in done.stderr.splitlines() if line.startswith(WARNING_PREFIX)]
    if strict and warned:
        return warned[0].removeprefix(WARNING_PREFIX)
    return ""
