"""helpers/heap.py: what exists when `settle` runs is out of the collector's sight, and
what comes later is collected as before. In a process of its own: a frozen heap is for
the whole process."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import gc
from helpers import heap

class Node:
    pass

def ring():
    node = Node()
    node.me = node  # a cycle: only the collector can free it
    return node

before = ring()
garbage = ring(); del garbage  # start-up's garbage: collected first, not frozen
frozen = heap.settle()
after = ring()
tracked = gc.get_objects()
print(frozen > 0, any(o is before for o in tracked), any(o is after for o in tracked))
del tracked, after
print(gc.collect() > 0)  # a later cycle is still garbage to the collector
"""


def test_start_ups_objects_are_set_aside_and_later_ones_collected():
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == ["True", "False", "True", "True"]
