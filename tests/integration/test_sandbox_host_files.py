"""What a sandboxed command leaves on the host's disk: never a program that gains rights there.

Where Cadre runs as root, the work folder is shown to a session's user through an idmapped
mount, so what commands write there is root's on disk. An attacker's probe made a copy of
`id` there setuid (`chmod u+s`) and `nobody` on the host ran it with euid 0; and from a user
namespace made inside, it wrote file capabilities (cap_setuid+ep) onto a copy of Python that
`nobody` then ran to become root. Real bubblewrap, real files, looked at from the host.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess

import pytest

from execution.sandbox import Room
from execution.sandbox_bwrap import Bubblewrap
from execution.terminal import SessionError
from helpers.files import BASE_DIR
from profiles.prompts import PromptLoader
from tests.integration.test_code_execution import body, code, run
from tests.integration.test_sandbox import BWRAP, SANDBOX, needs_bwrap

#: Each way a command could mark a file it made, reported as `<what> done` or `<what> <errno>`.
MARKING = """
import ctypes, os, shutil, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
shutil.copy(sys.executable, "prog")

def attempt(what, act):
    try:
        act()
        print(what, "done")
    except OSError as exc:
        print(what, exc.errno)

def fchmod():
    fd = os.open("prog", os.O_RDONLY)
    try:
        os.fchmod(fd, 0o4755)
    finally:
        os.close(fd)

attempt("chmod-setuid", lambda: os.chmod("prog", 0o4755))
attempt("chmod-setgid", lambda: os.chmod("prog", 0o2755))
attempt("fchmod-setuid", fchmod)
attempt("create-setuid", lambda: os.close(os.open("made", os.O_CREAT | os.O_WRONLY, 0o6755)))

def capabilities():
    # A user namespace of its own: every capability inside, over the files its root owns.
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(0x10000000) != 0:  # CLONE_NEWUSER
        raise OSError(ctypes.get_errno(), "unshare")
    for name, text in (("uid_map", f"0 {uid} 1"), ("setgroups", "deny"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as handle:
            handle.write(text)
    # VFS_CAP_REVISION_2, effective: cap_setuid and cap_setgid permitted.
    os.setxattr("prog", "security.capability", struct.pack("<5I", 0x02000001, 0xC0, 0, 0, 0))

pid = os.fork()
if pid == 0:
    attempt("capabilities", capabilities)
    sys.stdout.flush()
    os._exit(0)
_ = os.waitpid(pid, 0)
"""


def capabilities_of(path) -> bytes | None:
    try:
        return os.getxattr(path, "security.capability")
    except OSError as exc:
        assert exc.errno in (errno.ENODATA, errno.ENOTSUP)
        return None


@needs_bwrap
def test_no_file_a_command_makes_gains_rights_on_the_host(make_context, llm, usr_dir):
    _, seen = run(make_context, llm, code("python", MARKING), **SANDBOX)
    said = dict(line.split() for line in body(seen[0]).splitlines())
    made = sorted((usr_dir / "workdir").iterdir())
    assert [path.name for path in made] == ["prog"]  # `made` was refused, not made plain
    for path in made:
        mode = path.stat().st_mode
        assert not mode & (stat.S_ISUID | stat.S_ISGID), f"{path.name}: {stat.filemode(mode)}"
        assert capabilities_of(path) is None, path.name
    # Refused, not quietly ignored: the command hears it could not.
    eperm = str(errno.EPERM)
    assert said == {"chmod-setuid": eperm, "chmod-setgid": eperm, "fchmod-setuid": eperm,
                    "create-setuid": eperm, "capabilities": eperm}  # fmt: skip


ALLOCATE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/tmp/big", os.O_CREAT | os.O_WRONLY, 0o644)
# fallocate(2) itself: glibc's posix_fallocate would write the bytes where it is refused.
if libc.fallocate(fd, 0, ctypes.c_long(0), ctypes.c_long(256 << 20)) == 0:
    print("allocated", os.fstat(fd).st_blocks * 512 >> 20, "MB")
else:
    print("refused", ctypes.get_errno())
"""


@needs_bwrap
def test_a_command_cannot_take_disk_space_faster_than_it_is_counted(make_context, llm):
    """fallocate takes gigabytes in a moment (8 GB in a probe, with a 2 GB limit): all of
    the disk before the scratch space's next count. Refused as on a file system without
    it, so space is taken only as fast as it is written."""
    _, seen = run(make_context, llm, code("python", ALLOCATE), code_exec_scratch_mb=64, **SANDBOX)
    assert body(seen[0]).splitlines()[0] == f"refused {errno.EOPNOTSUPP}"


@needs_bwrap
def test_the_work_folder_mounted_is_the_one_checked(tmp_path):
    """The work folder is checked by its real path when a session starts, then mounted by
    bubblewrap (or cloned by the launcher) a moment later, by its path again: a command of
    another chat whose work folder holds this one swapped it for a link in between (won 2
    times in 150 starts in a probe), and the session got the link's target writable, as its
    own: /etc would do. What is mounted is the folder that was checked, by a descriptor."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (work / "mine").write_text("the session's\n")
    (outside / "OUTSIDE").write_text("not the session's\n")
    sandbox = Bubblewrap.create(BWRAP)
    confined = sandbox.wrap(["ls", str(work)], {"PATH": os.defpath}, Room(work, network=False))
    try:
        work.rename(tmp_path / "moved")  # between the check and the mount: a link instead
        work.symlink_to(outside)
        done = subprocess.run(confined.argv, pass_fds=confined.pass_fds, capture_output=True,
                              text=True, timeout=30)  # fmt: skip
    finally:
        confined.close()
    assert done.stdout.split() == ["mine"], done.stderr


@needs_bwrap
def test_a_work_folder_that_became_a_link_since_its_check_is_refused(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    outside.mkdir()
    work.symlink_to(outside)  # swapped after the check, before the sandbox is made
    with pytest.raises(SessionError) as caught:
        Bubblewrap(BWRAP).wrap(["ls"], {"PATH": os.defpath}, Room(work, network=False))
    # What the model reads: the error's prompt file, rendered (helpers/told.py).
    said = caught.value.told.render(PromptLoader([BASE_DIR / "prompts"]).render)
    assert "changed while the session started" in said


@needs_bwrap
def test_a_session_refused_at_its_work_folder_leaves_no_process_group(make_context, llm, tmp_path):
    """The session's cgroup is made before its sandbox; a work folder that cannot be held
    (here, a path below a file) refused the sandbox, and each attempt left an empty group in
    Cadre's own until Cadre stopped."""
    from execution.cgroup_tree import CgroupTree, own_cgroup

    probe_tree = CgroupTree.create("probe")
    if probe_tree is None:
        pytest.skip("cgroup v2 is not writable here")
    probe_tree.close()
    ours = f"cadre-{os.getpid()}-*"
    before = set(own_cgroup().glob(ours))
    (tmp_path / "file").write_text("not a folder\n")
    _, seen = run(
        make_context, llm, code("terminal", "echo one"), code("python", "print(2)"),
        work_dir=str(tmp_path / "file" / "work"), **SANDBOX,
    )  # fmt: skip
    assert all("cannot be opened" in said for said in seen), seen
    assert set(own_cgroup().glob(ours)) == before


@needs_bwrap
def test_a_hidden_folder_named_through_a_link_is_hidden_where_it_really_is(tmp_path):
    """usr/ may be named by a link (CADRE_USR_DIR set to one): what is hidden is the folder
    the link leads to. Here it lies in the work folder, which would show it otherwise."""
    work = tmp_path / "work"
    data = work / "data" / "usr"
    data.mkdir(parents=True)
    (data / "settings.json").write_text("SECRET settings\n")
    (work / "mine").write_text("the session's\n")
    link = tmp_path / "usr-link"
    link.symlink_to(data)
    room = Room(work, network=False, hidden=(link,))
    sandbox = Bubblewrap.create(BWRAP)
    assert not sandbox.sees(data / "settings.json", room)
    shell = f"cat '{data}/settings.json' '{link}/settings.json'; cat '{work}/mine'"
    confined = sandbox.wrap(["sh", "-c", shell], {"PATH": os.defpath}, room)
    try:
        done = subprocess.run(confined.argv, pass_fds=confined.pass_fds, capture_output=True,
                              text=True, timeout=30)  # fmt: skip
    finally:
        confined.close()
    assert done.stdout == "the session's\n", done.stderr
