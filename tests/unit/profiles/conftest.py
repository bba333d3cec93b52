"""What the profiles' tests share."""

from __future__ import annotations

import pytest

from profiles import skills


@pytest.fixture
def shipped(tmp_path, monkeypatch):
    """An empty folder standing for the skills Cadre ships."""
    folder = tmp_path / "shipped-skills"
    folder.mkdir()
    monkeypatch.setattr(skills, "SHIPPED_SKILLS", folder)
    return folder
