"""The sandbox's system-call filter is built for each machine it knows, and for no other."""

from __future__ import annotations

import pytest

from execution import syscall_filter


@pytest.mark.parametrize("machine", sorted(syscall_filter.MACHINES))
def test_each_known_machine_gets_a_whole_program(machine):
    """Every jump lands inside the program (the assembler checks each), in whole
    instructions of 8 bytes, ending with the answers the jumps lead to."""
    program = syscall_filter.program(machine)
    assert program is not None and len(program) % 8 == 0
    assert 20 < len(program) // 8 < 256


def test_an_unknown_machine_gets_none_rather_than_wrong_numbers():
    assert syscall_filter.program("s390x") is None
