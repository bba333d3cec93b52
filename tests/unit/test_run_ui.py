"""The entry point serves other machines only behind a login."""

from __future__ import annotations

import pytest

from helpers.settings import Settings
from run_ui import check_bind

OPEN = Settings()
LOCKED = Settings(auth_login="ada", auth_password="scrypt$x$y")


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_addresses_are_served(host):
    check_bind(host, OPEN)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_other_addresses_need_a_login(host):
    with pytest.raises(SystemExit, match="CADRE_AUTH_LOGIN and CADRE_AUTH_PASSWORD"):
        check_bind(host, OPEN)
    check_bind(host, LOCKED)
