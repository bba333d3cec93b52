"""A sandboxed command's network: its own, with Cadre's checking proxy as the only way out.

Every address here is a loopback one (tests never send traffic elsewhere). A server
in another process stands for the world an agent may reach; a listener in this test
process, registered as Cadre's own (as run_ui.py registers its port), stands for
Cadre's server; a real run_ui.py is Cadre itself, with and without a login.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.checking_proxy import MOST_CONNECTIONS
from tests.integration.test_code_execution import body, code, run
from tests.integration.test_sandbox import SANDBOX, hand_built_wheel, needs_bwrap
from tests.support.agents import answer
from tests.support.fake_llm import Reply
from tests.support.server_process import ServerProcess, call_api, free_port, server_env

#: What a command reports of its network, as JSON: its interfaces and routes, its proxy
#: variable, a direct connection to each port given, and a request through the proxy to
#: each URL given (plain http, and https through a CONNECT tunnel).
PROBE = """
import json, os, socket, urllib.error, urllib.request

# NO_PROXY keeps the sandbox's own loopback direct (a server a command starts); a service of
# the host's loopback is asked for through the proxy, as here.
proxy = os.environ.get("HTTP_PROXY", "")
for name in ("NO_PROXY", "no_proxy"):
    os.environ.pop(name, None)

def direct(port):
    try:
        socket.create_connection(("127.0.0.1", port), 3).close()
        return "connected"
    except OSError as exc:
        return type(exc).__name__

def proxied(url):
    try:
        return urllib.request.urlopen(url, timeout=10).read().decode().strip()
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode().strip()}"
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"

devices = sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:])
routes = [line.split()[0] for line in open("/proc/net/route").readlines()[1:]]
routes6 = sorted({line.split()[-1] for line in open("/proc/net/ipv6_route")})
print(json.dumps({
    "devices": devices, "routes": routes, "routes6": routes6,
    "proxy": proxy,
    "direct": [direct(port) for port in PORTS],
    "proxied": [proxied(url) for url in URLS],
}))
"""


def probe(ports: list[int], urls: list[str]) -> str:
    return f"PORTS = {ports!r}\nURLS = {urls!r}\n{PROBE}"


def report(result: str) -> dict:
    return json.loads(body(result).splitlines()[0])


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[int]:
    """An HTTP server in a process of its own (not Cadre's): what an agent may reach."""
    folder = tmp_path_factory.mktemp("world")
    (folder / "hello.txt").write_text("hello from the world\n")
    # A package index (PEP 503) with one wheel, and a git repository served as plain files.
    index = folder / "simple" / "greeting"
    index.mkdir(parents=True)
    wheel = hand_built_wheel(index)
    (index / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    source = folder / "source"
    git = ["git", "-c", "user.name=World", "-c", "user.email=world@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main", str(source)], check=True)
    (source / "a.txt").write_text("cloned over http\n")
    subprocess.run([*git, "-C", str(source), "add", "a.txt"], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-q", "-m", "first"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(folder / "repo.git")],
                   check=True)  # fmt: skip
    subprocess.run(["git", "-C", str(folder / "repo.git"), "update-server-info"], check=True)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                server.kill()
                raise
            time.sleep(0.05)
    yield port
    server.kill()
    server.wait()


@needs_bwrap
def test_a_commands_only_way_out_is_the_checking_proxy(make_context, llm, world, cadres_port):
    hello, cadre = f"http://127.0.0.1:{world}/hello.txt", f"http://127.0.0.1:{cadres_port}/"
    tunnel = f"https://127.0.0.1:{cadres_port}/api/settings"
    _, seen = run(
        make_context, llm, code("python", probe([world, cadres_port], [hello, cadre, tunnel])),
        **SANDBOX,
    )  # fmt: skip
    got = report(seen[0])
    # A network of its own: its loopback, no route anywhere.
    assert got["devices"] == ["lo"] and got["routes"] == [] and set(got["routes6"]) <= {"lo"}
    assert got["proxy"] == "http://127.0.0.1:3128"
    # Nothing of the host's loopback directly: neither a service nor Cadre's server.
    assert got["direct"] == ["ConnectionRefusedError", "ConnectionRefusedError"]
    reached, refused, tunnelled = got["proxied"]
    assert reached == "hello from the world"
    assert refused.startswith("403 ") and "Cadre's own server" in refused
    assert "Tunnel connection failed: 403" in tunnelled
    # The agent hears of the refusals with the result.
    assert "[Meanwhile:" in seen[0] and f"port {cadres_port}: that is Cadre's own" in seen[0]


@needs_bwrap
def test_without_the_network_there_is_no_way_out_at_all(make_context, llm, world):
    _, seen = run(
        make_context, llm, code("python", probe([world, 3128], [])),
        code_exec_network=False, **SANDBOX,
    )  # fmt: skip
    got = report(seen[0])
    assert got["devices"] == ["lo"] and got["routes"] == [] and got["proxy"] == ""
    assert got["direct"] == ["ConnectionRefusedError", "ConnectionRefusedError"]


@needs_bwrap
def test_the_proxy_and_the_scratch_space_go_with_the_session(make_context, llm, usr_dir):
    _, seen = run(
        make_context, llm,
        code("terminal", "echo kept > /tmp/note; ls ~ /tmp | wc -l; echo $HTTPS_PROXY"),
        code("reset"),
        code("terminal", "cat /tmp/note 2>&1 | tail -c 26"),
        **SANDBOX,
    )  # fmt: skip
    assert body(seen[0]).splitlines()[-1] == "http://127.0.0.1:3128"
    assert body(seen[2]).endswith("No such file or directory")  # a new session, a new /tmp
    # Only the live session's scratch space is on disk (the first one was removed).
    assert len(list((usr_dir / "scratch").iterdir())) == 1


@needs_bwrap
def test_pip_git_and_curl_work_through_the_proxy(make_context, llm, world):
    """What the README says works: the variables are all these tools need. The world's
    server is on the host's loopback here, so NO_PROXY (the sandbox's own) is set aside."""
    site = f"http://127.0.0.1:{world}"
    install = (
        f"python3 -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check"
        f" --index-url {site}/simple greeting"
        " && .venv/bin/python -c 'import greeting; print(greeting.hello())'"
    )
    steps = [
        code("terminal", f"unset NO_PROXY no_proxy; {install}"),
        code("terminal", f"unset NO_PROXY no_proxy; git clone -q {site}/repo.git clone &&"
                         " cat clone/a.txt"),
    ]  # fmt: skip
    expected = ["hello from the venv", "cloned over http"]
    if shutil.which("curl"):
        steps.append(code("terminal", f"unset NO_PROXY no_proxy; curl -sS {site}/hello.txt"))
        expected.append("hello from the world")
    slow = {"code_exec_first_output_timeout": 40.0, "code_exec_max_timeout": 40.0}
    _, seen = run(make_context, llm, *steps, **slow, **SANDBOX)
    assert list(map(body, seen)) == expected


HOLD = """
import socket, time
held = []
for _ in range(600):
    try:
        held.append(socket.create_connection(("127.0.0.1", 3128), 3))
    except OSError:
        break
time.sleep(1.5)
print(len(held))
"""


@needs_bwrap
def test_connections_held_open_cost_cadre_a_bounded_number_of_files(make_context, llm):
    """Each connection a command opens to the proxy is a descriptor in Cadre's process: 5,000
    held open made Cadre hold 5,000 more (a desktop's usual limit is 1,024, past which Cadre
    can open no file and take no request). Past a session's share, the proxy stops taking
    them: they wait in the sandbox's own kernel, costing Cadre nothing."""
    peak, done = [0], threading.Event()

    def count() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], len(os.listdir("/proc/self/fd")))
            time.sleep(0.02)

    before = len(os.listdir("/proc/self/fd"))
    counter = threading.Thread(target=count)
    counter.start()
    try:
        slow = {"code_exec_first_output_timeout": 30.0, "code_exec_max_timeout": 30.0}
        _, seen = run(make_context, llm, code("python", HOLD), **slow, **SANDBOX)
    finally:
        done.set()
        counter.join()
    assert int(body(seen[0])) > MOST_CONNECTIONS  # the command could open them...
    assert peak[0] - before < MOST_CONNECTIONS + 40  # ...Cadre took only its share


# -- Cadre itself: a real run_ui.py, its port refused with and without a login ------------

KEY = "network-test-key"
call = functools.partial(call_api, key=KEY)


@needs_bwrap
@pytest.mark.parametrize("login", [False, True], ids=["no-login", "login"])
def test_a_command_cannot_reach_cadres_own_server(llm, usr_dir, tmp_path, monkeypatch, login):
    """What an attacker's probe did: a command fetched /api/csrf and posted /api/settings to
    have the host run its script. Now neither the port nor the proxy lets it through."""
    monkeypatch.setenv("CADRE_API_KEY", KEY)
    monkeypatch.setenv("CADRE_CODE_EXEC_SANDBOX", "bubblewrap")
    if login:
        monkeypatch.setenv("CADRE_AUTH_LOGIN", "ada")
        monkeypatch.setenv("CADRE_AUTH_PASSWORD", "correct horse battery staple")
    server = ServerProcess(server_env(), tmp_path / "server.log")
    urls = [f"{server.url}/api/csrf", f"http://localhost:{server.port}/api/settings"]
    llm.script(Reply(code("python", probe([server.port], urls))), Reply(answer("done")))
    server.start()
    try:
        call(server, "POST", "/api/v1/message", {"message": "look around", "wait": True})
    finally:
        server.stop()
    results = [r.messages[-1]["content"] for r in llm.chat_requests()]
    got = report(next(r for r in results if r.startswith("[Result of tool")))
    assert got["direct"] == ["ConnectionRefusedError"]
    assert all(p.startswith("403 ") and "Cadre's own server" in p for p in got["proxied"])
    assert "Cadre's own server" in Path(tmp_path / "server.log").read_text()  # in the log too


@needs_bwrap
def test_a_command_cannot_reach_another_cadre_of_this_user_either(make_context, llm, tmp_path):
    """A second Cadre on this machine (another port, another usr/): its API is as much a
    way out. Every Cadre notes its ports for the others (helpers/own_ports.py)."""
    env = {**server_env(), "CADRE_USR_DIR": str(tmp_path / "other-usr")}  # a usr/ of its own
    other = ServerProcess(env, tmp_path / "other.log").start()
    try:
        urls = [f"{other.url}/api/csrf", f"http://localhost:{other.port}/api/settings"]
        _, seen = run(make_context, llm, code("python", probe([other.port], urls)), **SANDBOX)
    finally:
        other.stop()
    got = report(seen[0])
    assert got["direct"] == ["ConnectionRefusedError"]
    assert all(p.startswith("403 ") and "Cadre's own server" in p for p in got["proxied"])
