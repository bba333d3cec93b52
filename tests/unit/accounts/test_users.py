"""The accounts file: names, roles, the last admin kept, a damaged file refused whole, and
changes from many threads at once all kept (accounts/users.py)."""

from __future__ import annotations

import json
import threading

import pytest

from accounts.first_admin import FirstAdmin
from accounts.passwords import hash_password, verify_password
from accounts.users import Users
from helpers.errors import UserError
from helpers.files import usr_path


def test_names_are_lower_case_and_checked():
    users = Users()
    made = users.add("  Ada.Lovelace@Example.org ", "admin", "a long password")
    assert made.name == "ada.lovelace@example.org"
    assert users.get("ADA.lovelace@example.org") == made
    for bad in ("", ".hidden", "a/b", "x" * 65, "../up", "ünïcode"):
        with pytest.raises(UserError, match="a user name is"):
            users.add(bad, "member", "a long password")
    with pytest.raises(UserError, match="already a user named"):
        users.add("ADA.LOVELACE@example.org", "member", "a long password")
    with pytest.raises(UserError, match="at least 8"):
        users.add("bo", "member", "short")
    with pytest.raises(UserError, match="a role is one of"):
        users.add("bo", "owner", "a long password")


def test_the_first_admin_keeps_the_installs_folders_and_others_get_their_own():
    users = Users()
    assert users.add("bo", "member", "a long password").space == "users/bo"
    assert users.add("ada", "admin", "a long password").space == ""
    assert users.add("cy", "admin", "a long password").space == "users/cy"
    assert users.first_admin().name == "ada"


def test_the_last_enabled_admin_cannot_go():
    users = Users()
    users.add("ada", "admin", "a long password")
    users.add("bo", "member", "a long password")
    for change in ({"disabled": True}, {"role": "member"}):
        with pytest.raises(UserError, match="at least one enabled admin"):
            users.update("ada", **change)
    with pytest.raises(UserError, match="at least one enabled admin"):
        users.remove("ada")
    assert users.get("ada").is_admin and not users.get("ada").disabled


def test_a_password_is_stored_hashed_and_checked_and_a_disabled_user_is_refused():
    users = Users()
    users.add("ada", "admin", "a long password")
    users.add("bo", "member", "bo's password")
    stored = json.loads(usr_path("users.json").read_text())
    assert "bo's password" not in json.dumps(stored)
    assert usr_path("users.json").stat().st_mode & 0o777 == 0o600
    assert users.check("bo", "bo's password").name == "bo"
    assert users.check("bo", "wrong") is None
    assert users.check("nobody", "bo's password") is None
    users.update("bo", disabled=True)
    assert users.check("bo", "bo's password") is None


def test_a_damaged_file_is_refused_in_words_and_kept():
    users = Users()
    users.add("ada", "admin", "a long password")
    usr_path("users.json").write_text('{"users": [{"name": ')
    with pytest.raises(UserError, match="damaged: restore it from a backup"):
        Users().get("ada")
    assert usr_path("users.json").read_text() == '{"users": [{"name": '


def test_many_threads_adding_at_once_lose_no_one():
    users = Users()
    users.add("ada", "admin", hash_password("a long password"))
    names = [f"user{n}" for n in range(16)]

    def add(name: str) -> None:
        Users().add(name, "member", hash_password("a long password"))  # a reader of its own

    threads = [threading.Thread(target=add, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {u.name for u in Users().all()} == {"ada", *names}


def test_the_settings_login_is_the_first_admin_in_step_with_it():
    users = Users()
    first = FirstAdmin(users)
    assert first.sync("", "") is None and not users.any()
    made = first.sync("Ada", "plain from the environment")
    assert (made.name, made.role, made.space) == ("ada", "admin", "")
    assert verify_password("plain from the environment", made.password)
    stored = users.get("ada").password
    # The same plain password again (every start): not hashed anew, so no session ends.
    assert FirstAdmin(users).sync("Ada", "plain from the environment").password == stored
    renamed = first.sync("ada2", "plain from the environment")
    assert renamed.name == "ada2" and users.get("ada") is None
    changed = first.sync("ada2", hash_password("a new one"))
    assert verify_password("a new one", changed.password)
    first.sync("", "")  # cleared while alone: back to the desktop mode
    assert not users.any()
