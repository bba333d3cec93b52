"""Agent Zero 1.x's named extension points, and where each falls in Cadre's run.

One table, read by the code that runs extensions (extension_points.py), by the status
a page can show (`point_state`) and mirrored in docs/architecture.md. A point Cadre
runs says when (the run event or loop seam) and what its extensions may change; a
point with no meaning in Cadre says why, and its extensions are reported as not run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Point:
    """Where an Agent Zero point runs in Cadre, and what its extensions get."""

    #: When it runs: Cadre's run event or the loop's step (core/events.py, core/agent.py).
    when: str
    #: The keywords `execute` is called with, and what of them is read back.
    gives: str
    #: Agent Zero calls these without awaiting: `execute` must be a plain function.
    sync: bool = False


#: The points Cadre runs (in the order a run meets them).
POINTS: dict[str, Point] = {
    "agent_init": Point(
        "MonologueStarted, an agent's first (before monologue_start)",
        "nothing; may set agent.data",
    ),
    "monologue_start": Point(
        "MonologueStarted: an agent starts its loop on a task",
        "loop_data (kept for the whole monologue: extras_persistent, params_persistent)",
    ),
    "message_loop_start": Point(
        "an iteration that calls the model, once its prompt's parts are there",
        "loop_data (iteration counts from 0; params_temporary is emptied)",
    ),
    "message_loop_prompts_before": Point(
        "then, before the system prompt is given to extensions", "loop_data"
    ),
    "system_prompt": Point(
        "the system prompt was built from the profile's files",
        "system_prompt (a list holding Cadre's prompt: append or change parts), loop_data",
    ),
    "message_loop_prompts_after": Point(
        "the system prompt is final, before the messages are made",
        "loop_data.system (list of parts), extras_temporary/extras_persistent (text added "
        "to the last user message)",
    ),
    "before_main_llm_call": Point(
        "the model call is about to go out (after budgets and recalled memories)",
        "loop_data: changes to system and extras_* reach this very call",
    ),
    "tool_execute_before": Point(
        "a tool is about to run (after ToolStarted), before its arguments are checked",
        "tool_name, tool_args (change it: the tool gets the changed arguments)",
    ),
    "tool_execute_after": Point(
        "a tool returned, before its result goes into history (then ToolEnded)",
        "tool_name, response (change response.message: the model reads the change)",
    ),
    "hist_add_tool_result": Point(
        "a tool's result is added to history",
        "data: {tool_name, tool_result} (change tool_result: history keeps the change)",
        sync=True,
    ),
    "message_loop_end": Point("IterationEnded (not when the run was stopped)", "loop_data"),
    "monologue_end": Point(
        "the agent's loop ended (with an answer or an error; not when stopped)", "loop_data"
    ),
    "process_chain_end": Point(
        "RunEnded: the run unwound (after the caller has the answer and the chat is saved)",
        "data ({}); agent is Agent 0",
    ),
    "util_model_call_before": Point(
        "a utility-model call is about to go out",
        "call_data: {system, message} (change them: the call sends the change)",
    ),
    "util_model_call_after": Point(
        "a utility-model call returned", "call_data, response (read only)"
    ),
}

_STREAM = "Cadre streams the reply into the log and parses it itself; it has no stream filters"
_PAGE = "the page is Cadre's own: Agent Zero's web UI and its hooks are not there"

#: Agent Zero's points with no meaning in Cadre: their extensions are not run.
NOT_RUN: dict[str, str] = {
    "response_stream": _STREAM,
    "response_stream_chunk": _STREAM,
    "response_stream_end": _STREAM,
    "reasoning_stream": _STREAM,
    "reasoning_stream_chunk": _STREAM,
    "reasoning_stream_end": _STREAM,
    "hist_add_before": "Cadre's history entries are rendered from prompt files, not dicts",
    "chat_model_call_before": "use before_main_llm_call: Cadre's model seam takes no swaps",
    "chat_model_call_after": "Cadre tells a model call's reply as the ModelCalled event",
    "tool_output_update": "Cadre shows a tool's progress on its own log row",
    "error_format": "Cadre's errors are shown in its own plain words",
    "banners": _PAGE,
    "user_message_ui": _PAGE,
    "webui_ws_connect": _PAGE,
    "webui_ws_disconnect": _PAGE,
    "webui_ws_event": _PAGE,
    "job_loop": "Cadre's scheduler has no job-loop tick",
    "startup_migration": "Cadre migrates its stored formats itself",
    "_functions": "Cadre's functions are not wrapped in implicit extension points",
}


def point_state(point: str) -> str:
    """'runs: <when>' or 'not run: <why>' for a point's extensions (a status to show)."""
    if point in POINTS:
        return f"runs: {POINTS[point].when}"
    why = NOT_RUN.get(point, "Agent Zero's point is not one Cadre knows")
    return f"not run: {why}"
