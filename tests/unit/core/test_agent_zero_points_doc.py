"""docs/architecture.md's table of Agent Zero's extension points names every point of
core/tooling/agent_zero/points.py, those Cadre runs and those it does not."""

from __future__ import annotations

from core.tooling.agent_zero import points
from helpers.files import base_path


def test_every_point_is_in_the_documented_table():
    text = base_path("docs", "architecture.md").read_text()
    section = text.split("### Agent Zero's extension points", 1)[1].split("\n### ", 1)[0]
    for point in points.POINTS:
        assert f"| `{point}` |" in section, point
    for point in points.NOT_RUN:
        assert f"`{point}" in section, point
    assert not set(points.POINTS) & set(points.NOT_RUN)
