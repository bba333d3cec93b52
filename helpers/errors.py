"""The few kinds of error Cadre distinguishes, and what each one means.

- `RepairableException`: the model did something wrong that it can fix
  (bad JSON, unknown tool, invalid arguments). Its text goes back to the model
  as a warning and the loop goes on. `RepairableTold`, one of them, is raised
  where there is no agent (helpers, browsing, execution, memory): it carries
  the prompt file that says it and its variables (helpers/told.py), and the
  tool layer renders it.
- `UserError`: a person has to fix something (settings, a prompt file, a
  profile). Fails fast with a clear message. `NotFound`, one of them, names
  something that does not exist (a chat): the web layer answers it with 404,
  chosen by this type, never by the message's words. `OverLimit`, another, is a
  limit set on the person (a 429).
- `RunError`: the run cannot go on (provider gave up, the breaker tripped).
  The monologue ends with an `error` log item; the chat stays usable.
  `ReplyTooLong`, a provider failure, is turned into a repairable error by
  the chat loop: the model is told to answer shorter.
- `Unavailable`: something Cadre needs beside itself (a cluster's Redis) does not
  answer now; nothing was done, and the text says what to check. HTTP 503.
- `InterventionException`: internal signal that restarts a loop iteration
  because the user stepped in. Never shown to anyone.
"""

from __future__ import annotations

from typing import Any

from helpers.provider_fault import ProviderFault
from helpers.told import Told


class CadreError(Exception):
    """Base of every error Cadre raises on purpose."""


class RepairableException(CadreError):
    """An error the model can read and repair on its next reply."""


class RepairableTold(RepairableException):
    """A repairable error from a layer without an agent: `told`, the prompt file that says
    it and its variables, rendered by the tool layer (core.tool.Tool.run). `str()` names
    the file and the variables, for the server's log only."""

    def __init__(self, prompt: str, /, **variables: Any) -> None:
        super().__init__(f"{prompt} {variables!r}")
        self.told = Told(prompt, variables)


class BudgetExhausted(RepairableException):  # noqa: N818 - shown to the model like its kin
    """A budget ran out: the model is told to answer now. Not an unusable reply."""


class UserError(CadreError):
    """A configuration or input problem a person must fix."""


class NotFound(UserError):
    """What a person or a program named does not exist (a chat); HTTP 404. Also what is
    another person's: nobody learns that it exists."""


class Forbidden(UserError):
    """What only an admin may do, asked for by a member; HTTP 403."""


class OverLimit(UserError):  # noqa: N818 - a refusal, named as the person meets it
    """A limit an admin set on the person refuses this (chats at once, tokens or cost per
    day: accounts/limits.py has the words); HTTP 429. A run it stops ends with the words."""


class PromptError(UserError):
    """A prompt file is missing or refers to something that does not exist."""


class RunError(CadreError):
    """The run cannot continue; shown as an `error` log item."""


class ProviderError(RunError):
    """The model provider failed after every retry.

    `str()` is the technical account (server log, the model's warning);
    `fault`, when known, says it in plain words with the fix (the error a person sees).
    """

    def __init__(self, message: str, fault: ProviderFault | None = None) -> None:
        super().__init__(message)
        self.fault = fault
        #: The id of the failed model call's log row, when it showed nothing: that row
        #: becomes the error (core.failed_step finds it in the chat's log, where it is
        #: typed; an error knows no log).
        self.row_id: str | None = None


class ReplyTooLong(ProviderError):  # noqa: N818 - a provider failure like its base
    """A model's reply ran past `llm_max_reply_chars`, and the call was ended.

    The chat loop tells the model to answer shorter (a repairable error that
    counts as an unusable reply); for any other call it is a provider failure.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"the model's reply ran past {limit:,} characters (llm_max_reply_chars) "
            "and the call was ended"
        )
        self.limit = limit


class Unavailable(CadreError):  # noqa: N818 - what the asker meets, not a failure of theirs
    """A service Cadre relies on beside itself (a cluster's Redis) does not answer now, so
    nothing was done; the text says so in plain words and what to check. HTTP 503."""


class InterventionException(CadreError):  # noqa: N818 - a signal, not a failure
    """Restart the current loop iteration: the user stepped in."""
