"""Test-wide fixtures: a private `usr/`, no network, the fake model server, and the
run_ui.py servers that test modules share: with accounts (`accounts_server`) and in the
default setup (`desktop_server`).

Every test gets its own `usr/` folder (through `CADRE_USR_DIR`) and no
`CADRE_*` variable from the outside. Any connection to a host that is not on
the loopback network fails the test at once, so no test can reach (or pay)
a real provider by accident.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support.fake_llm import FakeLLMServer, start_fake_llm
from tests.support.redis_server import RedisServer
from tests.support.redis_server import installed as redis_installed

if TYPE_CHECKING:
    from tests.support.server_process import ServerProcess

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Cadres note their ports for each other in this user's runtime folder (helpers/own_ports.py):
# the run's own, so that a Cadre the developer runs meanwhile is not one of the tests' and
# the other way round. One folder for every test process of the run, and the run_ui.py
# servers they start: a test server's port is every test's Cadre's, as on a real machine.
os.environ["XDG_RUNTIME_DIR"] = os.environ.get("CADRE_TEST_RUNTIME_DIR") or tempfile.mkdtemp(
    prefix="cadre-test-runtime-"
)
os.environ["CADRE_TEST_RUNTIME_DIR"] = os.environ["XDG_RUNTIME_DIR"]

_real_getaddrinfo = socket.getaddrinfo
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_loopback(host: object) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(host: object) -> None:
    raise ConnectionRefusedError(f"test network guard: connection to non-loopback host {host!r}")


def _guarded_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    if isinstance(host, bytes):
        host = host.decode()
    if not _is_loopback(host):
        _refuse(host)
    return _real_getaddrinfo(host, *args, **kwargs)


def _guarded_connect(self, address):  # type: ignore[no-untyped-def]
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        _refuse(address[0])
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):  # type: ignore[no-untyped-def]
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
        _refuse(address[0])
    return _real_connect_ex(self, address)


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", _guarded_getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", _guarded_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", _guarded_connect_ex)


@pytest.fixture(autouse=True)
def usr_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh `usr/` for every test; no outside `CADRE_*` setting leaks in."""
    for name in list(os.environ):
        if name.startswith("CADRE_"):
            monkeypatch.delenv(name)
    folder = tmp_path / "usr"
    folder.mkdir()
    monkeypatch.setenv("CADRE_USR_DIR", str(folder))
    return folder


@pytest.fixture(scope="session")
def _litellm_loaded() -> None:
    """Import litellm once up front: its ~5 s import must not eat a test's wait budget."""
    from models.llm import litellm_module

    litellm_module()


@pytest.fixture(scope="session")
def _fake_llm_server(_litellm_loaded: None) -> Iterator[FakeLLMServer]:
    server = start_fake_llm()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def accounts_server(
    _fake_llm_server: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """run_ui.py with an admin, shared by this process's test modules of accounts (see
    tests/support/shared_accounts.py): a module takes it through `for_module`."""
    from tests.support import shared_accounts  # web clients: only for the tests that use it

    server = shared_accounts.start(tmp_path_factory.mktemp("accounts"), _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def desktop_server(
    _fake_llm_server: FakeLLMServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """run_ui.py in the default setup (no login), shared by this process's test modules
    that need no server of their own (see tests/support/shared_desktop.py): a module takes
    it through `for_module`."""
    from tests.support import shared_desktop  # web clients: only for the tests that use it

    server = shared_desktop.start(tmp_path_factory.mktemp("desktop"), _fake_llm_server)
    yield server
    server.stop()


@pytest.fixture
def llm(
    _fake_llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeLLMServer]:
    """The fake model server, emptied, with every model setting pointing at it.

    Held for this test (`begin_test`): the URLs name the test, and the server refuses the
    requests of earlier tests, which could otherwise take this test's scripted replies."""
    server = _fake_llm_server
    server.begin_test()
    for prefix in ("CHAT", "UTIL", "EMBED"):
        monkeypatch.setenv(f"CADRE_{prefix}_MODEL", f"openai/{prefix.lower()}-model")
        monkeypatch.setenv(f"CADRE_{prefix}_API_BASE", server.base_url)
        monkeypatch.setenv(f"CADRE_{prefix}_API_KEY", "test-key")
    monkeypatch.setenv("CADRE_LLM_RETRY_DELAY", "0.01")
    yield server
    server.end_test()


@pytest.fixture(params=["litellm", "openai"])
def model_client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each model client in turn (the `model_client` setting): a test using this fixture
    proves both clients behave the same on the wire."""
    monkeypatch.setenv("CADRE_MODEL_CLIENT", request.param)
    return str(request.param)


@pytest.fixture
def runtime() -> Iterator[object]:
    from helpers.runtime import AgentRuntime

    rt = AgentRuntime().start()
    yield rt
    rt.stop()


@pytest.fixture
def make_context(llm: FakeLLMServer, runtime: object) -> Iterator[Callable[..., object]]:
    """A chat on the agents' runtime, configured for the fake model server."""
    from core.chat import Chat
    from initialize import agent_config

    made: list[Chat] = []

    def make(**overrides: object) -> Chat:
        context = Chat(agent_config(overrides or None), runtime)  # type: ignore[arg-type]
        made.append(context)
        return context

    yield make
    for context in made:  # no terminal session outlives its test
        runtime.call(context.code_sessions.close_all)  # type: ignore[attr-defined]


#: Fixtures that run the real built-in model (seconds to minutes a test on a CPU).
MODEL_FIXTURES = {"gemma_file", "local"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests last: Playwright's sync API keeps an event loop on the main thread
    for the rest of the session, where asyncio tests could no longer run. Browser tests
    and those of the real model are marked `slow` (README, "Tests": `-m "not slow"`)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if _in_e2e(item) or fixtures & MODEL_FIXTURES:
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: (_in_e2e(item), _rank(item)))


def _in_e2e(item: pytest.Item) -> bool:
    return "/tests/e2e/" in str(item.path).replace("\\", "/")


#: The modules that take longest (seconds of a full run's junit report, 2026-12-05), run
#: first of their kind, longest first: test processes take modules in this order (cadre.py
#: test), and a long one begun last kept the whole run waiting for it, its fellow processes
#: idle. The browser tests come after the others (above), so they are ranked among
#: themselves: the last modules handed out are the shortest.
LONGEST_FIRST = (
    "test_local_model.py",  # 119
    "test_cluster_runs.py",  # 36
    "test_browser_proxy.py",  # 27
    "test_browser_tool.py",  # 26
    "test_cluster_scheduler.py",  # 22
    "test_inflight_save.py",  # 20
    "test_sandbox_network.py",  # 20
    "test_endless_streams.py",  # 19
    "test_speech_builtin.py",  # 18
    "test_replay.py",  # 16
    "test_code_execution.py",  # 15
    "test_chat_ui.py",  # 78
    "test_layout_ui.py",  # 69
    "test_security_ui.py",  # 45
    "test_users_ui.py",  # 40
    "test_restart.py",  # 39
    "test_mcp_ui.py",  # 37
    "test_browser_ui.py",  # 37
    "test_tools_ui.py",  # 33
    "test_voice_ui.py",  # 28
    "test_logview_ui.py",  # 28
    "test_habits_ui.py",  # 26
    "test_files_ui.py",  # 26
    "test_notifications_ui.py",  # 24
    "test_model_faults_ui.py",  # 22
    "test_setup_ui.py",  # 21
    "test_branches_ui.py",  # 21
    "test_memory_ui.py",  # 21
    "test_plugins_ui.py",  # 20
    "test_vision_ui.py",  # 19
    "test_team_rules_ui.py",  # 19
    "test_single_sign_on_ui.py",  # 19
    "test_cluster_ui.py",  # 17
    "test_scheduler_ui.py",  # 15
    "test_voice_builtin_ui.py",  # 15
    "test_teams_ui.py",  # 15
)


def _rank(item: pytest.Item) -> int:
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.fixture
def cadres_port() -> Iterator[int]:
    """A listener of this process registered as Cadre's own, as run_ui.py registers its
    server's port: the outbound policy refuses it on every address of this machine."""
    from helpers import own_ports

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        own_ports.add(port)
        yield port
        own_ports.remove(port)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A real redis-server for this test process (tests/support/redis_server.py), started on
    first use; skipped where Debian's redis-server is not installed (`cadre.py test`
    installs it). A test that stops it starts it again before it ends."""
    if not redis_installed():
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.close()
