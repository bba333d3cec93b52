"""Cadre's own ports, and every other Cadre's of this user on this machine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from helpers import own_ports
from helpers.files import BASE_DIR
from tests.support import processes
from tests.support.agents import wait_for

#: A second Cadre stands here for one: a process noting a port as its own, then waiting.
OTHER = "from helpers import own_ports; own_ports.add(int(__import__('sys').argv[1])); " \
        "print('noted', flush=True); __import__('time').sleep(60)"  # fmt: skip


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setattr(own_ports, "_others", (-1.0, frozenset()))  # nothing read before
    return tmp_path / f"cadre-{os.getuid()}-ports"


def fresh() -> frozenset[int]:
    own_ports._others = (-own_ports.FRESH_FOR, frozenset())  # read the folder again now
    return own_ports.listening()


def test_another_cadres_port_is_refused_while_it_runs(folder):
    other = subprocess.Popen([sys.executable, "-c", OTHER, "40123"], cwd=BASE_DIR,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert other.stdout.readline() == "noted\n"
        assert 40123 in fresh()
    finally:
        other.kill()
        other.wait()
    assert 40123 not in fresh()  # its Cadre is gone (killed, no word of it)...
    assert not (folder / "40123").exists()  # ...and its note went with it


def test_a_killed_cadre_its_parent_has_not_reaped_holds_no_port(folder):
    """A zombie keeps its pid and start time, and listens on nothing: a test process that
    had not waited for a killed server yet kept its ports refused to every agent, and a
    test's own web site, given one of them again, was refused as Cadre's."""
    other = subprocess.Popen([sys.executable, "-c", OTHER, "40126"], cwd=BASE_DIR,
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert other.stdout.readline() == "noted\n"
        other.kill()
        wait_for(
            lambda: processes.state(other.pid) == "Z", what="the killed process to be a zombie"
        )
        assert 40126 not in fresh()
    finally:
        other.kill()
        other.wait()


def test_own_ports_are_noted_for_the_others_and_taken_back(folder):
    own_ports.add(40124)
    own_ports.add(40124)  # a replaced local model's server, retired later on the same port
    own_ports.remove(40124)
    assert (folder / "40124").exists() and 40124 in own_ports.listening()
    # The note names this process as the others check it: pid and start time.
    assert (folder / "40124").read_text() == f"{os.getpid()} {own_ports._start_time(os.getpid())}"
    own_ports.remove(40124)
    assert not (folder / "40124").exists() and 40124 not in fresh()


def test_a_folder_another_could_have_made_is_not_trusted(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    folder = tmp_path / f"cadre-{os.getuid()}-ports"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)  # anyone could hide a Cadre's port from the list there
    (folder / "40125").write_text(f"{os.getpid()} {own_ports._start_time(os.getpid())}")
    assert own_ports.shared_folder() is None and 40125 not in fresh()
    assert "not a private folder" in caplog.text


def test_a_note_of_a_process_that_is_not_a_cadre_any_more_counts_for_nothing(folder):
    folder.mkdir(mode=0o700)
    started = own_ports._start_time(os.getpid())
    (folder / "40126").write_text(f"{os.getpid()} {int(started) - 1}")  # a reused pid
    (folder / "40127").write_text("garbage")
    assert not {40126, 40127} & fresh()


def test_every_note_is_read_whatever_else_lies_in_the_folder(folder):
    """Notes being written (`.port.pid`) and other names are passed over, not the end of the
    reading: a Cadre's note after them still counts."""
    folder.mkdir(mode=0o700)
    for name in [".40128.1", "notes", *(f"x{n}" for n in range(20))]:
        (folder / name).write_text("not a note")
    (folder / "40129").write_text(f"{os.getpid()} {own_ports._start_time(os.getpid())}")
    assert 40129 in fresh()


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_a_private_folder_of_another_user_is_not_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    folder = tmp_path / f"cadre-{os.getuid()}-ports"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)  # nobody's: closed to others, but not this user's
    assert own_ports.shared_folder() is None
