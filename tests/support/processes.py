"""What /proc says of a process a test started (its state letter), for the tests' checks."""

from __future__ import annotations


def state(pid: int) -> str:
    """Process `pid`'s state ("S", "R", "Z" for a zombie...), "" when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""
