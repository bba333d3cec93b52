"""Code sessions in the bubblewrap sandbox, through the loop, on real processes (issue 24)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import pwd
import shlex
import shutil
import socket
import threading
import zipfile
from pathlib import Path

import pytest

from execution import run_files
from execution.sandbox_bwrap import probe
from helpers.errors import UserError
from helpers.files import base_path
from tests.integration.test_code_execution import body, code, run
from tests.support.agents import reply, wait_for

BWRAP = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(
    BWRAP is None or probe(BWRAP) != "",
    reason="bubblewrap is not installed or cannot make a sandbox here (cadre.py test installs it)",
)
SANDBOX = {"code_exec_sandbox": "bubblewrap"}


def tried(*paths: str | Path) -> str:
    """Shell lines that report, for each path, whether it could be read."""
    return "; ".join(
        f'cat "{p}" >/dev/null 2>&1 && echo "READ {p}" || echo "blocked {p}"' for p in paths
    )


def written(*paths: str | Path) -> str:
    return "; ".join(
        f'{{ echo x > "{p}"; }} 2>/dev/null && echo "WROTE {p}" || echo "blocked {p}"'
        for p in paths
    )


def host_processes(word: str) -> list[str]:
    """Command lines of the host's processes that mention `word`."""
    found = []
    for name in os.listdir("/proc"):
        try:
            line = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, ValueError):
            continue
        if word in line:
            found.append(line)
    return found


def connect_code(path: Path) -> str:
    """Python that says whether it could connect to the unix socket at `path`."""
    return (
        f"import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('{path}')\n"
        "    print('connected')\nexcept OSError as exc:\n    print('refused', type(exc).__name__)"
    )


@pytest.fixture
def planted():
    """Paths outside the room a command tries to write; removed should the sandbox fail."""
    token = os.urandom(4).hex()
    paths = [base_path(f"planted-{token}.txt"), Path(f"/etc/planted-{token}"),
             Path(f"/usr/local/planted-{token}"), Path(f"/tmp/private-{token}.txt")]  # fmt: skip
    yield paths
    for path in paths:
        path.unlink(missing_ok=True)


@needs_bwrap
def test_what_is_not_the_agents_cannot_be_read_or_written(make_context, llm, usr_dir, tmp_path,
                                                          monkeypatch, planted):  # fmt: skip
    cadre, etc, local, private = planted
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    monkeypatch.setenv("HOME", str(home))
    (usr_dir / "settings.json").write_text('{"chat_api_key": "sk-in-settings"}')
    (usr_dir / "secret_key").write_text("flask-secret")
    other = usr_dir / "chats" / "other-chat"
    other.mkdir(parents=True)
    (other / "chat.json").write_text("{}")
    context, seen = run(
        make_context, llm,
        code("terminal", tried(usr_dir / "settings.json", usr_dir / "secret_key",
                               other / "chat.json", home / ".ssh" / "id_rsa",
                               base_path("run_ui.py"), "/etc/os-release")),
        code("terminal", written(usr_dir / "settings.json", usr_dir / "new.txt",
                                 cadre, etc, local, "mine.txt", private)),
        code("terminal", f"ls -A ~ | wc -l; cat {private}; ps -e --no-headers | wc -l"),
        **SANDBOX,
    )  # fmt: skip
    reads, writes, inside = map(body, seen)
    assert reads.splitlines() == [
        f"blocked {usr_dir / 'settings.json'}", f"blocked {usr_dir / 'secret_key'}",
        f"blocked {other / 'chat.json'}", f"blocked {home / '.ssh' / 'id_rsa'}",
        f"blocked {base_path('run_ui.py')}", "READ /etc/os-release",  # the system: read-only
    ]  # fmt: skip
    assert writes.splitlines() == [
        f"blocked {usr_dir / 'settings.json'}", f"blocked {usr_dir / 'new.txt'}",
        f"blocked {cadre}", f"blocked {etc}", f"blocked {local}",
        "WROTE mine.txt", f"WROTE {private}",
    ]  # fmt: skip
    # Nothing reached the host but the work folder; /tmp and the home were private.
    assert (usr_dir / "settings.json").read_text() == '{"chat_api_key": "sk-in-settings"}'
    assert not (usr_dir / "new.txt").exists()
    assert [path for path in planted if path.exists()] == []
    assert (usr_dir / "workdir" / "mine.txt").read_text() == "x\n"
    # An empty home; /tmp kept between commands; its own processes only (bwrap, bash, ps, wc).
    empty, kept, processes = inside.splitlines()
    assert (empty, kept) == ("0", "x") and int(processes) <= 5


@needs_bwrap
def test_a_command_run_as_root_cannot_undo_the_sandbox(make_context, llm, usr_dir, planted):
    """Cadre may run as root (in a container, in CI): the sandbox keeps no capability."""
    (usr_dir / "secret_key").write_text("flask-secret")
    etc = planted[1]
    undo = (f"umount -l '{usr_dir}' 2>/dev/null; umount -l '{base_path()}' 2>/dev/null; "
            "mount -o remount,rw / 2>/dev/null; mount -t proc proc /mnt 2>/dev/null; ")  # fmt: skip
    _, seen = run(
        make_context, llm,
        code("terminal", undo + tried(usr_dir / "secret_key") + "; " + written(etc)
             + "; grep CapEff /proc/self/status"),
        **SANDBOX,
    )  # fmt: skip
    assert body(seen[0]).splitlines() == [
        f"blocked {usr_dir / 'secret_key'}", f"blocked {etc}", "CapEff:\t0000000000000000",
    ]  # fmt: skip
    assert not etc.exists()


@needs_bwrap
def test_no_key_and_no_cadre_variable_inside_and_secrets_still_expand(make_context, llm, usr_dir,
                                                                       monkeypatch):  # fmt: skip
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-leak")
    monkeypatch.setenv("CADRE_API_KEY", "cadre-key-leak")
    _, seen = run(
        make_context, llm,
        code("terminal", "env"),
        code("python", "import os\nsorted(k for k in os.environ if 'KEY' in k or 'CADRE' in k)"),
        code("terminal", 'test "§§secret(DEPLOY_TOKEN)" = "tok-123" && echo expanded inside; '
                         'dirname "$BASH_SOURCE"'),
        secrets={"DEPLOY_TOKEN": "tok-123"},
        code_exec_env={"CADRE_X": "own", "PROJECT_TOKEN": "granted"},
        **SANDBOX,
    )  # fmt: skip
    shell, python, secret = map(body, seen)
    names = [line.split("=", 1)[0] for line in shell.splitlines() if "=" in line]
    assert "PROJECT_TOKEN" in names  # the setting's additions arrive
    assert [n for n in names if n.startswith("CADRE_") or "API_KEY" in n] == []
    assert "leak" not in shell
    assert python == "[]"
    expanded, run_folder = secret.splitlines()
    assert expanded == "expanded inside"
    # The code with the secret's value was run from memory, and nothing on disk holds it.
    memory = run_files.memory_root()
    assert memory is None or run_folder.startswith(f"{memory}/{run_files.PREFIX}")
    assert memory is None or list(Path(run_folder).iterdir()) == []  # gone after its run
    assert [p for p in usr_dir.rglob("*") if p.is_file() and b"tok-123" in p.read_bytes()] == []


@needs_bwrap
def test_the_work_folder_is_shared_with_text_editor_and_the_next_command(make_context, llm,
                                                                         usr_dir):  # fmt: skip
    _, seen = run(
        make_context, llm,
        code("terminal", "mkdir -p out && echo made in the sandbox > out/note.txt"),
        reply("text_editor:read", path="out/note.txt"),
        reply("text_editor:write", path="out/back.txt", content="written by text_editor\n"),
        code("python", "print(open('out/back.txt').read().strip())", session=1),
        code("nodejs", "console.log(require('fs').readFileSync('out/note.txt', 'utf8').trim())",
             session=2),
        **SANDBOX,
    )  # fmt: skip
    assert "made in the sandbox" in seen[1]
    assert body(seen[3]) == "written by text_editor"
    if shutil.which("node"):
        assert body(seen[4]) == "made in the sandbox"


def hand_built_wheel(folder: Path) -> Path:
    """A one-module wheel, zipped here: pip installs it offline with no build step, so the
    test needs no setuptools (a fresh venv of Python 3.12 and later has none)."""
    files = {
        "greeting/__init__.py": "def hello():\n    return 'hello from the venv'\n",
        "greeting-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: greeting\nVersion: 0.1\n",
        "greeting-0.1.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    files["greeting-0.1.dist-info/RECORD"] = "\n".join([*record, "greeting-0.1.dist-info/RECORD,,"])
    wheel = folder / "greeting-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


@needs_bwrap
def test_a_venv_pip_git_and_node_work_in_the_sandbox(make_context, llm, usr_dir):
    """The work the sandbox must not get in the way of: a venv in the work folder with a
    package pip installs into it (offline: a wheel in the work folder), a git repository
    with a commit (no git config in the empty home: the name given on the command), and
    node where it is installed."""
    work = usr_dir / "workdir"
    work.mkdir(parents=True, exist_ok=True)
    wheel = hand_built_wheel(work)
    steps = [
        code("terminal", f"python3 -m venv .venv && .venv/bin/pip install -q --no-index "
                         f"--disable-pip-version-check {wheel.name} && .venv/bin/python -c "
                         "'import greeting; print(greeting.hello()); print(greeting.__file__)'"),
        code("terminal", "(git -c init.defaultBranch=main init -q repo && cd repo && echo one > "
                         "a.txt && git add a.txt && git -c user.name=Agent -c "
                         "user.email=agent@example.com commit -q -m 'first commit' && "
                         "git log --format='%an <%ae>: %s')"),
    ]  # fmt: skip
    node = shutil.which("node")
    if node:
        steps.append(code("terminal", "node -e 'console.log([1, 2, 3].map(n => n * 2).join())'"))
    slow = {"code_exec_first_output_timeout": 40.0, "code_exec_max_timeout": 40.0}
    _, seen = run(make_context, llm, *steps, **slow, **SANDBOX)
    hello, installed_at = body(seen[0]).splitlines()
    assert hello == "hello from the venv"
    assert installed_at.startswith(f"{work / '.venv' / 'lib'}/")  # into the venv, not elsewhere
    assert body(seen[1]) == "Agent <agent@example.com>: first commit"
    assert (work / "repo" / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    if node:
        assert body(seen[2]) == "2,4,6"


@needs_bwrap
def test_reset_ends_every_process_of_the_sandbox(make_context, llm, usr_dir):
    _, seen = run(
        make_context, llm,
        code("terminal", "sleep 3141 & (setsid sleep 3142 &); nohup sleep 3143 >/dev/null 2>&1 &"
                         " sleep 0.2; ps -e -o args | grep -c '^sleep 314'"),
        code("reset"),
        **SANDBOX,
    )  # fmt: skip
    assert body(seen[0]) == "3"
    assert "was reset" in seen[1]
    assert host_processes("sleep 314") == []
    # bubblewrap itself is gone too (this test's: the one bound to its work folder).
    assert [p for p in host_processes(str(usr_dir / "workdir")) if "bwrap" in p] == []


def test_without_bubblewrap_auto_runs_unconfined_and_bubblewrap_refuses(make_context, llm,
                                                                         usr_dir):  # fmt: skip
    missing = {"code_exec_bwrap": "/nonexistent/cadre-test/bwrap"}
    (usr_dir / "secret_key").write_text("flask-secret")
    _, auto = run(make_context, llm, code("terminal", tried(usr_dir / "secret_key")), **missing)
    _, named = run(make_context, llm, code("terminal", "echo never"),
                   code_exec_sandbox="bubblewrap", **missing)  # fmt: skip
    assert body(auto[-1]) == f"READ {usr_dir / 'secret_key'}"  # the fallback: as before
    assert "commands cannot run in sandbox 'bubblewrap'" in named[-1]
    assert "/nonexistent/cadre-test/bwrap" in named[-1] and "never" not in named[-1]


@needs_bwrap
def test_a_daemon_socket_in_run_cannot_be_reached(make_context, llm):
    """A read-only mount does not stop connect(): /run's sockets (docker, D-Bus) are covered."""
    path = Path(f"/run/cadre-test-{os.urandom(4).hex()}.sock")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
    except OSError as exc:
        pytest.skip(f"cannot make a socket in /run here: {exc}")
    server.listen(1)
    connect = connect_code(path)
    try:
        _, seen = run(make_context, llm, code("python", connect), **SANDBOX)
        _, outside = run(make_context, llm, code("python", connect), code_exec_sandbox="none")
    finally:
        server.close()
        path.unlink()
    assert body(seen[0]).startswith("refused")
    assert body(outside[-1]) == "connected"


@needs_bwrap
def test_a_daemon_socket_made_after_the_session_started_cannot_be_reached(
    make_context, llm, usr_dir
):
    """The sockets under /run were covered as found when the session started: one bound
    there later (docker or podman started after Cadre) was reachable. /run is hidden."""
    path = Path(f"/run/cadre-test-late-{os.urandom(4).hex()}.sock")
    ready = usr_dir / "workdir" / "started"
    server = socket.socket(socket.AF_UNIX)

    def bind_once_started() -> None:
        wait_for(ready.exists, timeout=60, what="the session to start")
        server.bind(str(path))
        path.chmod(0o666)  # anyone may connect, as to D-Bus's system bus
        server.listen(1)

    binder = threading.Thread(target=bind_once_started)
    binder.start()
    wait = f"touch {ready}; for i in $(seq 30); do [ -S {path} ] && break; sleep 0.1; done"
    connect = f"python3 -c {shlex.quote(connect_code(path))}"  # in the same session
    try:
        _, seen = run(make_context, llm, code("terminal", f"{wait}; {connect}"), **SANDBOX)
    finally:
        binder.join()
        server.close()
        path.unlink(missing_ok=True)
    assert body(seen[0]).startswith("refused")


@needs_bwrap
def test_the_kernels_settings_cannot_be_changed_from_inside(make_context, llm):
    """Where Cadre runs as root, a command is uid 0 inside (with no capability), the owner
    of /proc/sys: writing kernel.core_pattern there (`|/work/folder/x`) makes the host run a
    program of its choosing as root outside the sandbox at the next crash. bubblewrap leaves
    /proc/sys writable, so the sandbox covers it. Each setting gets its own value back."""
    knobs = ("/proc/sys/kernel/core_pattern", "/proc/sys/kernel/hostname",
             "/proc/sys/vm/overcommit_memory")  # fmt: skip
    rewrite = "; ".join(
        f'v=$(cat {k}); {{ printf "%s\\n" "$v" > {k}; }} 2>/dev/null && echo "WROTE {k}"'
        f' || echo "blocked {k}"'
        for k in knobs
    )
    _, seen = run(make_context, llm, code("terminal", rewrite), **SANDBOX)
    assert body(seen[0]).splitlines() == [f"blocked {k}" for k in knobs]


@needs_bwrap
def test_the_users_home_stays_hidden_when_the_sessions_home_is_elsewhere(make_context, llm,
                                                                         usr_dir):  # fmt: skip
    """`code_exec_env` may give sessions another HOME (the work folder, to keep pip's
    --user installs): Cadre's user's own home (its HOME, and the one the system names for
    it), with its SSH keys, stays hidden all the same: empty inside."""
    homes = sorted({Path(os.path.expanduser("~")), Path(pwd.getpwuid(os.getuid()).pw_dir)})
    homes = [h for h in homes if h.is_dir() and h != Path("/")]
    _, seen = run(
        make_context, llm,
        code("terminal", "; ".join(f'echo "$(ls -A {h} | wc -l) {h}"' for h in homes)),
        code_exec_env={"HOME": str(usr_dir / "workdir")},
        **SANDBOX,
    )  # fmt: skip
    assert body(seen[0]).splitlines() == [f"0 {h}" for h in homes]


@needs_bwrap
def test_a_daemon_socket_outside_run_cannot_be_reached(make_context, llm):
    """Daemons keep sockets outside /run too (LXD: /var/snap/lxd/common/lxd/unix.socket,
    Incus: /var/lib/incus/unix.socket; root-equivalent to whoever connects): every socket
    listening on this machine that the sandbox would see is covered, wherever it is."""
    folder = Path(f"/var/lib/cadre-test-{os.urandom(4).hex()}")
    path = folder / "unix.socket"
    server = socket.socket(socket.AF_UNIX)
    try:
        folder.mkdir()
        server.bind(str(path))
    except OSError as exc:
        server.close()
        pytest.skip(f"cannot make a socket in /var/lib here: {exc}")
    server.listen(1)
    connect = connect_code(path)
    try:
        _, seen = run(make_context, llm, code("python", connect), **SANDBOX)
    finally:
        server.close()
        shutil.rmtree(folder)
    assert body(seen[0]).startswith("refused")


@needs_bwrap
def test_a_project_work_folder_never_holds_the_projects_own_files(make_context, llm, usr_dir):
    """A project's folder holds its settings and secrets: were it the work folder, a command
    could read the secrets, and give the project a new work folder (the user's home, say)
    that the next session would get writable. Only the project's work folders are taken."""
    from profiles.project_store import create_project

    folder = usr_dir / "projects" / "alpha"
    create_project("alpha", {}, {"TOKEN": "project-secret"})
    with pytest.raises(UserError, match="project's own settings"):
        create_project("beta", {"work_dir": str(folder)})
    inside = folder / "work" / "src"
    inside.mkdir(parents=True)
    create_project("gamma", {"work_dir": str(inside)})  # a folder in a project's work: fine
    _, seen = run(make_context, llm, code("terminal", tried(folder / "secrets.json")),
                  work_dir=str(inside), **SANDBOX)  # fmt: skip
    assert body(seen[0]) == f"blocked {folder / 'secrets.json'}"


@needs_bwrap
@pytest.mark.parametrize("where", ["usr", "usr/chats", "cadre"])
def test_a_work_folder_that_would_show_what_is_hidden_is_refused(make_context, llm, usr_dir,
                                                                 where):  # fmt: skip
    """The `work_dir` setting is free text: set to usr/ (or a folder in it, or Cadre's
    folder), the sandbox would show it writable, settings.json included."""
    (usr_dir / "settings.json").write_text("{}")
    (usr_dir / "chats").mkdir(exist_ok=True)
    folder = base_path() if where == "cadre" else usr_dir / where.removeprefix("usr").strip("/")
    # Refused wherever agents use it (helpers/folders.py `work_dir`): the run ends with
    # the reason in the chat, and no command ran.
    with pytest.raises(UserError, match="work_dir") as refused:
        run(make_context, llm, code("terminal", written(usr_dir / "settings.json")),
            work_dir=str(folder), **SANDBOX)  # fmt: skip
    assert "usr/" in str(refused.value) or "Cadre's own folder" in str(refused.value)
    assert (usr_dir / "settings.json").read_text() == "{}"


@needs_bwrap
def test_a_members_commands_see_no_other_persons_work_folder(llm, runtime, usr_dir):
    """Each person's sessions write only their own work folder; another member's (in their
    space, under the hidden usr/) and the server's own (the first admin's `work_dir`, which
    may lie anywhere) cannot be listed or read."""
    from accounts.users import Users
    from core.chat import Chat
    from initialize import agent_config

    users = Users()
    users.add("root", "admin", "the admin's password")
    users.add("ann", "member", "ann's password")
    users.add("bea", "member", "bea's password")
    # Not under /tmp or a home (a session has its own of both): where a server keeps work.
    servers = Path("/opt") / f"cadre-test-work-{os.getpid()}-{id(users)}"
    servers.mkdir(parents=True)
    (servers / "plan.txt").write_text("the admin's plan")
    (usr_dir / "settings.json").write_text(json.dumps({"work_dir": str(servers)}))
    beas = usr_dir / "users" / "bea" / "workdir"
    beas.mkdir(parents=True)
    (beas / "diary.txt").write_text("bea's diary")
    made: list[Chat] = []

    def anns_chat(**overrides: object) -> Chat:
        made.append(Chat(agent_config(overrides or None, None, "ann"), runtime, owner="ann"))
        return made[-1]

    listing = f'ls "{beas}" 2>/dev/null | wc -l; ls "{servers}" 2>/dev/null | wc -l; '
    try:
        _, seen = run(
            anns_chat, llm,
            code("terminal", listing + tried(beas / "diary.txt", servers / "plan.txt")),
            code("terminal", written("mine.txt", beas / "note.txt", servers / "note.txt")),
            **SANDBOX,
        )  # fmt: skip
    finally:
        for chat in made:
            runtime.call(chat.code_sessions.close_all)
        shutil.rmtree(servers)
    listed, writes = map(body, seen)
    assert listed.splitlines() == [
        "0", "0", f"blocked {beas / 'diary.txt'}", f"blocked {servers / 'plan.txt'}",
    ]  # fmt: skip
    assert writes.splitlines() == [
        "WROTE mine.txt", f"blocked {beas / 'note.txt'}", f"blocked {servers / 'note.txt'}",
    ]  # fmt: skip
    assert (usr_dir / "users" / "ann" / "workdir" / "mine.txt").read_text() == "x\n"
    assert not (beas / "note.txt").exists() and not (servers / "note.txt").exists()


@needs_bwrap
def test_a_daemon_socket_gone_with_its_folder_before_the_start_is_listed_again(
    make_context, llm, monkeypatch
):
    """A socket listed to be covered may go away, its folder with it, before bubblewrap
    mounts over it: bubblewrap cannot make the mount point's folders in the read-only
    system, and the session failed to start ("Can't mkdir parents", seen in a full run
    while another test's socket in /var/lib came and went). The start lists them again."""
    from execution import sandbox_bwrap

    gone = Path(f"/var/lib/cadre-gone-{os.urandom(4).hex()}/unix.socket")
    # Twice: the sandbox's first probe of this process may list them too.
    listings = iter([[gone], [gone]])
    monkeypatch.setattr(sandbox_bwrap, "daemon_sockets", lambda: next(listings, []))
    _, seen = run(make_context, llm, code("terminal", "echo started"), **SANDBOX)
    assert body(seen[0]) == "started"
