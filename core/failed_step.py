"""A failed step in the log: the error in plain words, and running the step again.

When a run ends because the provider failed, the person reads what failed and
what to do (`ProviderFault`), with the technical text in a "Details" fold, and
gets a Retry on that error: the chain goes on from where it failed, with the
history as it stands (the user's message is not sent twice).

Only the latest failure of a chat is offered for retry, and only until a new
message was sent or it was retried.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from helpers.errors import CadreError, ProviderError, UserError

if TYPE_CHECKING:
    from core.chat import Chat
    from core.log import Log, LogItem
    from core.runner import RunHandle

#: kvps of an error item: what to do, the technical text, whether Retry is offered, and
#: the fault's kind (the page offers the setup dialog for a key, model or address).
FIX, DETAIL, RETRY, FAULT = "fix", "detail", "retry", "fault"


def error_fields(exc: CadreError, heading: str) -> tuple[str, str, dict[str, Any]]:
    """(heading, content, kvps) of the error item for `exc`; `heading` when no plainer one."""
    fault = exc.fault if isinstance(exc, ProviderError) else None
    if fault is None:
        return heading, str(exc), {}
    kvps = {FIX: fault.fix, DETAIL: fault.detail or str(exc), FAULT: fault.kind}
    return fault.headline, fault.fix, kvps


def show_failure(
    log: Log, exc: CadreError, agentno: int, heading: str = "Error", retry: bool = False
) -> LogItem:
    """Log the error `exc` ended a run (or a delegation) with.

    The model call's own row, when it showed nothing yet, becomes the error
    (no empty "Generating..." row stays behind). `retry`: offer to run the
    step again (the run's end only; earlier failures stop offering it).
    """
    title, content, kvps = error_fields(exc, heading)
    offered = retry and isinstance(exc, ProviderError)
    if offered:
        for earlier in log.items:
            if earlier.kvps.get(RETRY) is True:
                earlier.update(kvps={RETRY: False})
    kvps[RETRY] = offered
    row = _call_row(log, exc)
    if row is not None and row.type == "agent":
        row.update(type="error", heading=title, content=content, kvps=kvps)
        return row
    return log.log("error", title, content, kvps=kvps, agentno=agentno)


def _call_row(log: Log, exc: CadreError) -> LogItem | None:
    """The row of the model call that failed with `exc`, if it showed nothing
    (core/reply/reply_stream.py names it on the error); None if the log lost it."""
    row_id = exc.row_id if isinstance(exc, ProviderError) else None
    if row_id is None:
        return None
    return next((item for item in reversed(log.items) if item.id == row_id), None)


def retry(context: Chat, item_id: str) -> RunHandle:
    """Run the step that failed as `item_id` again (call on the agents' loop).

    UserError when that item offers no retry, the chat runs, or a message came since.
    """
    items = context.log.items
    at = next((i for i, item in enumerate(items) if item.id == item_id), None)
    if at is None or items[at].kvps.get(RETRY) is not True:
        raise UserError("this step offers no retry (it did not fail, or it was retried already)")
    if context.runner.running:
        raise UserError("this chat is working; stop it or wait before retrying")
    if any(item.type == "user" for item in items[at + 1 :]):
        raise UserError("a message was sent after this step failed; there is nothing to retry")
    items[at].update(kvps={RETRY: False})
    context.log.log("info", "Retrying", "Running the failed step again.", agentno=0)
    return context.runner.start_chain(context.agent0)
