"""Cadre's A2A agent card: Agent 0, and the agent profiles it may be given as skills.

The card is public (A2A clients read it before they hold any key), so it says only what
the page's profile list says to anyone: names, titles and descriptions of the shared
profiles (usr/'s, never a person's own), the endpoint's address and how the key is sent.
No key, address of a model or setting is on it.
"""

from __future__ import annotations

from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_CURRENT, TransportProtocol

from profiles.catalog import get_available_agents_dict

#: Where the JSON-RPC endpoint is, on Cadre's own port.
RPC_PATH = "/a2a"
#: The metadata key of a message that picks Agent 0's profile for a new context.
PROFILE_KEY = "profile"
#: What the card tells of the endpoint, in a few words.
DESCRIPTION = (
    "Cadre runs a team of AI agents: Agent 0 takes the task, delegates parts of it to "
    "subordinate agents, and answers. A context is one Cadre chat: send the contextId "
    "again to continue it. To start a new context with another profile as Agent 0, set "
    f'the message\'s metadata {{"{PROFILE_KEY}": "<skill id>"}}.'
)


def agent_card(base_url: str, version: str) -> AgentCard:
    """The card of the Cadre at `base_url` (its scheme, host and port, no slash at the end)."""
    profiles = get_available_agents_dict(None)
    skills = [
        AgentSkill(
            id=name, name=profile.title or name,
            description=profile.description or f"Agent 0 with the {name} profile.",
            tags=["cadre", "agent-profile"],
        )
        for name, profile in sorted(profiles.items())
    ]  # fmt: skip
    schemes = {
        "apiKey": SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(
            name="X-API-Key", location="header",
            description="A Cadre API key (Settings > API key, or one of your own)")),
        "bearer": SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", description="The same key as a bearer token")),
    }  # fmt: skip
    return AgentCard(
        name="Cadre Agent 0",
        description=DESCRIPTION,
        version=version,
        # The same endpoint speaks the protocol's 0.3 too (the SDK's compatibility layer),
        # for the many clients that still do; the card then carries 0.3's fields as well.
        supported_interfaces=[
            AgentInterface(
                url=base_url + RPC_PATH,
                protocol_binding=TransportProtocol.JSONRPC,
                protocol_version=version,
            )
            for version in (PROTOCOL_VERSION_CURRENT, PROTOCOL_VERSION_0_3)
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        security_schemes=schemes,
        security_requirements=[
            SecurityRequirement(schemes={"apiKey": StringList()}),
            SecurityRequirement(schemes={"bearer": StringList()}),
        ],
        # Files come as attachments, data parts as JSON (server/apis/a2a/parts.py).
        default_input_modes=["text/plain", "application/json", "application/octet-stream"],
        default_output_modes=["text/plain", "application/octet-stream"],
        skills=skills,
    )
