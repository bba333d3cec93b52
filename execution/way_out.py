"""A sandboxed session's way out: Cadre's checking proxy, serving a socket made inside.

The session's network is its own (execution/sandbox_bwrap.py): a loopback and
nothing else. Its first program, the bridge (terminal_drivers/net_bridge.py),
listens on that loopback at `PROXY_PORT` and hands the listening socket to
Cadre through a channel; Cadre serves it with a checking proxy
(helpers/checking_proxy.py), whose outbound policy is the browser's: private
addresses as `outbound_private` says, Cadre's own ports never. The commands
find it through `HTTP_PROXY`, `HTTPS_PROXY` and their lower-case forms.
"""

from __future__ import annotations

import array
import asyncio
import logging
import socket
from collections.abc import Callable

from execution.sandbox import Confined
from helpers.checking_proxy import CheckingProxy
from helpers.outbound import OutboundPolicy

log = logging.getLogger(__name__)

#: Seconds the bridge may take to hand over its socket (bubblewrap's setup comes first).
HANDOVER_TIMEOUT = 15.0


class NoWayOut(RuntimeError):
    """The sandbox's listening socket did not come; the text says why."""


async def open_way_out(
    confined: Confined, policy: Callable[[], OutboundPolicy], refused: Callable[[str], None]
) -> CheckingProxy | None:
    """The proxy serving the session's way out (None: its commands have no network)."""
    channel = confined.channel
    if channel is None:
        return None
    try:
        listening = await asyncio.to_thread(_receive, channel)
    finally:
        confined.close()
    proxy = CheckingProxy(policy, refused, who="commands")
    try:
        await proxy.serve(listening)
    except BaseException:
        listening.close()
        raise
    return proxy


def _receive(channel: socket.socket) -> socket.socket:
    """The listening socket the bridge sends (one message, one descriptor)."""
    channel.settimeout(HANDOVER_TIMEOUT)
    try:
        _, ancillary, _, _ = channel.recvmsg(64, socket.CMSG_SPACE(array.array("i").itemsize))
    except OSError as exc:  # TimeoutError among them
        raise NoWayOut(f"the sandbox's network did not come up: {exc}") from None
    fds = array.array("i")
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - len(data) % fds.itemsize])
    if len(fds) != 1:
        for fd in fds:
            socket.socket(fileno=fd).close()
        raise NoWayOut("the sandbox ended before its network came up")
    listening = socket.socket(fileno=fds[0])
    # What came must be what the bridge makes: a TCP socket listening on the loopback.
    if listening.type != socket.SOCK_STREAM or not listening.getsockopt(
        socket.SOL_SOCKET, socket.SO_ACCEPTCONN
    ):
        listening.close()
        raise NoWayOut("the sandbox's network did not come up: not a listening socket")
    listening.setblocking(False)
    return listening
