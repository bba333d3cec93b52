"""Which sandbox the settings lead to, the fallback of `auto`, and the bubblewrap mounts."""

from __future__ import annotations

import logging
from pathlib import Path

from execution import sandbox_choice
from execution.sandbox import NoSandbox, Room, find_program
from execution.sandbox_bwrap import Bubblewrap
from helpers.settings import Settings

MISSING = "/nonexistent/cadre-test/bwrap"


def test_auto_without_bubblewrap_falls_back_to_none_with_a_warning(caplog):
    settings = Settings(code_exec_sandbox="auto", code_exec_bwrap=MISSING)
    with caplog.at_level(logging.WARNING):
        choice = sandbox_choice.warn_at_start(settings)
    assert choice.sandbox.name == "none" and not choice.confined and not choice.broken
    assert MISSING in choice.fallback and "apt-get install bubblewrap" in choice.fallback
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "WITHOUT a sandbox" in warned[0].getMessage()
    assert sandbox_choice.status(settings) == {
        "setting": "auto", "backend": "none", "confined": False, "fallback": choice.fallback,
        "broken": "", "network": True, "as_root": "",
    }  # fmt: skip


def test_a_bubblewrap_that_cannot_make_a_sandbox_is_a_fallback_too(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    choice = sandbox_choice.choose(Settings(code_exec_bwrap=str(fake)))
    assert choice.sandbox.name == "none"
    assert "does not work here: No permissions to create new namespace" in choice.fallback


def test_bubblewrap_named_but_missing_is_broken_never_unconfined(caplog):
    settings = Settings(code_exec_sandbox="bubblewrap", code_exec_bwrap=MISSING)
    with caplog.at_level(logging.WARNING):
        choice = sandbox_choice.warn_at_start(settings)
    assert choice.broken and not choice.fallback and not choice.confined
    assert "will not start" in caplog.text
    none = sandbox_choice.choose(Settings(code_exec_sandbox="none", code_exec_bwrap=MISSING))
    assert (none.sandbox.name, none.fallback, none.broken) == ("none", "", "")


def mounts(argv: list[str], under: Path) -> list[tuple[str, str]]:
    """(option, path) of the mount options for paths in `under` (and the variables set)."""
    found, i = [], argv.index("/proc") + 1
    while argv[i] != "--chdir":
        option = argv[i]
        if option in ("--bind", "--ro-bind", "--setenv"):
            found.append((option, argv[i + 1].removeprefix("\0")))  # NUL: the launcher's mark
            i += 3
        elif option in ("--tmpfs", "--remount-ro"):
            found.append((option, argv[i + 1]))
            i += 2
        else:
            i += 1
    return [(o, p) for o, p in found if o == "--setenv" or p.startswith(str(under))]


def plain(program: str = "/usr/bin/bwrap") -> Bubblewrap:
    """The backend as it builds its arguments where Cadre is not root (no staging)."""
    sandbox = Bubblewrap(program)
    sandbox.own_user = False
    return sandbox


def test_mounts_go_from_shallow_to_deep_and_hidden_folders_stay_read_only(tmp_path):
    cadre, home = tmp_path / "cadre", tmp_path / "home"
    work, chat, secret = cadre / "usr" / "workdir", cadre / "usr" / "chats" / "c1", tmp_path / "w2"
    for folder in (work, chat, home, secret / "usr"):
        folder.mkdir(parents=True)
    sandbox = plain()
    room = Room(work=work, readable=(chat,), hidden=(cadre,), network=False)
    env = {"HOME": str(home), "CADRE_SESSION": "x", "CADRE_READY_TOKEN": "t", "PATH": "/bin"}
    argv, staged = sandbox.arguments(["bash"], env, room)
    assert "--unshare-net" in argv and argv[-2:] == ["--", "bash"] and staged == []
    # Cadre's mark never reaches bubblewrap's arguments; the driver's token does, as a
    # variable for the program alone (the launcher keeps both out of its environment).
    assert mounts(argv, tmp_path) == [
        ("--tmpfs", str(home)), ("--tmpfs", str(cadre)), ("--bind", str(work)),
        ("--ro-bind", str(chat)), ("--remount-ro", str(cadre)), ("--setenv", "CADRE_READY_TOKEN"),
    ]  # fmt: skip
    assert sandbox.sees(work / "x", room) and sandbox.sees(chat, room)
    assert not sandbox.sees(cadre / "usr" / "settings.json", room)
    assert sandbox.sees(Path("/usr/bin"), room)
    # A work folder holding Cadre's user data: that stays hidden inside it.
    inner = Room(work=secret, hidden=(secret / "usr",))
    assert mounts(sandbox.arguments(["bash"], {"HOME": str(home)}, inner)[0], tmp_path) == [
        ("--tmpfs", str(home)),
        ("--bind", str(secret)), ("--tmpfs", str(secret / "usr")),
        ("--remount-ro", str(secret / "usr")),
    ]  # fmt: skip
    assert not sandbox.sees(secret / "usr" / "secret_key", inner)


def test_a_program_is_looked_for_where_the_sandbox_shows_it(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    for folder in (home / "bin", work / "bin"):
        folder.mkdir(parents=True)
        (folder / "tool").write_text("#!/bin/sh\n")
        (folder / "tool").chmod(0o755)
    sandbox, room = plain(), Room(work=work)
    sandbox.home = home  # the home is private in the sandbox: its programs are not there
    env = {"PATH": f"{home / 'bin'}:{work / 'bin'}:/usr/bin"}
    assert find_program("tool", env, sandbox, room) == str(work / "bin" / "tool")
    assert find_program(str(home / "bin" / "tool"), env, sandbox, room) is None
    assert find_program(str(work / "bin" / "tool"), env, sandbox, room) == str(
        work / "bin" / "tool"
    )
    assert find_program("tool", env, NoSandbox(), room) == str(home / "bin" / "tool")
