"""The launcher's id map: root and the session's uid swapped, every other id kept."""

from __future__ import annotations

import pytest

from execution.sandbox_launch import LAST_ID, swap_map


def extents(text: str) -> list[tuple[int, int, int]]:
    return [tuple(map(int, line.split())) for line in text.splitlines()]  # type: ignore[misc]


@pytest.mark.parametrize("uid", [1, 1000, 0x7000_0000 + 12345, LAST_ID])
def test_the_map_swaps_root_and_the_session_uid_and_keeps_the_rest(uid):
    lines = extents(swap_map(uid))
    assert len(lines) <= 340  # the kernel's most extents in one map

    def through(inside: int) -> int:
        for first, outside, count in lines:
            if first <= inside < first + count:
                return outside + inside - first
        raise AssertionError(f"{inside} is not mapped")

    assert through(0) == uid and through(uid) == 0
    for other in {1, 2, 999, uid - 1, uid + 1, LAST_ID} - {0, uid}:
        if 0 < other <= LAST_ID:
            assert through(other) == other
    # One to one: no two extents overlap on either side, and all of 0..LAST_ID is covered.
    for side in (0, 1):
        spans = sorted((line[side], line[side] + line[2]) for line in lines)
        assert spans[0][0] == 0 and spans[-1][1] == LAST_ID + 1
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
