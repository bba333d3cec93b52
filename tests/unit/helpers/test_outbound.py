"""The outbound policy: private addresses by where Cadre serves, Cadre's own ports, file URLs,
redirects."""

from __future__ import annotations

import fcntl
import ipaddress
import shutil
import socket
import struct
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

import pytest

from helpers import own_ports
from helpers.files import BASE_DIR
from helpers.outbound import (
    OutboundPolicy,
    OutboundRefused,
    is_this_machine,
    open_url,
    serves_loopback_only,
)

LOCAL = ["http://127.0.0.1:5080/", "http://localhost/x", "http://[::1]/", "http://10.1.2.3/",
         "http://192.168.0.1/", "http://169.254.169.254/latest/meta-data",  # cloud metadata
         "http://[::ffff:127.0.0.1]/", "http://100.64.0.1/", "http://0.0.0.0:8080/",
         # IPv6 forms that carry 127.0.0.1: IPv4-compatible, SIIT, 6to4, NAT64 (both prefixes)
         "http://[::127.0.0.1]/", "http://[::ffff:0:127.0.0.1]/", "http://[2002:7f00:1::]/",
         "http://[64:ff9b::7f00:1]/", "http://[64:ff9b:1::7f00:1]/"]  # fmt: skip


@pytest.mark.parametrize("url", LOCAL)
def test_local_and_private_addresses_follow_where_cadre_serves(url):
    OutboundPolicy("auto", loopback_only=True).check_url(url)  # a developer's own machine
    OutboundPolicy("allow", loopback_only=False).check_url(url)
    with pytest.raises(OutboundRefused, match="local or private address: refused because Cadre"):
        OutboundPolicy("auto", loopback_only=False).check_url(url)
    with pytest.raises(OutboundRefused, match="refused by the setting outbound_private"):
        OutboundPolicy("refuse", loopback_only=True).check_url(url)


@pytest.mark.parametrize("address", ["fe80::1%eth0", "[::1]", "[fe80::1%2]"])
def test_an_address_with_its_zone_or_brackets_is_still_the_address(address):
    """A connected socket's peer can carry its zone (`fe80::1%eth0`): not a name to let pass."""
    with pytest.raises(OutboundRefused, match="a local or private address"):
        OutboundPolicy("refuse").check_address(address)


def test_public_addresses_and_where_cadre_serves():
    assert OutboundPolicy("refuse").check_url("https://93.184.216.34/page") == ["93.184.216.34"]
    # A public IPv4 address carried in IPv6 (NAT64, 6to4) stays public.
    assert OutboundPolicy("refuse").check_url("http://[64:ff9b::5db8:d822]/") == ["93.184.216.34"]
    assert OutboundPolicy("refuse").check_url("http://[2002:5db8:d822::]/") == ["93.184.216.34"]
    # Any other public IPv6 address is itself, whatever its last 32 bits would be as IPv4.
    assert OutboundPolicy("refuse").check_url("http://[2606:4700::a00:1]/") == ["2606:4700::a00:1"]
    assert serves_loopback_only("127.0.0.1") and serves_loopback_only("localhost")
    assert not serves_loopback_only("0.0.0.0") and not serves_loopback_only("192.168.1.5")


def test_file_urls_only_inside_the_work_folder_and_no_other_schemes(tmp_path):
    work = tmp_path / "work"
    (work / "site").mkdir(parents=True)
    policy = OutboundPolicy(work_dir=work)
    assert policy.check_url((work / "site/index.html").as_uri()) == []
    for url in ((tmp_path / "secret.txt").as_uri(), "file:///etc/passwd",
                (work / "../secret.txt").as_uri()):  # fmt: skip
        with pytest.raises(OutboundRefused, match="only name files in the work folder"):
            policy.check_url(url)
    with pytest.raises(OutboundRefused, match="must name a local file"):
        policy.check_url("file://server/share/x")
    for url in ("ftp://example.org/x", "javascript:alert(1)", "chrome://settings"):
        with pytest.raises(OutboundRefused, match="only http"):
            policy.check_url(url)
    with pytest.raises(OutboundRefused, match="http:///etc/passwd: the URL names no host"):
        policy.check_url("http:///etc/passwd")


@pytest.fixture(scope="module")
def redirecting():
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            return None

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == "/ftp":
                self.send_response(302)
                self.send_header("Location", "ftp://127.0.0.1/file")
                self.end_headers()
                return
            if self.path.startswith("/to/"):  # /to/<port>: a redirect to that port here
                self.send_response(302)
                self.send_header("Location", f"HTTP://127.0.0.1:{self.path[4:]}/")
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fetching_checks_the_address_reached_and_every_redirect(redirecting):
    with open_url(OutboundPolicy("auto", loopback_only=True), redirecting + "/", 5) as answer:
        assert answer.read() == b"ok"
    with pytest.raises(OutboundRefused, match="127.0.0.1, a local or private address"):
        open_url(OutboundPolicy("refuse"), redirecting + "/", 5)
    with pytest.raises(OutboundRefused, match="redirects to ftp://127.0.0.1/file: refused"):
        open_url(OutboundPolicy("allow"), redirecting + "/ftp", 5)


def test_a_redirect_to_http_is_followed_and_where_it_leads_is_checked(redirecting, cadres_port):
    """A redirect to another http URL (its scheme in capitals, as a server may write it) is
    followed; the connection it makes is checked like the first (Cadre's own port here)."""
    allow = OutboundPolicy("allow", loopback_only=True)
    port = redirecting.rsplit(":", 1)[1]
    with open_url(allow, f"{redirecting}/to/{port}", 5) as answer:
        assert answer.read() == b"ok"
    with pytest.raises(OutboundRefused, match=f"port {cadres_port}: that is Cadre's own"):
        open_url(allow, f"{redirecting}/to/{cadres_port}", 5)


def test_the_address_connected_to_is_checked_not_only_the_name(redirecting):
    """DNS rebinding: whatever a name resolved to when checked, the peer is checked again."""

    class AnswersPublic(OutboundPolicy):
        def check_url(self, url: str) -> list[str]:
            return ["93.184.216.34"]  # as a rebinding name would first resolve

    with pytest.raises(OutboundRefused, match="127.0.0.1, a local or private address"):
        open_url(AnswersPublic("refuse"), redirecting + "/", 5)


def test_cadres_own_port_is_refused_on_every_address_of_this_machine(cadres_port, redirecting):
    """Whatever `outbound_private` allows: an agent that reached Cadre's server could change
    its settings through its API."""
    allow = OutboundPolicy("allow", loopback_only=True)
    here = ["127.0.0.1", "127.0.0.2", "localhost", "[::1]", "0.0.0.0", "[::ffff:127.0.0.1]"]
    for host in here:
        with pytest.raises(OutboundRefused, match="Cadre's own server on this machine"):
            allow.check_url(f"http://{host}:{cadres_port}/api/settings")
    # Another port of this machine, and the same port elsewhere, are the setting's business.
    allow.check_url(f"http://127.0.0.1:{cadres_port + 1}/")
    assert allow.check_url(f"http://93.184.216.34:{cadres_port}/") == ["93.184.216.34"]
    # What a fetch connects to is checked with its port too (a redirect to Cadre's port).
    port = int(redirecting.rsplit(":", 1)[1])
    own_ports.add(port)
    try:
        with pytest.raises(OutboundRefused, match="Cadre's own server"):
            open_url(allow, redirecting + "/", 5)
    finally:
        own_ports.remove(port)
    with open_url(allow, redirecting + "/", 5) as answer:
        assert answer.read() == b"ok"


@pytest.mark.parametrize(
    ("port", "reaching", "elsewhere"),
    [
        (443, ["https://127.0.0.1/x", "wss://localhost/socket"], ["http://127.0.0.1/x"]),
        (80, ["http://127.0.0.1/x", "ws://localhost/socket"], ["https://127.0.0.1/x"]),
    ],
)
def test_a_url_naming_no_port_reaches_its_schemes_default_port(port, reaching, elsewhere):
    """Cadre serving on 443 or 80 (as root, or behind nothing): a URL naming no port goes
    there, and is refused like one naming it; the other scheme's default port is another."""
    allow = OutboundPolicy("allow", loopback_only=True)
    own_ports.add(port)
    try:
        for url in reaching:
            with pytest.raises(OutboundRefused, match=f"port {port}: that is Cadre's own"):
                allow.check_url(url)
        for url in elsewhere:
            assert allow.check_url(url) == ["127.0.0.1"]
    finally:
        own_ports.remove(port)


def test_a_port_stays_cadres_while_any_of_its_listeners_holds_it():
    own_ports.add(40_001)
    own_ports.add(40_001)  # a replaced local model's server, retired later on the same port
    own_ports.remove(40_001)
    assert 40_001 in own_ports.listening()
    own_ports.remove(40_001)
    assert 40_001 not in own_ports.listening()


def test_this_machine_is_its_loopback_and_its_interfaces_addresses():
    assert is_this_machine(ipaddress.ip_address("127.0.0.9"))
    assert is_this_machine(ipaddress.ip_address("0.0.0.0"))
    assert not is_this_machine(ipaddress.ip_address("93.184.216.34"))
    mine = interface_addresses()
    assert mine and all(is_this_machine(ipaddress.ip_address(a)) for a in mine)


def interface_addresses() -> list[str]:
    """The IPv4 address of each of this machine's interfaces (SIOCGIFADDR), loopback too."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as asker:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                answer = fcntl.ioctl(asker.fileno(), 0x8915, request)  # SIOCGIFADDR
            except OSError:  # no IPv4 address on it
                continue
            found.append(socket.inet_ntoa(answer[20:24]))
    return found


#: Checks a name resolving, through the hosts file given, to a public and a loopback address.
TWO_FACED = """
from helpers.outbound import OutboundPolicy, OutboundRefused, resolve
print(resolve("two-faced.test"))
try:
    OutboundPolicy("refuse").check_url("http://two-faced.test/")
    print("allowed")
except OutboundRefused as exc:
    print("refused:", exc)
"""


def test_a_name_is_refused_if_any_of_its_addresses_is(tmp_path):
    """A name that resolves to a public address and to 127.0.0.1 (the public one first, as
    they are checked): each address is checked, not only the first. The system's resolver
    reads a hosts file of the test's, mounted over /etc/hosts for one process by bubblewrap."""
    bwrap = shutil.which("bwrap")
    hosts = tmp_path / "hosts"
    hosts.write_text("1.2.3.4 two-faced.test\n127.0.0.1 two-faced.test\n127.0.0.1 localhost\n")
    if bwrap is None or subprocess.run([bwrap, "--dev-bind", "/", "/", "true"]).returncode:
        pytest.skip("bubblewrap cannot run here to give one process its own /etc/hosts")
    done = subprocess.run(
        [bwrap, "--dev-bind", "/", "/", "--ro-bind", str(hosts), "/etc/hosts",
         sys.executable, "-c", TWO_FACED],
        cwd=BASE_DIR, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    addresses, outcome = done.stdout.splitlines()
    assert addresses == "['1.2.3.4', '127.0.0.1']", done.stderr
    assert outcome.startswith("refused: http://two-faced.test/ resolves to 127.0.0.1, a local")
