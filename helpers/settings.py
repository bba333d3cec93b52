"""User settings: one pydantic model, stored in `usr/settings.json` (mode 0600).

Every field can be overridden by an environment variable `CADRE_<FIELD>`
(`CADRE_CHAT_MODEL=openai/gpt-4.1-mini`, `CADRE_API_KEY=...`). Overrides are
applied when settings are loaded and never written back to the file, so a key
given in the environment does not end up on disk.

The schema is long (a field per setting, with the words of its form field), so its
first parts are declared in the classes `Settings` extends, one part of the form each,
in the order the form shows them (helpers/settings_about.py names them); this module
holds the last part, the checks of values, and loading, saving and the environment's
overrides.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from helpers.a2a_agents import HINT as A2A_HINT
from helpers.a2a_agents import A2aAgents
from helpers.errors import UserError
from helpers.files import usr_path, write_text_atomic
from helpers.mcp_config import McpConfigError, parse_mcp_servers
from helpers.names import RULE, is_plain_name
from helpers.settings_about import GROUPS, about
from helpers.settings_env import ENV_PREFIX, env_values
from helpers.settings_telegram import TelegramFields
from helpers.valid_text import is_valid_value

log = logging.getLogger(__name__)

#: Named here too: the form and its tests read them from the settings.
__all__ = ["GROUPS", "Settings", "about", "load_settings", "save_settings", "merge_settings",
           "overridden_fields", "settings_path"]  # fmt: skip

#: What a text setting holding a lone surrogate is told.
NOT_TEXT = ("holds characters that are not valid text (a lone surrogate such as \\ud800):"
            " retype the value")  # fmt: skip


class Settings(TelegramFields):
    """Everything a user can configure. Field names are the stored keys; each field says
    (`about`) how the settings form labels, explains and groups it. The first fields are
    declared in the classes it extends, a part of the form each (helpers/settings_about.py)."""

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
    # -- plugins (issue 39, profiles/plugins.py) --
    #: Seconds a plugin's run-event handler may take per call (core/plugin_handlers.py).
    plugin_handler_seconds: float = Field(
        10.0, gt=0, le=600,
        **about("Time a plugin's handler may take", "A plugin's handler of a run's event "
                "still busy after this is left behind and shown in Plugins; the run goes "
                "on.", "Agents", "s"),
    )  # fmt: skip
    # -- evaluations (issue 38, evals/) --
    #: Most runs of an evaluation at once (`python3 cadre.py eval`, the Evaluations panel).
    eval_parallel: int = Field(
        2, ge=1, le=16,
        **about("Evaluation runs at once", "The most tasks of an evaluation that run at the "
                "same time, each in its own chat.", "Agents", "runs"),
    )  # fmt: skip
    #: Seconds one run of an evaluation's task may take before it is stopped and fails.
    eval_task_timeout: float = Field(
        600.0, gt=0, le=86_400,
        **about("Longest evaluation run", "A task of an evaluation still running after this "
                "is stopped and counts as failed.", "Agents", "s"),
    )  # fmt: skip
    # -- cluster mode (issue 36, docs/scaling.md) --
    #: What a chat does when the node that ran it died and another node took it over: go
    #: on by itself (its agent told that a step was cut), or wait for its user to go on.
    takeover_continues: bool = Field(
        True, **about("Go on after a node failure", "In a cluster, a chat whose node died "
                      "goes on by itself on another node; off: it waits for its user.",
                      "Agents"),
    )  # fmt: skip

    # -- untrusted text (issue 37): results from outside, checked for orders --
    #: On: every result from outside (a page, a document, search results, an MCP server's
    #: answer, a file no agent of the chat wrote) is shown to the utility model, which says
    #: whether it tries to give the agent orders (core/tooling/untrusted_check.py).
    untrusted_check: bool = Field(
        False, **about("Check text from outside for orders", "The utility model reads each "
                       "page, document, MCP result or file from outside for orders to the "
                       "agent.",
                       "Server and security"),
    )  # fmt: skip
    #: What a flagged result does to the run: it pauses (the user reads the flag and resumes
    #: or stops it) or goes on (the agent is told the text tried to give orders).
    untrusted_flagged: Literal["pause", "continue"] = Field(
        "pause",
        **about("When text from outside gives orders", "What the run does when the check "
                "flags a result: pause until you resume it, or go on.",
                "Server and security",
                options={"pause": "Pause the run", "continue": "Go on, warning the agent"}),
    )  # fmt: skip

    #: Issue 40: remote A2A agents for a2a_call (helpers/a2a_agents.py; keys masked).
    a2a_agents: A2aAgents = Field(
        default_factory=list, **about("Remote A2A agents", A2A_HINT, "Agents", "JSON",
                                      kind="json_list"),
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
    data.update(env_values(Settings.model_fields))
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(_invalid(exc)) from exc


def _invalid(exc: ValidationError) -> str:
    """A refused value in plain words, naming the variable that set it (the stored file was
    checked as it was read), e.g. 'CADRE_CHAT_FALLBACKS (the setting chat_fallbacks):
    entry 1, model: Field required. Correct the variable, or unset it.'"""
    first = exc.errors()[0]
    field, *rest = first["loc"] or ("",)
    where = ", ".join(f"entry {p + 1}" if isinstance(p, int) else str(p) for p in rest)
    said = f"{where}: {first['msg']}" if where else first["msg"]
    variable = ENV_PREFIX + str(field).upper()
    if variable in os.environ:
        return f"{variable} (the setting {field}): {said}. Correct the variable, or unset it."
    return f"invalid settings: {field}: {said}. Correct it in Settings, or unset it."


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
