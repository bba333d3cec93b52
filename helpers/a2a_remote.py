"""A call to a remote A2A agent (the `a2a_call` tool's wire): its card read, the task
sent over the SDK's client with streaming, its steps told as they come, its answer.

The remote agents and their addresses are the admin's (the `a2a_agents` setting, which
a person's own profile may not set: profiles/personal.py); an agent only names one. So
the address is not put to the agents' outbound rule (helpers/outbound.py), which would
refuse another Cadre of this machine; but the key goes only where the admin said: the
card's endpoint must be on the address the setting gives (same scheme, host and port),
or the call is refused before anything is sent there. No redirect is followed.

What goes wrong is a `RemoteFault` in plain words, with its `kind`: the agent could not
be reached (or its card read), refused the key, or broke the protocol.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from helpers.a2a_agents import A2aAgent

log = logging.getLogger(__name__)

#: Seconds a cancel of the remote task may take when the caller's run is stopped.
CANCEL_WAIT = 5.0
#: Seconds to connect, and to wait for the card or between two events of the stream.
CONNECT_TIMEOUT = 15.0
READ_TIMEOUT = 300.0
#: Where an agent's card is, under its address (the protocol's well-known path).
CARD_PATH = "/.well-known/agent-card.json"
#: What a fault is: unreachable (network, no card), refused (the key), protocol (the rest).
FaultKind = Literal["unreachable", "refused", "protocol"]
#: The remote task's end states, in words.
ENDED = {
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_CANCELED": "was canceled",
    "TASK_STATE_REJECTED": "was rejected",
    "TASK_STATE_INPUT_REQUIRED": "asks for more input",
    "TASK_STATE_AUTH_REQUIRED": "asks for authorization",
}


class RemoteFault(Exception):
    """A call that went wrong, in words a person (and the model) can act on."""

    def __init__(self, kind: FaultKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass
class RemoteAnswer:
    """What the remote agent gave: its answer (or why it ended without one), the context
    to continue, and the names of the files it sent."""

    text: str = ""
    context_id: str = ""
    #: The remote task's id, once the stream named it (to cancel it).
    task_id: str = ""
    #: "completed", or the end state in words (ENDED) when the task ended otherwise.
    state: str = ""
    files: list[str] = field(default_factory=list)
    #: The card's name and description, as the remote agent tells of itself.
    card_name: str = ""


Step = Callable[[str], Awaitable[None]]


async def ask(agent: A2aAgent, text: str, context_id: str, on_step: Step) -> RemoteAnswer:
    """Send `text` to `agent` (continuing `context_id` when given) and wait for its answer;
    `on_step` hears each status line while it works. RemoteFault when it cannot be done."""
    from a2a.client import A2ACardResolver, AgentCardResolutionError

    headers = {"X-API-Key": agent.key, "Authorization": f"Bearer {agent.key}"} if agent.key else {}
    timeout = httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT)
    async with httpx.AsyncClient(headers=headers, timeout=timeout, follow_redirects=False) as http:
        base, path = card_place(agent.url)
        try:
            card = await A2ACardResolver(http, base, path).get_agent_card()
        except AgentCardResolutionError as exc:
            raise _card_fault(agent, exc) from None
        endpoint = _endpoint(agent, card)
        return await _send(agent, http, card, endpoint, text, context_id, on_step)


def card_place(url: str) -> tuple[str, str]:
    """Where the card of the agent at `url` is: (base, path). The agent's address, with the
    well-known path; or, for a URL ending in `.json`, that URL itself (an agent whose card
    is elsewhere, as Agent Zero's `.../.well-known/agent.json`)."""
    parts = urlsplit(url)
    if parts.path.endswith(".json"):
        return f"{parts.scheme}://{parts.netloc}", parts.path
    return url, CARD_PATH


def _card_fault(agent: A2aAgent, exc: Exception) -> RemoteFault:
    status = getattr(exc, "status_code", None)
    if status in (401, 403):
        return RemoteFault("refused", f"{agent.name} ({agent.url}) refused the key (HTTP {status})")
    why = f"HTTP {status}" if status else _short(exc)
    return RemoteFault(
        "unreachable", f"could not read the agent card of {agent.name} at {agent.url} ({why})"
    )


def _endpoint(agent: A2aAgent, card: Any) -> str:
    """The card's JSON-RPC endpoint on the setting's address; the card is left with the
    interfaces there alone, so the SDK's client can choose no other."""
    interfaces = [i for i in card.supported_interfaces if i.protocol_binding == "JSONRPC"]
    if not interfaces:
        raise RemoteFault("protocol", f"the agent card of {agent.name} offers no JSON-RPC endpoint")
    here = [i for i in interfaces if _origin(i.url) == _origin(agent.url)]
    if not here:
        raise RemoteFault(
            "protocol",
            f"the agent card of {agent.name} sends tasks to {interfaces[0].url[:200]}, not to "
            f"{agent.url}: the key is sent only to the address in the setting a2a_agents (set "
            "that address there if you trust it)",
        )
    kept = [type(i)(url=i.url, protocol_binding=i.protocol_binding, tenant=i.tenant,
                    protocol_version=i.protocol_version) for i in here]  # fmt: skip
    del card.supported_interfaces[:]
    card.supported_interfaces.extend(kept)
    return here[0].url


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of `url`; one a card names with a port that is no port
    (`http://h:abc`, `:99999`) is no origin at all: it matches none."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        return scheme, "", -1
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


async def _send(agent: A2aAgent, http: httpx.AsyncClient, card: object, endpoint: str,
                text: str, context_id: str, on_step: Step) -> RemoteAnswer:  # fmt: skip
    from a2a.client import A2AClientError, ClientConfig, ClientFactory
    from a2a.types.a2a_pb2 import AgentCard, Message, Part, Role, SendMessageRequest

    assert isinstance(card, AgentCard)
    client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)],
                      context_id=context_id or None)  # fmt: skip
    answer = RemoteAnswer(context_id=context_id, card_name=card.name)
    try:
        async for event in client.send_message(SendMessageRequest(message=message)):
            await _take(event, answer, on_step)
    except A2AClientError as exc:
        raise _call_fault(agent, endpoint, exc) from None
    except asyncio.CancelledError:
        # The caller's run was stopped: the remote task is stopped too, as a stopped
        # subordinate is (its answer would come to nobody).
        if answer.task_id:
            await _cancel_remote(client, agent, answer.task_id)
        raise
    finally:
        await client.close()
    if not answer.state:
        raise RemoteFault("protocol", f"{agent.name} ended the stream without an answer")
    return answer


async def _cancel_remote(client: Any, agent: A2aAgent, task_id: str) -> None:
    """Ask the remote agent to cancel its task, waiting CANCEL_WAIT at most (shielded: the
    caller is being cancelled); what goes wrong is a line in the log."""
    from a2a.types.a2a_pb2 import CancelTaskRequest

    asked = asyncio.ensure_future(client.cancel_task(CancelTaskRequest(id=task_id)))
    try:
        await asyncio.wait_for(asyncio.shield(asked), CANCEL_WAIT)
    except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - told, never raised
        log.warning("could not cancel task %s of %s: %s", task_id, agent.name, _short(exc))


async def _take(event: object, answer: RemoteAnswer, on_step: Step) -> None:
    """One event of the stream into `answer` (status lines to `on_step`)."""
    from a2a.helpers import get_message_text
    from a2a.types.a2a_pb2 import StreamResponse, TaskState

    assert isinstance(event, StreamResponse)
    if event.HasField("message"):  # an answer without a task
        answer.text, answer.state = get_message_text(event.message), "completed"
        answer.context_id = event.message.context_id or answer.context_id
        return
    if event.HasField("task"):
        answer.context_id = event.task.context_id or answer.context_id
        answer.task_id = event.task.id or answer.task_id
        status = event.task.status
    elif event.HasField("status_update"):
        answer.context_id = event.status_update.context_id or answer.context_id
        answer.task_id = event.status_update.task_id or answer.task_id
        status = event.status_update.status
    elif event.HasField("artifact_update"):
        artifact = event.artifact_update.artifact
        for part in artifact.parts:
            if part.HasField("raw") or part.HasField("url") or part.filename:
                answer.files.append(part.filename or artifact.name or "a file")
        return
    else:
        return
    said = get_message_text(status.message) if status.HasField("message") else ""
    state = TaskState.Name(status.state)
    if state == "TASK_STATE_COMPLETED":
        answer.text, answer.state = said, "completed"
    elif state in ENDED:
        answer.text, answer.state = said, ENDED[state]
    elif said:
        await on_step(said)


def _call_fault(agent: A2aAgent, endpoint: str, exc: Exception) -> RemoteFault:
    cause = exc.__cause__
    if isinstance(cause, httpx.HTTPStatusError):
        status = cause.response.status_code
        if status in (401, 403):
            return RemoteFault(
                "refused", f"{agent.name} ({endpoint}) refused the key (HTTP {status})"
            )
        return RemoteFault("protocol", f"{agent.name} ({endpoint}) answered HTTP {status}")
    if isinstance(cause, httpx.RequestError):
        return RemoteFault("unreachable", f"lost {agent.name} at {endpoint} ({_short(cause)})")
    return RemoteFault("protocol", f"{agent.name} ({endpoint}): {_short(exc)}")


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:299] + "…"
