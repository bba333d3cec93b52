"""The entry point serves on this machine only until login exists."""

from __future__ import annotations

import pytest

from run_ui import check_bind


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost", "127.0.0.2"])
def test_loopback_addresses_are_served(host):
    check_bind(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.5", "::", "example.com"])
def test_other_addresses_are_refused_with_the_reason(host):
    with pytest.raises(SystemExit, match="refusing to serve on"):
        check_bind(host)
