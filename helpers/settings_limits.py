"""The settings of limits and timeouts, the work folder, code execution's timing, history,
budgets and members' limits: the third part of the `Settings` schema
(helpers/settings_about.py says how the parts chain)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from helpers.settings_about import about
from helpers.settings_access import AccessFields
from helpers.tool_rules import ToolRule


class LimitFields(AccessFields):
    """The settings' fields up to the limits, timeouts and budgets."""

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
    # -- approval rules for every tool (issue 37): helpers/tool_rules.py --
    #: allow, ask or deny per tool, method, MCP tool, profile, project; the most specific
    #: rule wins; no rule: allow.
    tool_rules: list[ToolRule] = Field(
        default_factory=list,
        **about("Tool rules", 'Which tool calls run, ask you first, or are refused; JSON, e.g. '
                '[{"tool": "browser:open", "rule": "ask"}].',
                "Code execution", "JSON", kind="json_list"),
    )  # fmt: skip
    #: Seconds a held call waits for its answer (0: no limit); then `approval_timeout_action`.
    approval_timeout: float = Field(
        0.0, ge=0, le=7 * 86_400,
        **about("Wait for an answer", "How long a call that asks waits for your answer; "
                "0: no limit.", "Code execution", "s"),
    )  # fmt: skip
    approval_timeout_action: Literal["pause", "deny"] = Field(
        "pause",
        **about("When nobody answers in time", "Pause the run (the call still waits), or "
                "refuse the call.", "Code execution",
                options={"pause": "Pause the run", "deny": "Refuse the call"}),
    )  # fmt: skip
    #: The same for a scheduled task's run, where nobody watches.
    approval_timeout_action_scheduled: Literal["pause", "deny"] = Field(
        "deny",
        **about("When nobody answers in a scheduled run", "What a scheduled task's run does "
                "when its wait runs out.", "Code execution",
                options={"pause": "Pause the run", "deny": "Refuse the call"}),
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
