"""Agent Zero's `python.helpers.errors`, as far as Cadre has it: the repairable error.

A tool raising it has its text shown to the model, which can fix its call,
in Agent Zero as in Cadre.
"""

from __future__ import annotations

from helpers.errors import RepairableException

__all__ = ["RepairableException"]
