"""The session-signing key (server/security/auth.py `secret_key`): made once in usr/, and the
same for every process sharing usr/ (a cluster's nodes), even those that ask for it first
at the same moment: none reads a key made but not yet written."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from server.security.auth import secret_key

ROUNDS = 40
ASKERS = 6


def asked_at_once(folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What `ASKERS` threads read, asking at the same moment in a fresh usr/ `folder`."""
    monkeypatch.setenv("CADRE_USR_DIR", str(folder))
    go = threading.Barrier(ASKERS)
    keys: list[bytes] = []

    def ask() -> None:
        go.wait(10)
        keys.append(secret_key())

    askers = [threading.Thread(target=ask) for _ in range(ASKERS)]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join(10)
    return keys


def test_askers_at_the_same_moment_all_read_the_one_whole_key(usr_dir, monkeypatch):
    for round_ in range(ROUNDS):
        folder = usr_dir / f"round{round_}"
        keys = asked_at_once(folder, monkeypatch)
        assert len(keys) == ASKERS and len(set(keys)) == 1, (round_, keys)
        assert len(keys[0]) == 32 and (folder / "secret_key").read_bytes() == keys[0]
        assert (folder / "secret_key").stat().st_mode & 0o777 == 0o600
        assert [p.name for p in folder.iterdir()] == ["secret_key"]  # no draft left behind
