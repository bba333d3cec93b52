"""Per-user limits an admin sets: chats running at once, tokens and cost per day, upload size.

A member's limit is the one the admin set on them, else the server's default for members
(the settings' `member_*` fields); an admin has only the limits set on them. 0 means no
limit, on an account and in the settings alike; an account's None means "the default".
In the desktop mode (no account) nothing is limited.

What a person reads when a limit refuses them is written here, once: the same words on
the page, in an API's answer and in the log of a chat that a limit stopped. Days are UTC
days (accounts/usage.py): a daily limit resets at midnight UTC, and the words say so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from accounts.usage import Spent, next_midnight
from accounts.users import LIMIT_FIELDS

if TYPE_CHECKING:
    from accounts.users import User
    from helpers.settings import Settings

MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The limits one person works under; 0: no limit."""

    #: Chats of theirs running at once.
    max_runs: int = 0
    tokens_per_day: int = 0
    #: US dollars per day.
    cost_per_day: float = 0.0
    #: Megabytes of one upload (an attachment, or the file panel's files together).
    upload_mb: int = 0

    def any_per_day(self) -> bool:
        return bool(self.tokens_per_day or self.cost_per_day)


NONE = Limits()


def member_defaults(settings: Settings) -> Limits:
    """The server's limits for a member the admin set none on."""
    return Limits(max_runs=settings.member_max_runs,
                  tokens_per_day=settings.member_tokens_per_day,
                  cost_per_day=settings.member_cost_per_day,
                  upload_mb=settings.member_upload_mb)  # fmt: skip


def in_force(user: User | None, defaults: Limits) -> Limits:
    """The limits `user` works under: their own where set, else a member's `defaults` (an
    admin's: none). None (the desktop mode): no limit."""
    if user is None:
        return NONE
    own = {name: value for name in LIMIT_FIELDS if (value := getattr(user, name)) is not None}
    return replace(NONE if user.is_admin else defaults, **own)


def view(limits: Limits) -> dict[str, float]:
    return {name: getattr(limits, name) for name in LIMIT_FIELDS}


# -- the words ---------------------------------------------------------------------


def runs_refusal(limits: Limits, running: int) -> str:
    """Why one more run may not start while `running` chats of theirs run ('' it may)."""
    if not limits.max_runs or running < limits.max_runs:
        return ""
    chats = "chat" if running == 1 else "chats"
    return (
        f"You already have {running} {chats} working, the most your account may run at once "
        f"({limits.max_runs}). Wait for one to finish, or stop it, then send your message "
        "again; an admin can raise this limit."
    )


def day_refusal(limits: Limits, today: Spent, now: float) -> str:
    """Why no more runs (or steps) today, with when that ends ('' while within the limits)."""
    if limits.tokens_per_day and today.tokens >= limits.tokens_per_day:
        spent = (f"used {today.tokens:,} of the {limits.tokens_per_day:,} tokens your account "
                 "may use")  # fmt: skip
    elif limits.cost_per_day and today.cost >= limits.cost_per_day:
        spent = (f"spent {_usd(today.cost)} of the {_usd(limits.cost_per_day)} USD your "
                 "account may spend")  # fmt: skip
    else:
        return ""
    return (
        f"You have {spent} per day. The limit resets at midnight UTC, in "
        f"{_until(next_midnight(now) - now)}: send your message again then, or ask an admin "
        "to raise your limit."
    )


def upload_limit(limits: Limits, server_limit: int) -> int:
    """The most bytes one upload of theirs may send: the lower of their limit and the
    server's (`server_limit` bytes; 0: none)."""
    own = limits.upload_mb * MB
    if own and server_limit:
        return min(own, server_limit)
    return own or server_limit


def upload_refusal(limits: Limits, size: int) -> str:
    """Why an upload of `size` bytes is refused ('' when it is within their limit)."""
    if not limits.upload_mb or size <= limits.upload_mb * MB:
        return ""
    return (
        f"This upload is {size / MB:.1f} MB; your account may upload at most "
        f"{limits.upload_mb:,} MB at a time. Nothing was saved: send a smaller file, or ask "
        "an admin to raise your limit."
    )


def _usd(amount: float) -> str:
    return f"{amount:,.4f}".rstrip("0").rstrip(".") if amount else "0"


def _until(seconds: float) -> str:
    minutes = max(0, int(seconds // 60))
    if minutes < 1:
        return "less than a minute"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"
