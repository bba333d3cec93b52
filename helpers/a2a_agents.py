"""The remote A2A agents Cadre's agents may delegate to (the `a2a_agents` setting), and
their keys masked.

Each entry is `{"name", "url", "key"}`: the name agents call it by (`a2a_call`), the
address its agent card is read from (`<url>/.well-known/agent-card.json`), and the key
sent to it (as `X-API-Key` and as a bearer token; empty: none). A key is a secret: the
page and the API see it masked, a masked key sent back keeps the stored one
(`unmask_agents`), a backup without secrets empties it, and the log masks it.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from helpers.names import RULE, is_plain_name

#: What the settings form says of the setting.
HINT = (
    "Agents your agents may call with a2a_call: "
    '[{"name": "x", "url": "https://...", "key": "..."}].'
)


class A2aAgent(BaseModel):
    """One remote agent: the name agents call it by, its address, its key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64)
    url: str = Field(min_length=1, max_length=2000)
    key: str = ""

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if not is_plain_name(name):
            raise ValueError(f"not a name agents can call: {RULE}")
        return name

    @field_validator("url")
    @classmethod
    def _web_address(cls, url: str) -> str:
        url = url.strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ValueError("give the agent's http:// or https:// address")
        return url


def unique_names(agents: list[A2aAgent]) -> list[A2aAgent]:
    """`agents`, checked: two entries of one name would make a call ambiguous."""
    names = [agent.name for agent in agents]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"two remote agents are named {', '.join(twice)}: name each once")
    return agents


#: The setting's type: the entries, each name once.
A2aAgents = Annotated[list[A2aAgent], AfterValidator(unique_names)]


def mask_agents(entries: list[dict[str, Any]], mask: str) -> list[dict[str, Any]]:
    """`entries` (as dumped to JSON) with every key that is set replaced by `mask`."""
    return [{**entry, "key": mask if entry.get("key") else ""} for entry in entries]


def unmask_agents(sent: Any, stored: list[A2aAgent], mask: str) -> Any:
    """`sent` as the page sends it back: an entry whose key is `mask` gets the key stored
    for the same name and address (none when either changed: a key never goes to an
    address it was not given for). What is not a list comes back as it is."""
    if not isinstance(sent, list):
        return sent
    keys = {(agent.name, agent.url): agent.key for agent in stored}
    return [
        {**entry, "key": keys.get((entry.get("name"), str(entry.get("url", "")).rstrip("/")), "")}
        if isinstance(entry, dict) and entry.get("key") == mask
        else entry
        for entry in sent
    ]


def emptied(entries: list[Any]) -> list[Any]:
    """`entries` (settings.json's) with every key emptied: a backup without secrets."""
    return [{**entry, "key": ""} if isinstance(entry, dict) else entry for entry in entries]


def with_keys_from(entries: list[Any], source: Any) -> list[Any]:
    """`entries` (a backup's) with the keys `source` (this Cadre's list) holds for the same
    name and address; an entry `source` lacks has none."""
    found = [e for e in source if isinstance(e, dict)] if isinstance(source, list) else []
    keys = {(e.get("name"), e.get("url")): str(e.get("key") or "") for e in found}
    return [
        {**entry, "key": keys.get((entry.get("name"), entry.get("url")), "")}
        if isinstance(entry, dict) else entry
        for entry in entries
    ]  # fmt: skip


def secret_values(agents: list[A2aAgent]) -> list[str]:
    return [agent.key for agent in agents if agent.key]
