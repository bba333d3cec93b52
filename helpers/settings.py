"""User settings: one pydantic model, stored in `usr/settings.json` (mode 0600).

Every field can be overridden by an environment variable `CADRE_<FIELD>`
(`CADRE_CHAT_MODEL=openai/gpt-4.1-mini`, `CADRE_API_KEY=...`). Overrides are
applied when settings are loaded and never written back to the file, so a key
given in the environment does not end up on disk.

Why one module past 400 lines (docs/architecture.md, "Module size"): about 300
of them are the `Settings` model's field declarations, one per setting with
the words of its form field; they are one schema, read top to bottom in the
order the settings form shows them. Loading, saving and the environment's
overrides are the last 80 lines; split from the schema they would only be
imported back together.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from helpers.errors import UserError
from helpers.files import usr_path, write_text_atomic
from helpers.mcp_config import McpConfigError, parse_mcp_servers
from helpers.names import RULE, is_plain_name
from helpers.valid_text import is_valid_value

log = logging.getLogger(__name__)

ENV_PREFIX = "CADRE_"
#: What a text setting holding a lone surrogate is told.
NOT_TEXT = ("holds characters that are not valid text (a lone surrogate such as \\ud800):"
            " retype the value")  # fmt: skip


#: The settings form's headings, in the order the page shows them.
GROUPS = (
    "Model", "Utility model", "Embeddings", "Local model", "Agents", "Memory", "Web search",
    "Limits and timeouts", "Budget", "History", "Code execution", "Server and security",
    "Single sign-on", "MCP servers",
)  # fmt: skip


def about(title: str, description: str, group: str, unit: str = "", **extra: Any) -> dict[str, Any]:
    """A field's words for the settings form: its label, a one-line hint, its heading
    (one of GROUPS), its unit; `extra` adds what the form needs more (`secret`, `kind`,
    `options` labels of a fixed set of values)."""
    return {
        "title": title,
        "description": description,
        "json_schema_extra": {"group": group, "unit": unit, **extra},
    }


class Settings(BaseModel):
    """Everything a user can configure. Field names are the stored keys; each field says
    (`about`) how the settings form labels, explains and groups it."""

    model_config = ConfigDict(extra="ignore", validate_assignment=True)

    # Chat model: the one that runs the agents' loops. The default is the small
    # embedded model, so Cadre works with no provider; onboarding sets a real one.
    chat_model: str = Field(
        "local/qwen2.5-coder-1.5b",
        **about("Model", "The model that runs the agents, as provider/name "
                "(e.g. openai/gpt-4.1-mini) or local/<name>.", "Model"),
    )  # fmt: skip
    chat_api_base: str = Field(
        "", **about("API address", "The provider's URL; empty: its usual one.", "Model")
    )
    chat_api_key: str = Field(
        "", **about("API key", "The key the provider gave you.", "Model", secret=True)
    )
    chat_ctx_length: int = Field(
        128_000, gt=0,
        **about("Context window", "How much text the model reads at once.", "Model", "tokens"),
    )  # fmt: skip
    chat_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        **about("Extra parameters", 'Sent with every call, as a JSON object, '
                'e.g. {"temperature": 0.2}.', "Model", "JSON"),
    )  # fmt: skip

    # Utility model: summaries, chat names, memory work.
    util_model: str = Field(
        "local/qwen2.5-coder-1.5b",
        **about("Model", "A cheaper model for chat names, summaries and memory work.",
                "Utility model"),
    )  # fmt: skip
    util_api_base: str = Field(
        "", **about("API address", "The provider's URL; empty: its usual one.", "Utility model")
    )
    util_api_key: str = Field(
        "", **about("API key", "The key the provider gave you.", "Utility model", secret=True)
    )
    util_ctx_length: int = Field(
        128_000, gt=0,
        **about("Context window", "How much text the model reads at once.", "Utility model",
                "tokens"),
    )  # fmt: skip
    util_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        **about("Extra parameters", "Sent with every call, as a JSON object.", "Utility model",
                "JSON"),
    )  # fmt: skip

    # Embedding model: memory and knowledge search.
    embed_model: str = Field(
        "openai/text-embedding-3-small",
        **about("Model", "Turns text into vectors so memories are found by meaning; "
                "without one, by keywords only.", "Embeddings"),
    )  # fmt: skip
    embed_api_base: str = Field(
        "", **about("API address", "The provider's URL; empty: its usual one.", "Embeddings")
    )
    embed_api_key: str = Field(
        "", **about("API key", "The key the provider gave you.", "Embeddings", secret=True)
    )
    embed_ctx_length: int = Field(
        8_192, gt=0,
        **about("Longest input", "The most text embedded in one piece.", "Embeddings", "tokens"),
    )  # fmt: skip
    embed_kwargs: dict[str, Any] = Field(
        default_factory=dict,
        **about("Extra parameters", "Sent with every call, as a JSON object.", "Embeddings",
                "JSON"),
    )  # fmt: skip

    #: Local (`local/<name>`) models: the GGUF file (empty: the built-in Qwen2.5-Coder 1.5B),
    #: its context length and CPU threads (0: all).
    local_model_path: str = Field(
        "", **about("Model file", "A model file on this computer for local/<name> models (a "
                    ".gguf file, as llama.cpp runs); empty: the built-in one.",
                    "Local model"),
    )  # fmt: skip
    local_ctx_length: int = Field(
        8_192, ge=512,
        **about("Context window", "How much text a local model reads at once.", "Local model",
                "tokens"),
    )  # fmt: skip
    local_threads: int = Field(
        0, ge=0,
        **about("CPU threads", "Cores a local model may use; 0: all of them.", "Local model",
                "threads"),
    )  # fmt: skip
    #: Hold replies to the reply schema: local models always; remote ones when "on",
    #: or "auto" where litellm says the model supports a response schema.
    structured_output: Literal["auto", "on", "off"] = Field(
        "auto",
        **about("Keep replies to the agents' format", "Holds each reply to the agents' reply "
                "form, so fewer are unusable (structured output; local models always are).",
                "Model",
                options={"auto": "Auto: where the model supports it", "on": "On", "off": "Off"}),
    )  # fmt: skip

    #: The memory area chats use when they belong to no project.
    memory_area: str = Field(
        "default",
        **about("Memory area", "Where chats outside a project keep their memories.", "Memory"),
    )  # fmt: skip
    #: Before an agent starts on a message, put the most relevant memories (and
    #: knowledge) into its prompt, up to this many tokens (0: off).
    memory_recall_tokens: int = Field(
        600, ge=0,
        **about("Recalled memories", "Relevant memories put before each task, at most this "
                "much; 0: none.", "Memory", "tokens"),
    )  # fmt: skip
    #: After each run, ask the utility model whether the work solved something worth
    #: remembering, and save it to the `solutions` memories.
    memory_memorize: bool = Field(
        False,
        **about("Remember solutions", "After each run, the utility model writes down a "
                "reusable solution.", "Memory"),
    )  # fmt: skip
    #: A SearXNG instance for the search_engine tool (empty: none).
    searxng_url: str = Field(
        "", **about("SearXNG address", "A SearXNG server for web search; empty: no web search.",
                    "Web search"),
    )  # fmt: skip

    #: Agent 0's profile (a folder name under agents/ or usr/agents/).
    agent_profile: str = Field(
        "agent0",
        **about("Agent 0's profile", "The role and prompts of the agent you talk to.", "Agents",
                kind="profile"),
    )  # fmt: skip
    #: Key of the external HTTP API; empty disables it.
    api_key: str = Field(
        "", **about("External API key", "The X-API-Key of /api/v1; empty: the API is off.",
                    "Server and security", secret=True, kind="apikey"),
    )  # fmt: skip
    #: Login for the web UI (required when serving on an address other than loopback).
    auth_login: str = Field(
        "", **about("Login", "Needed to serve on an address other than 127.0.0.1; "
                    "empty: no login asked.", "Server and security"),
    )  # fmt: skip
    auth_password: str = Field(
        "", **about("Password", "The login's password (stored hashed).", "Server and security",
                    secret=True),
    )  # fmt: skip
    #: Host names (besides loopback names and the address Cadre serves on) that the
    #: browser may use to reach Cadre: a name of this machine, or a reverse proxy's.
    allowed_hosts: list[str] = Field(
        default_factory=list,
        **about("Allowed host names", "Other names the browser may reach Cadre by, "
                "one per line (name or name:port).", "Server and security"),
    )  # fmt: skip
    #: Addresses of reverse proxies whose `X-Forwarded-For` header names the client.
    trusted_proxies: list[str] = Field(
        default_factory=list,
        **about("Trusted proxies", "Reverse proxies' addresses or networks, one per line.",
                "Server and security"),
    )  # fmt: skip
    #: The tools members' agents may use (accounts/: admins' agents may use every tool).
    member_tools: list[str] = Field(
        default_factory=list,
        **about("Tools members may use", "Tool names, one per line (server.* for an MCP "
                "server's); empty: all. Admins use every tool.", "Server and security"),
    )  # fmt: skip
    #: Secrets tools may use as §§secret(NAME); their values are never shown or stored.
    secrets: dict[str, str] = Field(
        default_factory=dict,
        **about("Secrets", "NAME=value, one per line; agents write §§secret(NAME) and never "
                "see the value.", "Server and security", kind="secrets"),
    )  # fmt: skip

    # -- single sign-on (issue 35): an OpenID Connect provider, or a reverse proxy's login --
    #: The provider's issuer URL; its /.well-known/openid-configuration says the rest.
    oidc_issuer: str = Field(
        "", **about("Provider (issuer URL)", "The OpenID Connect provider's address, e.g. "
                    "https://sso.example.org/realms/main; empty: no single sign-on.",
                    "Single sign-on"),
    )  # fmt: skip
    oidc_provider_name: str = Field(
        "", **about("Provider's name", 'On the login page\'s button: "Log in with <name>"; '
                    'empty: "single sign-on".', "Single sign-on"),
    )  # fmt: skip
    oidc_client_id: str = Field(
        "", **about("Client ID", "The ID the provider gave Cadre.", "Single sign-on")
    )
    oidc_client_secret: str = Field(
        "", **about("Client secret", "The secret the provider gave Cadre.", "Single sign-on",
                    secret=True),
    )  # fmt: skip
    oidc_scopes: str = Field(
        "openid profile email",
        **about("Scopes", "What Cadre asks the provider for, separated by spaces (openid "
                "always).", "Single sign-on"),
    )  # fmt: skip
    #: The ID token's claim that names the user; `email` when the token lacks it.
    oidc_user_claim: str = Field(
        "preferred_username",
        **about("Claim with the user's name", "The ID token's claim that is the user's name "
                "in Cadre; without it, their email.", "Single sign-on"),
    )  # fmt: skip
    #: Whoever's `oidc_admin_claim` holds `oidc_admin_value` is an admin, anyone else a
    #: member, set again at every login; an empty value leaves roles to Cadre's admins.
    oidc_admin_claim: str = Field(
        "groups", **about("Claim that makes an admin", "The ID token's claim looked at for "
                          "the value below (a list, or one value).", "Single sign-on"),
    )  # fmt: skip
    oidc_admin_value: str = Field(
        "", **about("Value that makes an admin", "Who has it in that claim (e.g. "
                    "cadre-admins) is an admin, others members, set at each login; empty: "
                    "roles are Cadre's.", "Single sign-on"),
    )  # fmt: skip
    #: Someone the provider or the proxy vouches for gets an account on first sight.
    sso_create_users: bool = Field(
        True, **about("Make an account on first login", "Someone the provider or the proxy "
                      "vouches for becomes a member; off: only accounts an admin made.",
                      "Single sign-on"),
    )  # fmt: skip
    #: A reverse proxy that logs people in (oauth2-proxy, Authelia) names them in a header,
    #: believed only from `trusted_proxies` (server/security/trusted_header.py).
    sso_header_login: bool = Field(
        False, **about("Believe the proxy's login header", "Behind a proxy that logs people "
                       "in (oauth2-proxy, Authelia): its header names the user, from trusted "
                       "proxies only.", "Single sign-on"),
    )  # fmt: skip
    sso_user_header: str = Field(
        "Remote-User", **about("Header with the user's name", "Set by the proxy; the next one "
                               "when it is missing.", "Single sign-on"),
    )  # fmt: skip
    sso_email_header: str = Field(
        "Remote-Email", **about("Header with the user's email", "Used as the name when the "
                                "one above is missing.", "Single sign-on"),
    )  # fmt: skip

    #: Consecutive unusable replies (bad JSON, unknown tool, ...) before a run stops.
    max_unusable_replies: int = Field(
        3, ge=1,
        **about("Unusable replies before stopping", "Replies in a row the agents cannot use "
                "before the run stops.", "Agents", "replies"),
    )  # fmt: skip
    #: Retries of a transient provider error (429, 5xx, connection) before the first chunk.
    llm_retries: int = Field(
        3, ge=0,
        **about("Retries", "Tries again after a passing provider error (busy, 5xx, "
                "no connection).", "Limits and timeouts", "retries"),
    )  # fmt: skip
    #: First retry delay in seconds; doubled on each further retry.
    llm_retry_delay: float = Field(
        1.0, ge=0,
        **about("First retry after", "Wait before the first retry; doubled for each next one.",
                "Limits and timeouts", "s"),
    )  # fmt: skip
    #: Seconds a whole model call may take, streaming included, before it is ended.
    llm_timeout: float = Field(
        600.0, gt=0,
        **about("Longest model call", "A call still running after this is ended, "
                "retries and streaming included.", "Limits and timeouts", "s"),
    )  # fmt: skip
    #: Seconds to wait for a model's first streamed chunk (after each retry, anew).
    llm_first_chunk_timeout: float = Field(
        120.0, gt=0,
        **about("Wait for the first words", "Each try waits this long for the reply to start.",
                "Limits and timeouts", "s"),
    )  # fmt: skip
    #: Seconds of silence between two streamed chunks before the stream counts as stalled.
    llm_between_chunks_timeout: float = Field(
        60.0, gt=0,
        **about("Longest pause in a reply", "Silence while a reply streams before the call "
                "counts as stalled.", "Limits and timeouts", "s"),
    )  # fmt: skip
    #: Longest reply, in characters, a model may stream; past it the call is ended and
    #: the model is told to answer shorter (a repairable error).
    llm_max_reply_chars: int = Field(
        200_000, ge=1_000,
        **about("Longest reply", "Past this the reply is cut off and the model asked to "
                "answer shorter.", "Limits and timeouts", "characters"),
    )  # fmt: skip
    #: The agents' work folder (commands run there; §§include may read it). Empty: usr/workdir.
    work_dir: str = Field(
        "", **about("Work folder", "Where commands run and files are written; "
                    "empty: usr/workdir.", "Code execution"),
    )  # fmt: skip
    #: code_execution_tool: seconds to wait for a command's first output.
    code_exec_first_output_timeout: float = Field(
        30.0, gt=0,
        **about("Wait for first output", "How long a command may stay silent at the start.",
                "Code execution", "s"),
    )  # fmt: skip
    #: code_execution_tool: seconds of silence, once output came, before returning.
    code_exec_between_output_timeout: float = Field(
        15.0, gt=0,
        **about("Wait between outputs", "Silence, once output came, before the agent gets "
                "what there is.", "Code execution", "s"),
    )  # fmt: skip
    #: code_execution_tool: most seconds one call waits (the command keeps running after,
    #: until `code_exec_stop_after` passes with nobody waiting).
    code_exec_max_timeout: float = Field(
        180.0, gt=0,
        **about("Longest wait per call", "The agent stops waiting then; the command keeps "
                "running a while (see below).", "Code execution", "s"),
    )  # fmt: skip
    #: Ask the user to approve each command before it runs.
    code_exec_confirm: bool = Field(
        False, **about("Ask me before each command runs", "You approve or refuse every "
                       "command an agent wants to run.", "Code execution"),
    )  # fmt: skip
    #: The Node.js program the nodejs runtime runs.
    code_exec_node: str = Field(
        "node", **about("Node.js program", "The program that runs JavaScript code.",
                        "Code execution"),
    )  # fmt: skip
    #: Variables added to the minimal environment code sessions start with (PATH, HOME,
    #: LANG, ...): nothing of Cadre's own environment (provider keys) reaches a command
    #: unless it is named here.
    code_exec_env: dict[str, str] = Field(
        default_factory=dict,
        **about("Environment variables", 'Given to commands, as a JSON object, e.g. '
                '{"PIP_INDEX_URL": "https://pypi.example.org/simple"}.', "Code execution",
                "JSON"),
    )  # fmt: skip
    #: Share of the chat model's context length the history may take (the rest:
    #: system prompt, extras, the reply).
    history_ratio: float = Field(
        0.7, gt=0, lt=1,
        **about("Room for the conversation", "How much of the context window the conversation "
                "may fill (0.7: 70 %); the rest is for instructions and the reply.", "History",
                "of the window"),
    )  # fmt: skip
    #: How the history's share is split: current topic, sealed topics, bulks.
    history_current_share: float = Field(
        0.5, gt=0, lt=1,
        **about("Room for the task at hand", "Of the conversation's room: the messages of "
                "the current task.", "History", "of the room"),
    )  # fmt: skip
    history_topics_share: float = Field(
        0.3, gt=0, lt=1,
        **about("Room for finished tasks", "Of the conversation's room: summaries of finished "
                "tasks.", "History", "of the room"),
    )  # fmt: skip
    history_bulks_share: float = Field(
        0.2, gt=0, lt=1,
        **about("Room for the oldest work", "Of the conversation's room: the oldest work, "
                "summarised in bulk.", "History", "of the room"),
    )  # fmt: skip
    #: Chat budget (0: none): tokens, US dollars and model calls over the chat's
    #: life, and seconds per run. Running out: the agent answers, then the run stops.
    budget_tokens: int = Field(
        0, ge=0,
        **about("Tokens per chat", "When used up, the agent answers and stops; 0: no limit.",
                "Budget", "tokens"),
    )  # fmt: skip
    budget_cost: float = Field(
        0.0, ge=0,
        **about("Cost per chat", "When spent, the agent answers and stops; 0: no limit.",
                "Budget", "USD"),
    )  # fmt: skip
    budget_calls: int = Field(
        0, ge=0,
        **about("Model calls per chat", "When made, the agent answers and stops; 0: no limit.",
                "Budget", "calls"),
    )  # fmt: skip
    budget_seconds: float = Field(
        0.0, ge=0,
        **about("Time per run", "When over, the agent answers and stops; 0: no limit.",
                "Budget", "s"),
    )  # fmt: skip
    #: Issue 35: each member's limits unless an admin set their own on them (accounts/
    #: limits.py); admins have only those set on them. 0: no limit.
    member_max_runs: int = Field(
        0, ge=0,
        **about("Member's chats at once", "Chats of one member that may run at the same time; "
                "0: no limit.", "Budget", "chats"),
    )  # fmt: skip
    member_tokens_per_day: int = Field(
        0, ge=0,
        **about("Member's tokens per day", "Past it, a member's runs stop until midnight UTC; "
                "0: no limit.", "Budget", "tokens"),
    )  # fmt: skip
    member_cost_per_day: float = Field(
        0.0, ge=0,
        **about("Member's cost per day", "Past it, a member's runs stop until midnight UTC; "
                "0: no limit.", "Budget", "USD"),
    )  # fmt: skip
    member_upload_mb: int = Field(
        0, ge=0,
        **about("Member's largest upload", "The most one upload of a member may send (at most "
                "Largest upload); 0: that one.", "Budget", "MB"),
    )  # fmt: skip
    #: Deepest agent number a delegation may create (Agent 0 delegates to 1, ...).
    max_delegation_depth: int = Field(
        5, ge=0,
        **about("Deepest delegation", "The highest agent number a hand-off may create "
                "(Agent 0 hands to Agent 1, ...).", "Agents", "levels"),
    )  # fmt: skip
    #: Calls in one monologue that repeat an earlier call with the same arguments
    #: (and, for commands, the same output) before the run stops as going round in circles.
    max_repeated_calls: int = Field(
        3, ge=1,
        **about("Repeated calls before stopping", "An agent that makes the same call again "
                "this often, with nothing new learned, is stopped.", "Agents", "calls"),
    )  # fmt: skip

    # Part A of issue 18 (the model seam).
    #: Which client makes model calls: "auto" the lean OpenAI-SDK client where the
    #: provider speaks OpenAI's API (much less CPU per call and chunk), litellm for the rest.
    model_client: Literal["auto", "litellm", "openai"] = Field(
        "auto",
        **about("How Cadre calls the model", "Auto: directly where the provider speaks "
                "OpenAI's protocol (less CPU), else through the litellm library.", "Model",
                options={"auto": "Auto: directly where possible",
                         "litellm": "Through litellm for every model",
                         "openai": "Directly for every model"}),
    )  # fmt: skip

    # Issue 19, MCP client: tools of MCP servers for every agent.
    #: MCP servers, as the JSON desktop clients use ({"mcpServers": {...}}); see
    #: helpers/mcp_config.py. Checked on save: a wrong value is refused with where and why.
    mcp_servers: str = Field(
        "",
        **about("MCP servers", 'Tool servers the agents may use, as JSON: {"mcpServers": '
                '{"<name>": {"command": ...} or {"url": ...}}}; empty: none.', "MCP servers",
                "JSON", kind="mcp_servers"),
    )  # fmt: skip
    #: Seconds an MCP tool call may take before it is cut (the model hears so).
    mcp_tool_timeout: float = Field(
        120.0, gt=0,
        **about("Longest MCP tool call", "A call to an MCP server's tool still running after "
                "this is cut off.", "MCP servers", "s"),
    )  # fmt: skip
    #: Most tasks one `call_subordinates` call may run at once.
    max_parallel_subordinates: int = Field(
        4, ge=1, le=16,
        **about("Parallel subordinates", "The most subordinates one call may run at the same "
                "time (call_subordinates).", "Agents", "agents"),
    )  # fmt: skip

    # Issue 22, files-panel: the file panel of the work folder.
    #: Most megabytes one upload of the file panel may send (all its files together).
    file_upload_limit_mb: int = Field(
        100, ge=1, le=100_000,
        **about("Largest upload", "The most one upload in the Files panel may send, all its "
                "files together.", "Limits and timeouts", "MB"),
    )  # fmt: skip

    # Issue 22, part `vision`: images for vision models.
    #: Whether the chat model is sent images: "auto" asks litellm's model facts, "on" and
    #: "off" decide for every model. A model not shown images gets a note instead.
    chat_vision: Literal["auto", "on", "off"] = Field(
        "auto",
        **about("Images to the chat model", "Auto sends images to the models known to see "
                "them (litellm's list); the others are told an image was attached.", "Model",
                options={"auto": "Auto: when the model can see",
                         "on": "Always send images",
                         "off": "Never send images"}),
    )  # fmt: skip

    # --- browser part (issue 22): the browser tool and the outbound policy ---
    #: The Chromium the browser tool runs; empty: /usr/bin/chromium (Debian), else
    #: Playwright's own Chromium if installed. Read when the browser starts (its first use).
    browser_executable: str = Field(
        "", **about("Browser program", "The Chromium the browser tool runs; empty: "
                    "/usr/bin/chromium, else Playwright's own.", "Web search"),
    )  # fmt: skip
    #: Seconds one browser step (open, click, wait_for...) may take before it is cut.
    browser_timeout: float = Field(
        30.0, gt=0, le=600,
        **about("Longest browser step", "A page still loading after this is cut off and the "
                "agent gets what loaded.", "Web search", "s"),
    )  # fmt: skip
    #: Loopback and private addresses for the browser, document_query and remote MCP
    #: servers: "auto" allows them only while Cadre serves on 127.0.0.1 alone.
    outbound_private: Literal["auto", "allow", "refuse"] = Field(
        "auto",
        **about("Local and private addresses", "Whether the browser, document_query and "
                "remote MCP servers may reach this machine and its network.",
                "Server and security",
                options={"auto": "Auto: only while Cadre serves on 127.0.0.1 alone",
                         "allow": "Allow", "refuse": "Refuse"}),
    )  # fmt: skip
    # -- notifications (issue 23, notification history) --
    #: A run that took at least this long leaves a "finished" entry in the notification
    #: history when it ends (and a toast on pages showing another chat).
    notify_long_run: float = Field(
        60.0, ge=0, le=86_400,
        **about("Tell when a long run finishes", "A run that took at least this long is "
                "added to the notifications when it ends; 0: every run.", "Agents", "s"),
    )  # fmt: skip

    # --- backups part (issue 23): how much a restore may unpack ---
    #: Checked against the zip's directory before anything is unpacked, and again while
    #: unpacking (a zip bomb lies about its sizes).
    backup_restore_max_mb: int = Field(
        4096, gt=0,
        **about("Largest backup to restore", "A backup unpacking to more is refused before "
                "anything changes.", "Limits and timeouts", "MB"),
    )  # fmt: skip
    backup_restore_max_files: int = Field(
        200_000, gt=0,
        **about("Most files in a backup", "A backup holding more files is refused before "
                "anything changes.", "Limits and timeouts", "files"),
    )  # fmt: skip

    # -- sandbox (issue 24): where code sessions run (execution/sandbox*.py) --
    #: auto: bubblewrap where it works here, otherwise none with a warning.
    code_exec_sandbox: Literal["auto", "bubblewrap", "none"] = Field(
        "auto",
        **about("Sandbox for commands", "Sandboxed (by bubblewrap), commands see the system "
                "read-only, the work folder writable; none: they can do all you can.",
                "Code execution",
                options={"auto": "Auto: sandbox where possible, else none",
                         "bubblewrap": "Always sandboxed (Linux)",
                         "none": "None: commands run as you"}),
    )  # fmt: skip
    #: On: sandboxed commands reach the network through Cadre's checking proxy only (the
    #: outbound policy, Cadre's own server never); off: no network at all.
    code_exec_network: bool = Field(
        True, **about("Commands may use the network", "Through Cadre's checking proxy (as the "
                      "browser); off: no network at all. Needs a sandbox.", "Code execution"),
    )  # fmt: skip
    #: The bubblewrap program (a name on PATH or a full path).
    code_exec_bwrap: str = Field(
        "bwrap", min_length=1,
        **about("Sandbox program", "The program that makes the sandbox: bubblewrap (bwrap), "
                "a name on PATH or a full path.", "Code execution"),
    )  # fmt: skip

    # -- sandbox limits (issue 32): what one sandboxed session may use --
    #: Processes at once in one session (a fork loop stops there); 0: no limit.
    code_exec_max_processes: int = Field(
        512, ge=0, le=1_000_000,
        **about("Most processes per session", "A sandboxed session cannot start more at once "
                "(a fork loop stops there); 0: no limit.", "Code execution", "processes"),
    )  # fmt: skip
    #: Memory of one session, where this machine's cgroups let Cadre set it; 0: no limit.
    code_exec_memory_mb: int = Field(
        4096, ge=0, le=16_000_000,
        **about("Most memory per session", "Where this machine lets Cadre set it (cgroups); "
                "0: no limit.", "Code execution", "MB"),
    )  # fmt: skip
    #: Disk a session's /tmp, /var/tmp and home may take together; past it, it is stopped.
    code_exec_scratch_mb: int = Field(
        2048, ge=0, le=16_000_000,
        **about("Scratch space per session", "What a sandboxed session's /tmp and home may "
                "hold on disk; past it the session is stopped. 0: no limit.", "Code execution",
                "MB"),
    )  # fmt: skip
    #: A command still running this long after its call stopped waiting is interrupted.
    code_exec_stop_after: float = Field(
        60.0, ge=0, le=86_400,
        **about("Stop commands left running after", "A command nobody waits for any more is "
                "interrupted this long after its call stopped waiting; 0: never.",
                "Code execution", "s"),
    )  # fmt: skip

    @field_validator("*")
    @classmethod
    def _valid_text(cls, value: Any) -> Any:
        # A lone surrogate ("\ud800", half of a UTF-16 pair) is no text: it cannot be
        # written as UTF-8, sent in a request or shown; every text setting refuses it.
        if not is_valid_value(value):
            raise PydanticCustomError("text", NOT_TEXT)
        return value

    @field_validator("agent_profile")
    @classmethod
    def _profile_name(cls, name: str) -> str:
        # Checked as every profile name is (helpers/names.py): a path here made every
        # message a 400 until the file was fixed by hand.
        if name and not is_plain_name(name):
            raise PydanticCustomError("profile", "not a profile name: {rule}", {"rule": RULE})
        return name

    @field_validator("oidc_issuer")
    @classmethod
    def _issuer_address(cls, address: str) -> str:
        address = address.strip()
        if address and not re.fullmatch(r"https?://[^\s/?#]+[^\s?#]*", address):
            raise PydanticCustomError(
                "issuer",
                "not an issuer address: give the provider's https:// URL "
                "(its discovery document is that URL + /.well-known/openid-configuration)",
            )
        return address.rstrip("/")

    @field_validator("sso_user_header", "sso_email_header")
    @classmethod
    def _header_name(cls, name: str) -> str:
        # A header's name is a token (RFC 9110): letters, digits and a few marks, no spaces.
        if name and not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+", name):
            raise PydanticCustomError(
                "header", "not a header's name: letters, digits and - only, e.g. Remote-User"
            )
        return name

    @field_validator("mcp_servers")
    @classmethod
    def _valid_mcp_servers(cls, text: str) -> str:
        try:
            parse_mcp_servers(text)
        except McpConfigError as exc:
            # A custom error: its message is shown as is (no "Value error, " before it).
            raise PydanticCustomError("mcp_servers", str(exc)) from None
        # Escapes inside the JSON ("\\ud800") become lone surrogates once it is read.
        if not is_valid_value(json.loads(text) if text.strip() else ""):
            raise PydanticCustomError("text", NOT_TEXT)
        return text


def settings_path() -> Path:
    return usr_path("settings.json")


def _env_overrides() -> dict[str, Any]:
    """`CADRE_<FIELD>` variables, decoded: JSON for dict fields, a JSON array or
    comma-separated names for list fields, text otherwise."""
    overrides: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        raw = os.environ.get(ENV_PREFIX + name.upper())
        if raw is None:
            continue
        kind = str(field.annotation)
        if kind.startswith("list"):
            try:
                overrides[name] = (
                    json.loads(raw)
                    if raw.lstrip().startswith("[")
                    else [part.strip() for part in raw.split(",") if part.strip()]
                )
            except json.JSONDecodeError as exc:
                raise UserError(f"{ENV_PREFIX}{name.upper()} must be a JSON array: {exc}") from exc
        elif "dict" in kind:
            try:
                overrides[name] = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise UserError(f"{ENV_PREFIX}{name.upper()} must be a JSON object: {exc}") from exc
        else:
            overrides[name] = raw
    return overrides


def overridden_fields() -> dict[str, str]:
    """The fields an environment variable sets, with the variable's name: the form shows
    them read-only, and a change to one is refused (it would be saved and never apply)."""
    names = ((name, ENV_PREFIX + name.upper()) for name in Settings.model_fields)
    return {name: variable for name, variable in names if variable in os.environ}


def _read_file(path: Path) -> dict[str, Any]:
    """The stored settings; a damaged file is set aside (never lost) and defaults used."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        Settings.model_validate(data)
        return data
    except (ValueError, ValidationError, RecursionError) as exc:  # 100k `[`: RecursionError
        kept = path.with_name(f"settings.damaged-{int(time.time())}.json")
        os.replace(path, kept)
        log.error("settings file %s is damaged (%s); moved to %s, using defaults", path, exc, kept)
        return {}


def load_settings() -> Settings:
    """Stored settings with environment overrides applied."""
    data = _read_file(settings_path())
    data.update(_env_overrides())
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(f"invalid settings: {exc}") from exc


def save_settings(settings: Settings) -> None:
    """Store settings (owner-only: the file holds API keys)."""
    text = json.dumps(settings.model_dump(mode="json"), indent=2, sort_keys=True)
    write_text_atomic(settings_path(), text + "\n", mode=0o600)


def merge_settings(base: Settings, overrides: dict[str, Any] | None) -> Settings:
    """`base` with some fields replaced, validated (an unknown field is a UserError)."""
    if not overrides:
        return base
    unknown = set(overrides) - set(Settings.model_fields)
    if unknown:
        raise UserError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    try:
        return Settings.model_validate({**base.model_dump(), **overrides})
    except ValidationError as exc:
        raise UserError(f"invalid settings: {exc}") from exc
