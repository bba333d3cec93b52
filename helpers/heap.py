"""The garbage collector, told what start-up made.

Cadre's start imports litellm, the `openai` SDK and their kin: about 390,000 objects
that live as long as the process and are never garbage. Python's full collection walks
every one of them each time, with every chat stopped meanwhile: 200 ms on a 2-core
machine, while 50 chats stream. `gc.freeze()` moves what exists at that moment out of
the collector's sight, so later collections walk only what chats made.

The cost: a cycle among those objects that becomes garbage later is never collected.
Start-up's objects are modules, classes and caches, so that is at most a little memory
once; `settle` therefore runs once, when start-up's imports are done.
"""

from __future__ import annotations

import gc


def settle() -> int:
    """Collect what start-up left as garbage, then freeze the rest; how many objects were
    frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
