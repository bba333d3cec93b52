"""Each person's limits, kept where runs start and steps begin: the server's run gate.

core/run_gate.py is the seam: the loop asks its runtime's gate before a run starts and
before each model call, and tells it each call's usage. This gate answers from the
accounts (the limits an admin set on a person, else the settings' defaults for members:
accounts/limits.py) and the usage ledger (accounts/usage.py), where it counts every call
under the chat's owner. Upload routes ask it for the limit of the person uploading.

Cheap on purpose: a step's question is a dictionary's look-up and a sum kept in memory.
A person's limits are read again (from the accounts and the settings, each read again only
when its file changed) once `FRESH` seconds have passed, or at once when an admin changes
an account's limits here (`forget`): a change of the members' defaults in the settings
counts within a second. Chats at work are counted on the agents' loop, where runs start,
so two messages sent at once cannot both pass a limit of one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from flask import current_app

from accounts.limits import NONE, Limits, day_refusal, in_force, member_defaults, runs_refusal
from accounts.usage import Spent, UsageLedger
from core.run_gate import RunGate
from helpers.settings import load_settings, settings_path

if TYPE_CHECKING:
    from accounts.service import Accounts
    from core.chat import Chat
    from models.llm import Usage
    from store.chats import ChatManager

log = logging.getLogger(__name__)

#: Seconds a person's limits, once read, are taken as they are.
FRESH = 1.0


class AccountLimits(RunGate):
    """The limits of every account, over the chats of one server."""

    def __init__(self, accounts: Accounts, chats: ChatManager, ledger: UsageLedger,
                 clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        self.accounts = accounts
        self.chats = chats
        self.ledger = ledger
        self._clock = clock
        #: The settings file's change stamp, and the members' defaults it held.
        self._defaults: tuple[tuple[int, int], Limits] = ((-1, -1), NONE)
        #: Each person's limits as last read, and until when (monotonic) they hold.
        self._known: dict[str, tuple[float, Limits]] = {}

    # -- whose limits --------------------------------------------------------------

    def defaults(self) -> Limits:
        """A member's limits where the admin set none (the settings, read when changed)."""
        try:
            info = settings_path().stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = (0, 0)
        if stamp != self._defaults[0]:
            self._defaults = (stamp, member_defaults(load_settings()))
        return self._defaults[1]

    def limits_of(self, owner: str | None) -> Limits:
        """The limits `owner` works under (None, the desktop mode, or no such account: none)."""
        if not owner:
            return NONE
        now = time.monotonic()
        known = self._known.get(owner)
        if known is not None and now < known[0]:
            return known[1]
        user = self.accounts.users.get(owner)
        found = in_force(user, self.defaults()) if user is not None else NONE
        self._known[owner] = (now + FRESH, found)
        return found

    def forget(self) -> None:
        """Read everyone's limits again at their next use (an admin changed some)."""
        self._known = {}

    def running(self, owner: str | None, besides: Chat | None = None) -> int:
        """How many chats of `owner` run now (`besides` not counted)."""
        owner_of = self.chats.owner_of
        return sum(1 for c in self.chats.registry.all()
                   if c is not besides and c.running and owner_of(c) == owner)  # fmt: skip

    # -- the gate ------------------------------------------------------------------

    def start_refusal(self, chat: Chat) -> str:
        return self._refusal(self.chats.owner_of(chat), chat)

    def new_run_refusal(self, owner: str | None) -> str:
        return self._refusal(owner, None)

    def step_refusal(self, chat: Chat) -> str:
        owner = self.chats.owner_of(chat)
        if owner is None:
            return ""
        limits = self.limits_of(owner)
        if not limits.any_per_day():
            return ""
        why = day_refusal(limits, self.ledger.today(owner), self._clock())
        if why:
            log.info("limits: chat %s of %s stops: %s", chat.id, owner, why)
        return why

    def spent(self, chat: Chat, usage: Usage) -> None:
        # The desktop mode's one person counts under "" (no account to name).
        self.ledger.add(self.chats.owner_of(chat) or "", Spent(
            usage.prompt_tokens, usage.completion_tokens, usage.calls, usage.cost))  # fmt: skip

    # -- model calls outside chats (the page's voice) --------------------------------

    def call_refusal(self, owner: str | None) -> str:
        """Why `owner` may make no model call today ('' they may): their daily limits."""
        limits = self.limits_of(owner)
        if owner is None or not limits.any_per_day():
            return ""
        why = day_refusal(limits, self.ledger.today(owner), self._clock())
        if why:
            log.info("limits: a model call of %s was refused: %s", owner, why)
        return why

    def call_made(self, owner: str | None) -> None:
        """Count one model call outside any chat (a voice call: no tokens nor a price known)."""
        self.ledger.add(owner or "", Spent(calls=1))

    def _refusal(self, owner: str | None, chat: Chat | None) -> str:
        limits = self.limits_of(owner)
        if owner is None or limits == NONE:
            return ""
        why = ""
        if limits.any_per_day():
            why = day_refusal(limits, self.ledger.today(owner), self._clock())
        if not why and limits.max_runs:
            why = runs_refusal(limits, self.running(owner, chat))
        if why:
            log.info("limits: a run of %s was refused: %s", owner, why)
        return why


def current() -> AccountLimits:
    """The run gate of the app serving this request (server/app.py makes it)."""
    gate: AccountLimits = current_app.extensions["cadre.limits"]
    return gate
