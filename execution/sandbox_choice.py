"""Which sandbox backend code sessions use: `code_exec_sandbox` read against this machine.

`auto` takes the first backend of `AUTO_ORDER` that works here and falls back
to none, saying why (a warning at start and on the page). A backend named
explicitly that cannot run here is `broken`: sessions then refuse to start
rather than run unconfined behind the user's back. A new backend (docker,
podman) is one more entry in `BACKENDS`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from execution.sandbox import NoSandbox, Sandbox, SandboxUnavailable
from execution.sandbox_bwrap import Bubblewrap
from helpers import programs

if TYPE_CHECKING:
    from helpers.settings import Settings

log = logging.getLogger(__name__)

#: Backend name (as the setting spells it) -> how to make it from the settings; raises
#: SandboxUnavailable when it cannot run here.
BACKENDS: dict[str, Callable[[Settings], Sandbox]] = {
    "none": lambda settings: NoSandbox(),
    "bubblewrap": lambda settings: Bubblewrap.create(settings.code_exec_bwrap),
}
#: Tried in this order by `auto`.
AUTO_ORDER = ("bubblewrap",)


@dataclass(frozen=True)
class Choice:
    """The backend the settings lead to, and why `auto` fell back when it did."""

    sandbox: Sandbox
    #: The setting as written (`auto`, `bubblewrap`, `none`).
    wanted: str
    #: Why the wanted backend is not used ("" when it is).
    fallback: str = ""
    #: Why a backend named explicitly cannot run ("" when it can): sessions refuse to start.
    broken: str = ""

    @property
    def confined(self) -> bool:
        return self.sandbox.name != "none" and not self.broken

    def status(self, network: bool) -> dict[str, object]:
        """What the page shows next to the work folder; `as_root`: why commands run as root
        inside the sandbox ("" when they do not)."""
        return {
            "setting": self.wanted, "backend": self.sandbox.name, "confined": self.confined,
            "fallback": self.fallback, "broken": self.broken,
            "network": network or not self.confined,
            "as_root": getattr(self.sandbox, "as_root", "") if self.confined else "",
        }  # fmt: skip


def choose(settings: Settings) -> Choice:
    """The backend for `settings.code_exec_sandbox` (see the module docstring)."""
    wanted = settings.code_exec_sandbox
    # The host runs the bubblewrap program itself: never one an agent could have written
    # (helpers/programs.py), and then no sandbox at all rather than "none" behind one's back.
    refused = "" if wanted == "none" else programs.refusal(settings, "code_exec_bwrap")
    if refused:
        return Choice(NoSandbox(), wanted, broken=refused)
    if wanted != "auto":
        make = BACKENDS.get(wanted)
        if make is None:
            return Choice(NoSandbox(), wanted, broken=f"no sandbox backend named {wanted!r}")
        try:
            return Choice(make(settings), wanted)
        except SandboxUnavailable as exc:
            return Choice(NoSandbox(), wanted, broken=str(exc))
    reasons = []
    for name in AUTO_ORDER:
        try:
            return Choice(BACKENDS[name](settings), wanted)
        except SandboxUnavailable as exc:
            reasons.append(str(exc))
    return Choice(NoSandbox(), wanted, fallback="; ".join(reasons))


def warn_at_start(settings: Settings) -> Choice:
    """Log how commands will run; a warning when they will not be confined as asked."""
    choice = choose(settings)
    if choice.broken:
        log.warning("code sessions will not start: %s", choice.broken)
    elif choice.fallback:
        log.warning(
            "commands run WITHOUT a sandbox (code_exec_sandbox is auto): %s", choice.fallback
        )
    else:
        log.info("commands run with sandbox: %s", choice.sandbox.name)
        as_root = getattr(choice.sandbox, "as_root", "")
        if as_root:
            log.warning(
                "sandboxed commands run as root inside (no capabilities): this machine cannot"
                " give them a user of their own: %s", as_root,
            )  # fmt: skip
    return choice


def status(settings: Settings) -> dict[str, object]:
    """How commands run with `settings`, for the page (next to the work folder)."""
    return choose(settings).status(settings.code_exec_network)
