"""Telegram formatting at its limits: a fence naming a "language" longer than a message ends
(it looped for ever), and an answer holding a lone surrogate is still sent."""

from __future__ import annotations

import multiprocessing
import resource

from server.apis.telegram.formatting import LIMIT, messages, size


def _messages_bounded(text, queue):
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # 1 GB: an endless loop ends
    try:
        queue.put(("ok", [size(p) for p in messages(text)]))
    except BaseException as exc:  # noqa: BLE001
        queue.put(("error", repr(exc)[:200]))


def _run(text, timeout=60.0):
    """`messages(text)` in a process of its own, bounded in memory and time: an endless loop
    fails the test instead of hanging the run (a loaded CI machine forks slowly: 60 s)."""
    # A fresh interpreter (spawn): a child forked from a test process with threads may
    # inherit a lock some other thread held, and hang for that alone.
    spawn = multiprocessing.get_context("spawn")
    queue = spawn.Queue()
    proc = spawn.Process(target=_messages_bounded, args=(text, queue))
    proc.start()
    proc.join(timeout)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return ("hung", None)
    return queue.get(timeout=1) if not queue.empty() else ("died", proc.exitcode)


def test_a_code_fence_with_a_very_long_language_name_does_not_hang():
    # An answer (the model's, or text it copied from a web page) whose fence names a "language"
    # longer than a message: room for code goes negative, _cut never ends.
    answer = "```" + "x" * 4100 + "\nprint(1)\n```"
    outcome, sizes = _run(answer)
    assert outcome == "ok", outcome
    assert all(s <= LIMIT for s in sizes)


def test_an_answer_with_a_lone_surrogate_is_still_sent():
    # A provider's JSON may carry "\ud83d" alone (a cut emoji): the answer must still go out,
    # as text Telegram takes (it failed to encode, and nothing was sent).
    [part] = messages("Here you are \ud83d and more")
    assert part == "Here you are \ufffd and more"
    part.encode("utf-8")
