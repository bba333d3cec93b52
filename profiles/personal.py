"""What a person's own folders may bring: prompts and settings, never a program to run.

A member's own agent profiles and skills live in their space (`<space>/agents/`,
`<space>/skills/`, and their projects' folders: helpers/folders.py `in_personal_space`),
found only by their own agents. The shared ones (usr/agents/, usr/skills/) are the
admin's. Whatever runs on the host is the admin's alone, so from a person's own folder:

- no Python is loaded or run: a tool file (`tools/*.py`, core/tooling/tool_loader.py) is
  unusable with the reason, a prompt's companion (`prompts/*.py`, profiles/prompts.py) is
  left out and its prompt renders without it; each with a line in the log;
- a profile's settings.json may set only the settings of `OWN_PROFILE_SETTINGS`: how its
  agents work (models, windows, history, budgets, timeouts), never a setting that names a
  program the host runs (helpers/programs.py `GUARDED_SETTINGS`), lets agents reach more
  (the sandbox, the network, folders, other people's access, the server's limits) or
  sends the server's requests and keys somewhere else (a model's or a search's address).
  A settings.json that sets another one makes the profile unusable, with the reason.

Every setting is in `OWN_PROFILE_SETTINGS` or `REFUSED`, each with why: a test holds that,
so a new setting is decided on when it is added (one not decided is refused).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.folders import in_personal_space
from helpers.programs import GUARDED_SETTINGS

#: The settings a profile in a person's own folder may set: how its agents work.
OWN_PROFILE_SETTINGS = frozenset({
    "chat_model", "chat_api_key", "chat_ctx_length", "chat_kwargs",
    "util_model", "util_api_key", "util_ctx_length", "util_kwargs",
    "embed_model", "embed_api_key", "embed_ctx_length", "embed_kwargs",
    "structured_output", "memory_area", "memory_recall_tokens", "memory_memorize",
    "agent_profile", "model_client", "chat_vision",
    "max_unusable_replies", "llm_retries", "llm_retry_delay", "llm_timeout",
    "llm_first_chunk_timeout", "llm_between_chunks_timeout", "llm_max_reply_chars",
    "code_exec_first_output_timeout", "code_exec_between_output_timeout",
    "code_exec_max_timeout", "code_exec_confirm", "code_exec_env",
    "history_ratio", "history_current_share", "history_topics_share", "history_bulks_share",
    "budget_tokens", "budget_cost", "budget_calls", "budget_seconds",
    "max_delegation_depth", "max_repeated_calls", "mcp_tool_timeout", "browser_timeout",
    "notify_long_run",
})  # fmt: skip

_PROGRAM = "names a program the server runs"
_ADDRESS = "sends the server's requests (and its keys) to an address of the profile's choosing"
_ACCESS = "decides who reaches Cadre and what members may use"
_LIMIT = "is a limit the admin sets for the server and its people"
_REACH = "lets agents reach more of this machine or its network"
_LOCAL = "sets the server's one built-in model, which everyone shares"

_ADDRESSES = ("chat_api_base", "util_api_base", "embed_api_base", "searxng_url")
_ACCESS_SETTINGS = (
    "api_key", "auth_login", "auth_password", "allowed_hosts", "trusted_proxies",
    "member_tools", "member_models", "member_secrets", "oidc_issuer", "oidc_provider_name",
    "oidc_client_id",
    "oidc_client_secret", "oidc_scopes", "oidc_user_claim", "oidc_admin_claim",
    "oidc_admin_value", "sso_create_users", "sso_header_login", "sso_user_header",
    "sso_email_header",
)  # fmt: skip
_LIMITS = (
    "member_max_runs", "member_tokens_per_day", "member_cost_per_day", "member_upload_mb",
    "file_upload_limit_mb", "backup_restore_max_mb", "backup_restore_max_files",
    "max_parallel_subordinates", "code_exec_max_processes", "code_exec_memory_mb",
    "code_exec_scratch_mb", "code_exec_stop_after",
    "eval_parallel", "eval_task_timeout", "plugin_handler_seconds",
)  # fmt: skip

#: The settings a profile in a person's own folder may not set, with why.
REFUSED: dict[str, str] = {
    **dict.fromkeys(GUARDED_SETTINGS, _PROGRAM),
    "code_exec_sandbox": "decides whether commands run in the sandbox",
    "code_exec_node": _PROGRAM,
    **dict.fromkeys(_ADDRESSES, _ADDRESS),
    **dict.fromkeys(("local_ctx_length", "local_threads"), _LOCAL),
    **dict.fromkeys(_ACCESS_SETTINGS, _ACCESS),
    "secrets": "holds secrets' values, which are set in Settings or a project's secrets.json",
    **dict.fromkeys(_LIMITS, _LIMIT),
    **dict.fromkeys(("work_dir", "outbound_private", "code_exec_network"), _REACH),
    "takeover_continues": "is the server's, for every chat a failed node leaves",
    "a2a_agents": _ADDRESS,  # remote agents' addresses and keys (issue 40)
    # A fallback names its own address and key: the server's to choose, as the addresses are.
    **dict.fromkeys(
        ("chat_fallbacks", "util_fallbacks", "embed_fallbacks", "model_presets"), _ADDRESS
    ),
    **dict.fromkeys(("fallback_cooldown", "provider_limits"), _LIMIT),
    **dict.fromkeys(
        ("untrusted_check", "untrusted_flagged"),
        "guards every agent against text from outside: the admin decides it",
    ),
    # Where traces go, with what credentials and text, is the server's (issue 38).
    **dict.fromkeys(
        ("tracing", "tracing_endpoint", "tracing_headers", "tracing_sample_ratio", "trace_content"),
        "decides what of every run leaves for a trace collector: the admin decides it",
    ),  # fmt: skip
    # Voice (issue 40): the page's microphone and speaker, the server's models for them.
    **dict.fromkeys(("stt_api_base", "tts_api_base"), _ADDRESS),
    **dict.fromkeys(
        (
            "stt_model",
            "stt_api_key",
            "tts_model",
            "tts_api_key",
            "tts_voice",
            "voice_send_at_once",
            "voice_read_aloud",
        ),
        "is the page's voice, set for the server: no agent uses it",
    ),  # fmt: skip
    # The Telegram bot is the server's: its token, who may use it and where it connects.
    **dict.fromkeys(
        ("telegram_bot_token", "telegram_allowed_users", "telegram_api_base"),
        "is the server's Telegram bot (its token, who may talk to it, its address)",
    ),
    # The tool policy is the admin's: a profile of one's own could loosen it.
    **dict.fromkeys(
        (
            "tool_rules",
            "approval_timeout",
            "approval_timeout_action",
            "approval_timeout_action_scheduled",
        ),
        "is the admin's tool policy (which calls run, ask or are refused)",
    ),
}

#: Why a setting that is in neither list (new since) is refused.
UNDECIDED = "is not one a profile of a person's own may set (yet)"

#: What a `*_kwargs` setting of such a profile may pass the model: how it samples and
#: answers, never where the call goes or with what credentials (litellm takes `api_base`,
#: `api_key`, credentials files... among its extra parameters).
MODEL_OPTIONS = frozenset({
    "temperature", "top_p", "top_k", "min_p", "max_tokens", "max_completion_tokens",
    "presence_penalty", "frequency_penalty", "repetition_penalty", "seed", "stop",
    "reasoning_effort", "thinking", "num_ctx",
})  # fmt: skip
_KWARGS = ("chat_kwargs", "util_kwargs", "embed_kwargs")

#: What the person reads when something of their own folder is not run.
NO_PYTHON = (
    "it is in a person's own folder, where no Python is run on the server: only the admin's"
    " shared profiles (usr/agents/) bring code. Remove the file, or ask an admin to add the"
    " profile to usr/agents/"
)


def check_own_settings(root: Path, settings: dict[str, Any]) -> None:
    """ValueError saying why, when the profile at `root` is in a person's own folder and its
    settings.json (`settings`) sets what such a profile may not (profiles/catalog.py makes
    it unusable with the reason, and logs it)."""
    if in_personal_space(root) and (problem := settings_problem(settings)):
        raise ValueError(problem)


def settings_problem(settings: dict[str, Any]) -> str:
    """Why a profile of a person's own folder may not have this settings.json ("": it may),
    in words that name each setting and why."""
    refused = sorted(name for name in settings if name not in OWN_PROFILE_SETTINGS)
    if refused:
        why = "; ".join(f"{name} {REFUSED.get(name, UNDECIDED)}" for name in refused)
        return (
            f"settings.json: a profile in your own folder may not set {', '.join(refused)}"
            f" ({why}): remove {'it' if len(refused) == 1 else 'them'}, or ask an admin"
        )
    for name in _KWARGS:
        options = settings.get(name)
        extra = sorted(set(options) - MODEL_OPTIONS) if isinstance(options, dict) else []
        if extra:
            return (
                f"settings.json: {name}: a profile in your own folder may pass the model only"
                f" {', '.join(sorted(MODEL_OPTIONS))}; not {', '.join(extra)}"
            )
    return ""
