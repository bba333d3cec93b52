"""Cadre's entry point: `python run_ui.py [--host 127.0.0.1] [--port 5080] [--dev]`.

Starts the agents' loop thread, loads every saved chat, and serves the browser UI and
the API: with gunicorn, one worker process of many threads, where it runs; with
Werkzeug's development server under `--dev` (or CADRE_SERVER=werkzeug) and where
gunicorn cannot run (server/serving.py). Ctrl-C (or SIGTERM) saves every chat
and stops: chats that were working come back marked interrupted, ready to continue.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
import time
from typing import NoReturn

from accounts import personal
from cluster.config import ClusterConfig, cluster_config
from cluster.node import Node, node_address, node_for
from core import tracing
from execution import sandbox_choice
from helpers import heap, own_ports
from helpers.errors import UserError
from helpers.outbound import serves_loopback_only
from helpers.runtime import AgentRuntime
from helpers.secrets import MaskingFilter, SecretMasker, secret_values
from helpers.settings import Settings, load_settings, save_settings, settings_path
from initialize import ChatFactory, preload_local_models
from mcp_client.personal import PersonalServers
from mcp_client.supervisor import McpSupervisor
from memory import memories, sharing
from models import llm
from profiles.plugin_mcp import with_plugin_servers
from server import serving
from server.app import Server, create_app
from server.cluster.takeover import TakeOver
from server.security import auth
from server.serving import WSGIApp
from store.backup import swap as backup_swap
from store.chats import ChatManager

log = logging.getLogger("cadre")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Cadre: hierarchical AI agents")
    parser.add_argument("--host", default="127.0.0.1", help="address to serve on")
    parser.add_argument("--port", type=int, default=5080, help="port to serve on")
    parser.add_argument(
        "--dev", action="store_true",
        help="serve with Werkzeug's development server instead of gunicorn",
    )  # fmt: skip
    return parser.parse_args(argv)


def first_start() -> None:
    """On the very first start, make an API key (shown in Settings; clear it to disable)."""
    if settings_path().exists():
        return
    settings = load_settings()
    if not settings.api_key:
        save_settings(Settings(api_key=auth.new_api_key()))
        log.info("first start: an external API key was generated in %s", settings_path())


def start(
    runtime: AgentRuntime, host: str, port: int, node: Node | None = None
) -> tuple[ChatManager, Server]:
    chats = ChatManager(runtime, ChatFactory(runtime))
    began = time.perf_counter()
    chats.load_saved()
    log.info("%d chats listed in %.2f s", len(chats), time.perf_counter() - began)
    server = create_app(chats, host, port, node)
    server.pusher.start()
    server.scheduler.start()  # after the chats are listed: a missed run may start at once
    if server.telegram is not None:
        server.telegram.start()  # the Telegram bot, when the settings hold its token
    # In a cluster, the node's heartbeat says how many of its chats run (cluster/), keeps
    # their leases and takes over the chats of dead nodes (server/cluster/takeover.py).
    server.node.start(lambda: sum(1 for chat in chats.registry.all() if chat.running))
    if server.node.clustered:
        # Memory's SQLite files, used by several nodes: one at a time (memory/sharing.py).
        # Here, for the process: the setting is the process's, not one app's.
        sharing.share_between_nodes(lambda name: server.node.shared_lock(name, MEMORY_LOCK))
    server.node.watch_runs(
        lambda chat_id: _runs_here(chats, chat_id), TakeOver(chats),
        lambda chat_id: chats.let_go(chat_id, "this chat runs on another node now: send your"
                                     " message again"),
    )  # fmt: skip
    return chats, server


#: Seconds a node may hold a memory database in a cluster (and another waits for it): far
#: longer than any use (a file's chunks saved at once take a second or two).
MEMORY_LOCK = 60.0


def _runs_here(chats: ChatManager, chat_id: str) -> bool:
    context = chats.registry.get(chat_id)
    return context is not None and context.running


def index_knowledge() -> None:
    """Bring the index of usr/knowledge/ up to date (at start, off the main thread): the
    first admin's and the desktop mode's; another person's is brought up to date at their
    agents' first recall (core/memory_use.py)."""
    try:
        memories.refresh_knowledge(memories.knowledge_store())
    except Exception:
        log.exception("indexing usr/knowledge failed")


def settle_heap_after(preloading: threading.Thread) -> None:
    """Once litellm and the SDKs are imported, set what start-up made aside from garbage
    collection (helpers/heap.py): a full collection no longer stops every chat for
    a fifth of a second."""
    preloading.join()
    log.info("%d objects of start-up set aside from garbage collection", heap.settle())


def preload_tracing(preloading: threading.Thread) -> None:
    """OpenTelemetry's SDK imported once the model clients are (one importer at a time:
    they share modules), so that the first traced run does not stop the agents' loop for
    it (a tenth of a second)."""
    preloading.join()
    tracing.preload()


def start_background(supervisor: McpSupervisor, settings: Settings) -> None:
    """Start-up's work that nothing waits for, begun once the port is bound (requests
    queue from then): its imports (the model clients, the MCP SDK, the built-in model's
    server) would otherwise share the one interpreter lock with the start itself and
    slow it. A request that needs one of them meanwhile waits for that import,
    made once (models/llm.py `preload`); `/health` says `ready` once they are done."""
    preloading = llm.preload()
    if tracing.is_on(settings):  # the SDK imported here, not by the first run on the loop
        threading.Thread(target=preload_tracing, args=(preloading,), name="cadre-tracing",
                         daemon=True).start()  # fmt: skip
    start_mcp_servers(supervisor)
    preload_local_models(settings)  # the page is usable while the model loads
    threading.Thread(target=index_knowledge, name="cadre-knowledge", daemon=True).start()
    threading.Thread(
        target=settle_heap_after, args=(preloading,), name="cadre-settle", daemon=True
    ).start()


def start_mcp_servers(supervisor: McpSupervisor) -> None:
    """Connect to the MCP servers of the settings, in the background: nothing waits for
    them, nor for the MCP SDK's imports (seconds)."""

    def connect() -> None:
        try:
            llm.wait_for_sdk(timeout=120)  # httpx imported once, by one thread (models/llm.py)
            supervisor.prepare(with_plugin_servers(load_settings().mcp_servers))  # slow imports
            # Read again: a save may have come. The plugins' servers beside the setting's.
            supervisor.apply(with_plugin_servers(load_settings().mcp_servers))
        except Exception:
            log.exception("could not start the MCP servers")

    threading.Thread(target=connect, name="cadre-mcp-connect", daemon=True).start()


def shut_down(chats: ChatManager, runtime: AgentRuntime) -> None:
    """Save every chat as it stands (running ones come back interrupted), then stop."""
    for context in chats.registry.all():
        try:
            chats.save_now(context)
        except Exception:
            log.exception("could not save chat %s on shutdown", context.id)
    chats.freeze()  # the cancelled runs must not overwrite what was saved
    try:
        chats.close_sessions()
    except Exception:
        log.exception("could not end every code session on shutdown")
    supervisor = runtime.service(McpSupervisor)
    if supervisor is not None:
        supervisor.stop()  # each local server's processes end with its session
    own = runtime.service(PersonalServers)
    if own is not None:
        own.stop()
    runtime.stop()


def drain(chats: ChatManager, node: Node, grace: float) -> list[str]:
    """A node of a cluster that stops takes no new run, and lets its running chats go on
    for up to `grace` seconds; the ids of those still running then (a process alone: [])."""
    if not node.clustered:
        return []
    node.drain()

    def running() -> list[str]:
        return [chat.id for chat in chats.registry.all() if chat.running]

    deadline = time.monotonic() + grace
    if running():
        log.info("draining: %d chat(s) running; waiting up to %.0f s", len(running()), grace)
    while running() and time.monotonic() < deadline:
        time.sleep(0.2)
    return running()


class Cadre:
    """Cadre in the process that serves it (server/serving.py's `Service`). With gunicorn
    that is the worker, forked from the process that bound the port: everything that
    starts a thread starts in `build`, after the fork, never before it."""

    def __init__(self, host: str, port: int, cluster: ClusterConfig | None = None) -> None:
        self.host = host
        self.port = port
        #: Alone, or a node of a cluster (CADRE_REDIS_URL): read once in `main`.
        self.cluster = cluster or ClusterConfig()
        self.runtime: AgentRuntime | None = None
        self.supervisor: McpSupervisor | None = None
        self.chats: ChatManager | None = None
        self.server: Server | None = None

    def build(self) -> WSGIApp:
        runtime = self.runtime = AgentRuntime().start()
        runtime.loopback_only = serves_loopback_only(self.host)  # the outbound policy's "auto"
        self.supervisor = runtime.provide(McpSupervisor(runtime))  # its servers connect later
        # Each person's own servers, started when they first run (mcp_client/personal.py).
        runtime.provide(PersonalServers(runtime, personal.mcp_servers_of))
        node = node_for(self.cluster, node_address(self.host, self.port))
        self.chats, self.server = start(runtime, self.host, self.port, node)
        return self.server.app

    def begin(self) -> None:
        assert self.supervisor is not None, "begin follows build"
        # Read again: a worker gunicorn started anew must not use its start's settings.
        start_background(self.supervisor, load_settings())
        print(f"Cadre is running on http://{self.host}:{self.port}/", flush=True)

    @property
    def grace(self) -> float:
        """Seconds a stop lets running chats go on first (a node of a cluster drains)."""
        return self.cluster.drain_grace if self.cluster.enabled else 0.0

    def end(self) -> None:
        running: list[str] = []
        if self.server is not None:
            self.server.scheduler.stop()
            if self.server.telegram is not None:
                self.server.telegram.stop()  # no new messages from Telegram
            if self.chats is not None:
                running = drain(self.chats, self.server.node, self.grace)
            self.server.pusher.stop()
            self.server.mcp.stop()
            if self.server.a2a is not None:
                self.server.a2a.stop()
        if self.chats is not None and self.runtime is not None:
            shut_down(self.chats, self.runtime)
        elif self.runtime is not None:
            self.runtime.stop()
        if self.server is not None:
            self.server.notifications.close()  # its last changes written
            self.server.usage.close()  # the day's usage so far, on disk
            # Saved: other nodes go on with what still ran (cluster/leases.py, HANDED).
            handed = self.server.node.hand_over(running)
            if handed:
                log.info("handed %d running chat(s) over to other nodes", len(handed))
            self.server.node.stop()  # last: a node is in its cluster until it has saved all
        tracing.shutdown()  # the runs' last spans sent (bounded: a collector may be down)
        log.info("stopped")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # Werkzeug's per-request lines and its "development server" notice are noise for a
    # desktop app that serves one person on their own machine.
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    # The MCP SDK's HTTP client logs every request (a remote MCP server's pings too).
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    try:
        cluster = cluster_config()  # before anything starts: a wrong value ends the start
    except UserError as exc:
        log.error("%s", exc)
        return 2
    backup_swap.recover()  # a restore cut short by a crash: usr/ as it was before it
    first_start()
    # Held while Cadre runs: a restore from the command line refuses meanwhile.
    in_use = backup_swap.hold_while_running()
    settings = load_settings()
    sandbox_choice.warn_at_start(settings)  # commands unconfined against the setting's hope
    masking = MaskingFilter(SecretMasker(secret_values(settings)), lasting=cluster.secrets())
    for handler in logging.getLogger().handlers:
        handler.addFilter(masking)  # secrets never reach the server log
    own_ports.add(args.port)  # never reached by an agent (helpers/own_ports.py)
    if (redis_port := cluster.redis_port()) is not None:
        own_ports.add(redis_port)  # nor the cluster's Redis, where it runs on this machine
    try:
        serving.serve(Cadre(args.host, args.port, cluster), args.host, args.port,
                      serving.choose(dev=args.dev), exit_now)  # fmt: skip
    finally:
        in_use.close()
    return 0


def exit_now(code: int | str | None) -> NoReturn:
    """End the process once `main` has saved and stopped everything (its `finally`).

    What would be left is Python tearing down litellm's and the SDKs' modules object
    by object: about 2 s after every stop, for nothing. Logs and output are flushed first.
    """
    logging.shutdown()
    if isinstance(code, str):
        print(code, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


if __name__ == "__main__":
    try:
        status: int | str | None = main()
    except SystemExit as stop:  # SIGTERM, and argparse's --help and errors
        status = stop.code
    exit_now(status)
