"""The app factory: Flask for HTTP, Flask-SocketIO (threading mode, real WebSockets).

Outermost is the `Host` check (server/security/hosts.py), so nothing answers a name
that is not allowed; then the MCP server at `/mcp` (server/apis/mcp_server/endpoint.py,
with its own API-key check), A2A's card and `/a2a` (server/apis/a2a/endpoint.py, the
same), then Socket.IO (its Origin check uses the same
allowlist), then Flask with the login and CSRF guard (server/security/guard.py).

In cluster mode (cluster/, CADRE_REDIS_URL) this process is one node: Socket.IO's events
go through Redis (Flask-SocketIO's message queue), so a page hears them whichever node
it is connected to; login sessions are the node's (in Redis), so any node serves any page;
and the files the nodes share in usr/ (the accounts, API keys, invites, usage, each
person's notifications, the tasks) are changed under the cluster's locks and read again
when another node changed them (helpers/shared_files.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask

from accounts import personal, usage
from accounts.service import Accounts
from accounts.spaces import space_of
from accounts.usage import UsageLedger
from cluster.config import ClusterConfig
from cluster.node import Alone, Node
from core.run_gate import RunGate
from helpers.errors import UserError
from helpers.files import usr_path
from helpers.outbound import serves_loopback_only
from helpers.settings import load_settings
from mcp_client.personal import PersonalServers
from profiles import plugin_switches
from scheduler.service import Scheduler
from scheduler.store import TaskStore
from server import sockets
from server.apis.a2a.endpoint import A2aEndpoint
from server.apis.agent_zero import agent_zero_api
from server.apis.mcp_server.endpoint import McpEndpoint
from server.apis.native import api
from server.apis.openai_compat.endpoint import openai_api
from server.apis.telegram.bridge import TelegramBridge
from server.cluster import relay
from server.cluster.placement import LeasedGate, NodePlacement
from server.push import Pusher
from server.routes import routing
from server.routes.backups import backup_pages
from server.routes.branches import branch_pages
from server.routes.chat_browser import browser_pages
from server.routes.chat_model import chat_model_pages
from server.routes.chat_steps import steps
from server.routes.chat_variables import chat_variables
from server.routes.chats import chat_habits
from server.routes.cluster import cluster_pages
from server.routes.evals import eval_api, eval_pages
from server.routes.files import file_pages
from server.routes.json_body import BoundedJSONProvider
from server.routes.mcp_servers import mcp_pages
from server.routes.memory import memory_pages
from server.routes.my_settings import my_settings_pages
from server.routes.own_export import export_pages
from server.routes.pages import pages
from server.routes.plugins import plugin_pages
from server.routes.projects import project_pages
from server.routes.replay import replay_pages
from server.routes.settings import settings_pages
from server.routes.setup import setup
from server.routes.skills import skill_pages
from server.routes.tasks import task_api, task_pages
from server.routes.usage import usage_pages
from server.routes.users import user_pages
from server.routes.voice import voice_pages
from server.run_limits import AccountLimits
from server.security import guard, welcome
from server.security.forwarded import ForwardedScheme
from server.security.hosts import HostGuard, HostPolicy
from server.security.invite import invite_pages
from server.security.login import login_pages
from server.security.oidc import oidc_pages
from server.security.oidc_client import OidcClients
from server.security.sessions import FileBook, SessionStore
from server.security.throttle import Throttle
from server.security.trusted_header import ProxyLogins
from server.security.welcome import welcome_pages
from server.socketio_import import SocketIO, give_redis
from store.chats import ChatManager
from store.notification_feed import NotificationFeed
from store.notification_owners import Notifications

#: Largest request body (attachments are the big ones).
UPLOAD_LIMIT = 64 * 1024 * 1024


@dataclass
class Server:
    app: Flask
    socketio: SocketIO
    pusher: Pusher
    #: `/mcp`: started by its first request, stopped with the server.
    mcp: McpEndpoint
    #: The scheduled tasks: their routes work at once; they run on time once started.
    scheduler: Scheduler
    #: Each person's notification history (`notifications.json` in their space), fed once
    #: the pusher starts.
    notifications: Notifications
    #: Each person's model usage per day (`usr/usage.json`), written behind the runs.
    usage: UsageLedger
    #: This process as a node: alone (the default), or one of a cluster (cluster/).
    node: Node
    #: A2A (`/.well-known/agent-card.json`, `/a2a`): started by its first task, stopped
    #: with the server.
    a2a: A2aEndpoint | None = None
    #: The Telegram bot (server/apis/telegram/): started with the server, connected while
    #: the settings hold a token.
    telegram: TelegramBridge | None = None


def create_app(
    chats: ChatManager, host: str = "127.0.0.1", port: int = 5080, node: Node | None = None
) -> Server:
    """A ready server for `chats`, to be served on `host`:`port` (the names it answers to
    follow from them) as `node` (None: a process alone); nothing runs until it is served
    (or a test client)."""
    node = node or Alone(ClusterConfig(), f"{host}:{port}")
    app = Flask(__name__, static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = UPLOAD_LIMIT
    app.json = BoundedJSONProvider(app)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    policy = HostPolicy(host, port)
    # Alone, the files are this process's: no lock beyond its own, no look at them between
    # its own writes. In a cluster the node locks each change and they are read again.
    shared = node if node.config.enabled else None
    sessions = SessionStore(node.session_book() or FileBook(usr_path("sessions.json")))
    accounts = Accounts(shared=shared)
    plugin_switches.use_locks(shared)  # plugins' switches: changed under the cluster's lock
    settings = load_settings()
    try:
        accounts.sync(settings.auth_login, settings.auth_password)  # the login: the first admin
        # Whose the chats and tasks from before accounts are, from the start: a task may run
        # (and a chat tell its news) before any request has asked (server/security/identity.py).
        chats.legacy_owner = accounts.legacy_owner()
        if not serves_loopback_only(host) and not accounts.required():
            welcome.announce(f"http://{host}:{port}")  # reached from elsewhere: an admin first
    except UserError:
        pass  # a damaged accounts file: logged; every request says so until it is restored
    notifications = Notifications(accounts.users, shared=shared)
    # The agents' `scheduler` tool reaches it through the runtime, as the browser tool does.
    # A run that made no chat tells its owner straight in their notifications. In a cluster
    # the node claims each due run (it fires on one node) and locks each change of the
    # shared tasks.json; alone, the file is this process's and every claim is granted.
    scheduler = chats.runtime.provide(Scheduler(
        TaskStore(shared=shared), chats, users=accounts.users,
        notify=lambda owner, title, text, level, task: notifications.add(
            owner, title, text, type=level, task=task),
        coordination=node,
    ))  # fmt: skip
    # Each person's limits where runs start and steps begin (core/run_gate.py's seam).
    ledger = UsageLedger(usr_path(usage.FILE), shared=shared)
    limits = AccountLimits(accounts, chats, ledger)
    # In a cluster, a run starts only with its chat's lease (server/cluster/placement.py),
    # and a chat another node runs is that node's to answer for (server/cluster/relay.py).
    chats.runtime.provide(LeasedGate(limits, node) if node.clustered else limits, RunGate)
    if node.clustered:
        chats.placement = NodePlacement(node)
    app.extensions.update({
        "cadre.accounts": accounts, "cadre.limits": limits,
        "cadre.chats": chats, "cadre.hosts": policy, "cadre.sessions": sessions,
        "cadre.node": node,
        # Attempts counted across the nodes of a cluster (cluster/redis_throttle.py).
        "cadre.throttle": node.login_throttle(Throttle()), "cadre.scheduler": scheduler,
        # Single sign-on: the OpenID Connect client, and a trusted proxy's logins.
        "cadre.oidc": OidcClients(), "cadre.proxy_logins": ProxyLogins(),
        # Called with the parts a restore brought back (server/routes/backups.py).
        "cadre.restored": [scheduler.restored],
        # Entered around a restore's swap of the files (server/routes/backups.py): what
        # holds a part in memory (the tasks, the usage totals) holds still, reads it again.
        "cadre.restoring": [scheduler.holding, ledger.held],
        # Called with (name, heir or None, their projects' new names) as a user is deleted,
        # their chats and projects handed over or deleted, before their folder and account
        # go (server/routes/users.py).
        "cadre.leaving": [scheduler.hand_over,
                          lambda name, _heir, _projects: notifications.forget(name),
                          lambda name, _heir, _projects: _forget_settings(chats, name),
                          lambda name, heir, _projects: a2a.hand_over(name, heir)],
    })  # fmt: skip
    guard.install(app)
    app.register_blueprint(login_pages)
    app.register_blueprint(oidc_pages)
    app.register_blueprint(pages)
    app.register_blueprint(settings_pages)
    app.register_blueprint(voice_pages)
    app.register_blueprint(api)
    app.register_blueprint(agent_zero_api)
    app.register_blueprint(openai_api)
    app.register_blueprint(setup)
    app.register_blueprint(steps)
    app.register_blueprint(memory_pages)
    app.register_blueprint(chat_habits)
    app.register_blueprint(branch_pages)
    app.register_blueprint(mcp_pages)
    app.register_blueprint(chat_variables)
    app.register_blueprint(skill_pages)
    app.register_blueprint(plugin_pages)
    app.register_blueprint(file_pages)
    app.register_blueprint(browser_pages)
    app.register_blueprint(task_api)
    app.register_blueprint(task_pages)
    app.register_blueprint(backup_pages)
    app.register_blueprint(eval_pages)
    app.register_blueprint(eval_api)
    app.register_blueprint(project_pages)
    app.register_blueprint(user_pages)
    app.register_blueprint(export_pages)
    app.register_blueprint(usage_pages)
    app.register_blueprint(cluster_pages)
    app.register_blueprint(my_settings_pages)
    app.register_blueprint(chat_model_pages)
    app.register_blueprint(replay_pages)
    app.register_blueprint(invite_pages)
    app.register_blueprint(welcome_pages)
    routing.install(app)
    relay.install(app)

    # async_handlers=False: one browser's events are handled in the order it sent them
    # (a send then a stop must not run as stop then send). A node of a cluster adds its
    # message queue (Redis); threading mode and simple-websocket stay as they are.
    queue = node.socketio_options()
    if queue:
        give_redis()  # held back from python-socketio at import (server/socketio_import.py)
    socketio = SocketIO(
        app, async_mode="threading", async_handlers=False, logger=False, engineio_logger=False,
        cors_allowed_origins=policy.engineio_origin_check, **queue,
    )  # fmt: skip
    app.extensions["cadre.page_events"] = sockets.register(
        socketio, chats, sessions, policy, notifications)  # fmt: skip
    # A request a trusted proxy took over HTTPS is HTTPS inside (server/security/forwarded.py).
    # A2A inside ForwardedScheme: the card names the address the client used (https too).
    a2a = A2aEndpoint(app.wsgi_app, chats, policy, accounts, node)
    forwarded = ForwardedScheme(a2a, lambda: load_settings().trusted_proxies)
    mcp = McpEndpoint(forwarded, chats, policy, accounts)
    app.wsgi_app = HostGuard(mcp, policy)  # type: ignore[method-assign]
    pusher = Pusher(socketio, chats, NotificationFeed(chats, notifications),
                    everywhere=node.clustered)  # fmt: skip
    # Found by the Settings route through the runtime: a saved change applies at once.
    telegram = chats.runtime.provide(TelegramBridge(chats, node))
    return Server(app, socketio, pusher, mcp, scheduler, notifications, ledger, node, a2a,
                  telegram)  # fmt: skip


def _forget_settings(chats: ChatManager, name: str) -> None:
    """A leaving person's own settings go with them, never to an heir (their keys and
    secrets are theirs), and their own MCP servers stop."""
    personal.remove(space_of(name))
    servers = chats.runtime.service(PersonalServers)
    if servers is not None:
        servers.forget(name)
