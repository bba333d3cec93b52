"""The first process of a bubblewrap session, on the host side: it becomes bubblewrap.

Run as `python -I -S sandbox_launch.py <plan fd>` (execution/sandbox_bwrap.py
builds the plan), with the standard library only and nothing of Cadre's, so it
starts in a few milliseconds. It reads its plan (JSON) from the descriptor,
then:

1. Where Cadre runs as root: in a mount namespace of its own, it clones each
   folder bubblewrap is to show (the work folder, the chat's folder, the
   drivers, the scratch space) as an *idmapped* mount, in which root's files
   look like the session user's own, and sets the clones under an empty
   folder the session user can reach (`STAGE`, over `/tmp`, which the sandbox
   covers with its own). It then becomes that user, a uid of the session's own
   that owns nothing on this machine. So a command writes the work folder as it
   always could (what it makes is root's on disk), and still cannot read what
   root alone may: `/etc/shadow`, SSH host keys, other folders of root's.
   Where the kernel or the folders' file system cannot do this, it warns (Cadre
   logs it) and the session runs as root without capabilities. The work folder
   is mounted from a descriptor Cadre opened when it checked the folder (the
   clone made from it, or bubblewrap's `--bind-fd`), never looked up again by
   its path, where a link could have been swapped in meanwhile.
2. It sets the session's process limit (RLIMIT_NPROC, counted per uid, so per
   session where each has its own; for another user, on top of the processes
   that user has already).
3. It hands bubblewrap its options through a pipe (`--args`), not its command
   line (where only the program to run stays), and an environment without
   Cadre's marks, so the sandbox's first process shows neither in /proc; and
   the system-call filter through another (`--seccomp`,
   execution/syscall_filter.py), which keeps commands from making a file that
   gains rights on the host (set-user-ID, file capabilities).

What it could not do it writes to the standard error (the session's terminal,
read by Cadre while it waits for the session to be ready) and exits with
`FAILED`; with a warning it goes on and tells Cadre the same way, on one line
starting with `WARNING_PREFIX`.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import struct
import sys

#: Exit code of a launch that could not be made.
FAILED = 125
#: Where the clones are set, in the launcher's own mount namespace only.
STAGE = "/tmp"
#: A line the launcher writes before bubblewrap starts, read by Cadre as a warning.
WARNING_PREFIX = "cadre-sandbox-warning: "

# Linux's numbers (the same on every architecture for these new calls).
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_MOUNT_SETATTR = 442
OPEN_TREE_CLONE = 1
AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_IDMAP = 0x00100000
MNT_DETACH = 2
#: Highest uid a map may name (4294967295 is "no uid").
LAST_ID = 4294967294

_libc = ctypes.CDLL(None, use_errno=True)


class LaunchError(Exception):
    """What kept the launch from being made, in plain words."""


def _call(result: int, what: str) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise LaunchError(f"{what}: {os.strerror(code)}")
    return result


def swap_map(uid: int) -> str:
    """An id map that swaps 0 and `uid` and keeps every other id: through it, root's files
    belong to `uid`, `uid`'s (none) to root, and everyone else's stay theirs."""
    lines = [f"0 {uid} 1", f"{uid} 0 1"]
    if uid > 1:
        lines.append(f"1 1 {uid - 1}")
    if uid < LAST_ID:
        lines.append(f"{uid + 1} {uid + 1} {LAST_ID - uid}")
    return "\n".join(lines) + "\n"


def mapping_namespace(uid: int) -> int:
    """A descriptor of a user namespace whose maps swap root and `uid` (see `swap_map`):
    made by a child that holds it open while its maps are written, then ends."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    child = os.fork()
    if child == 0:  # the child: a namespace, then waits to be told it is no longer needed
        os.close(ready_r)
        os.close(done_w)
        code = 0 if _libc.unshare(CLONE_NEWUSER) == 0 else 1
        os.write(ready_w, b"%d" % code)
        os.read(done_r, 1)
        os._exit(0)
    os.close(ready_w)
    os.close(done_r)
    try:
        if os.read(ready_r, 1) != b"0":
            raise LaunchError("cannot make a user namespace for the session's user")
        text = swap_map(uid)
        for name, value in (("uid_map", text), ("setgroups", "deny"), ("gid_map", text)):
            with open(f"/proc/{child}/{name}", "w", encoding="ascii") as handle:
                handle.write(value)
        return os.open(f"/proc/{child}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise LaunchError(f"cannot map the session's user: {exc}") from None
    finally:
        os.close(ready_r)
        os.close(done_w)
        os.waitpid(child, 0)


def clone_tree(source: str, held: int | None = None) -> int:
    """A detached copy of the mount tree at `source` (of the folder `held` refers to, when
    given: never looked up again by its path)."""
    flags = OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE
    if held is None:
        where, path = AT_FDCWD, source.encode()
    else:
        where, path, flags = held, b"", flags | AT_EMPTY_PATH
    return _call(_libc.syscall(SYS_OPEN_TREE, where, path, flags), f"cannot copy {source}")


def idmap(tree: int, userns: int, source: str) -> None:
    """Show the detached copy `tree` (of `source`) through `userns`'s id map."""
    attr = ctypes.create_string_buffer(struct.pack("QQQQ", MOUNT_ATTR_IDMAP, 0, 0, userns), 32)
    _call(
        _libc.syscall(SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH | AT_RECURSIVE, attr, 32),
        f"the file system of {source} cannot be shown to another user (idmapped mount)",
    )


def stage(sources: list[str], uid: int, held: dict[str, int]) -> dict[str, str]:
    """Each source's idmapped clone set under `STAGE` (in this process's own mount
    namespace): source -> where bubblewrap finds its clone. A source `held` is cloned from
    its descriptor, and before this process has a mount namespace of its own: only a mount
    of the caller's namespace can be cloned, and the descriptor's is the one it had."""
    trees: list[tuple[str, int, bool]] = []
    try:
        early = [(s, clone_tree(s, held[s]), True) for s in sources if s in held]
        trees += early
        _call(_libc.unshare(CLONE_NEWNS), "cannot make a mount namespace")
        _call(
            _libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None),
            "cannot make mounts private",
        )
        # Whether each is a folder, asked now: under the stage, a source in /tmp is not seen.
        trees += [(s, clone_tree(s), os.path.isdir(s)) for s in sources if s not in held]
        userns = mapping_namespace(uid)
        try:
            for source, tree, _ in trees:
                idmap(tree, userns, source)
        finally:
            os.close(userns)
    except BaseException:
        for _, tree, _ in trees:
            os.close(tree)
        raise
    # Taken before the stage covers /tmp: a source under /tmp (a test's folders) is copied
    # already; what the sandbox shows at /tmp is its own, so the stage is never seen there.
    _call(
        _libc.mount(b"tmpfs", STAGE.encode(), b"tmpfs", 0, b"mode=0755,size=1m"),
        f"cannot mount the stage at {STAGE}",
    )
    staged = {}
    try:
        for number, (source, tree, folder) in enumerate(trees):
            target = f"{STAGE}/{number}"
            if folder:
                os.mkdir(target)
            else:
                os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
            _call(
                _libc.syscall(
                    SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH
                ),  # fmt: skip
                f"cannot set {source} for the sandbox",
            )
            staged[source] = target
    except (LaunchError, OSError) as exc:
        # Uncovered again, so that a session run without the stage finds /tmp as it was.
        _libc.umount2(STAGE.encode(), MNT_DETACH)
        raise LaunchError(str(exc)) from None
    finally:
        for _, tree, _ in trees:
            os.close(tree)
    return staged


def own_processes() -> int:
    """How many processes this user runs now (RLIMIT_NPROC counts them all)."""
    uid = str(os.getuid())
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        count += line.split()[1] == uid
                        break
        except OSError:
            continue
    return count


def limit_processes(limit: int, shared: bool) -> None:
    """At most `limit` processes for the session: where the uid is shared with other
    processes of this user (`shared`), on top of those it has now."""
    if limit <= 0:
        return
    total = limit + (own_processes() if shared else 0)
    resource.setrlimit(resource.RLIMIT_NPROC, (total, total))


def become(uid: int) -> None:
    """The session's own user and group, no other groups."""
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)


def argument_pipe(args: list[str]) -> int:
    """A pipe holding `args` NUL-separated, for bubblewrap's `--args` (read once: once read,
    the sandbox's first process holds nothing to read again)."""
    return data_pipe(b"".join(arg.encode("utf-8", "surrogateescape") + b"\0" for arg in args))


def data_pipe(data: bytes, inherited: bool = True) -> int:
    """A pipe holding all of `data` at once, its read end returned (`inherited` by the
    program this process becomes, bubblewrap, which reads it once; Cadre's plan for this
    launcher is passed to it by `pass_fds` instead)."""
    read_end, write_end = os.pipe()
    try:
        if len(data) > 65536:
            import fcntl

            fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, len(data))  # all of it fits at once
        os.write(write_end, data)
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    os.set_inheritable(read_end, inherited)
    return read_end


def sources_in(args: list[str], staged: dict[str, str], held: dict[str, int]) -> list[str]:
    """bubblewrap's arguments with each marked source (a leading NUL) replaced: by its
    staged clone; else, for a folder held by a descriptor, by that descriptor (`--bind-fd`,
    which bubblewrap closes once mounted); else by its path. The descriptors of folders
    cloned are closed here: none reaches the sandbox."""
    out: list[str] = []
    for arg in args:
        source = arg[1:]
        if not arg.startswith("\0"):
            out.append(arg)
        elif source in staged:
            out.append(staged[source])
        elif source in held:
            out[-1] += "-fd"  # --bind FD DEST -> --bind-fd FD DEST
            os.set_inheritable(held[source], True)
            out.append(str(held.pop(source)))
        else:
            out.append(source)
    for fd in held.values():
        os.close(fd)
    return out


def launch(plan: dict) -> None:  # type: ignore[type-arg]
    """Carry out `plan` and become bubblewrap (see the module docstring)."""
    uid = plan.get("uid")
    held: dict[str, int] = plan.get("held", {})
    staged: dict[str, str] = {}
    if uid is not None:
        try:
            staged = stage(plan["stage"], uid, held)
        except LaunchError as exc:  # nothing is covered yet: the session runs as root
            sys.stderr.write(
                f"{WARNING_PREFIX}commands run as root in the sandbox (without capabilities,"
                f" and with no process limit but the cgroup's): {exc}\n"
            )
            uid = None
    limit_processes(plan.get("nproc", 0), shared=uid is None)
    args = sources_in(plan["args"], staged, held)
    if uid is not None:
        become(uid)
    env = {k: v for k, v in os.environ.items() if k not in plan.get("unset", ())}
    # The options through the pipe; the command after them stays on the command line, where
    # bubblewrap wants it.
    split = args.index("--")
    options = args[:split]
    if plan.get("seccomp"):  # the system-call filter (execution/syscall_filter.py)
        options += ["--seccomp", str(data_pipe(bytes.fromhex(plan["seccomp"])))]
    fd = argument_pipe(options)
    os.execve(plan["bwrap"], [plan["bwrap"], "--args", str(fd), *args[split:]], env)


def main(argv: list[str]) -> int:
    try:
        with os.fdopen(int(argv[1]), "rb") as handle:
            plan = json.loads(handle.read())
        launch(plan)
    except (LaunchError, OSError, ValueError, KeyError, IndexError) as exc:
        sys.stderr.write(f"the sandbox could not be made: {exc}\n")
        return FAILED
    return FAILED  # launch only returns by raising


if __name__ == "__main__":
    sys.exit(main(sys.argv))
