"""The names a program that embeds Cadre, a prompt companion or a tool of its own uses."""

from __future__ import annotations


def test_a_chat_keeps_agent_zeros_name_for_it():
    from agent import AgentContext, Chat

    assert AgentContext is Chat


def test_an_agent_keeps_agent_zeros_names_for_its_history():
    from agent import Agent

    for old, new in [
        ("hist_add_user_message", "add_user_message"),
        ("hist_add_ai_response", "add_reply"),
        ("hist_add_tool_result", "add_tool_result"),
        ("hist_add_warning", "add_warning"),
    ]:
        assert callable(getattr(Agent, old)) and callable(getattr(Agent, new))
