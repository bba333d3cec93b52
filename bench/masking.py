"""Masking secrets: what the one masking rule costs on the texts it sees most.

The rule (helpers/secrets.py) runs on every text that leaves a tool or reaches the
log: each update of a streamed reply masks the reply so far, each tool result is
masked once, and each save masks the whole history again. The figures are for five
secrets of the kinds a person sets (model keys, the external API key, a token and a
password), on 100 kB of each kind of text, and on a long chat's history as a save
masks it.
"""

from __future__ import annotations

import base64
import itertools
import random

from bench.harness import Row, timed
from helpers.secrets import SecretMasker

#: Characters of each sample text.
SIZE = 100_000


def _secrets(rng: random.Random) -> list[str]:
    def token(alphabet: str, length: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(length))

    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return [
        "sk-proj-" + token(letters + "-_", 48),
        "sk-ant-api03-" + token(letters + "-_", 95),
        token(letters + "-_", 43),  # the external API key (secrets.token_urlsafe(32))
        "ghp_" + token(letters, 36),
        "correct horse battery staple",
    ]


def _samples(rng: random.Random) -> dict[str, str]:
    words = "the of and a to in is you that it for on with as was at by this have from".split()
    prose = " ".join(rng.choice(words) for _ in range(SIZE // 3))[:SIZE]
    line = '  File "/usr/lib/python3.11/site-packages/pkg/mod_{n}.py", line {n}, in run 0x{h}\n'
    output = "".join(line.format(n=n, h=rng.randbytes(6).hex()) for n in range(SIZE // 70))
    data = base64.encodebytes(rng.randbytes(SIZE * 3 // 4)).decode()
    return {"prose": prose, "a tool's output (paths, numbers, hex ids)": output[:SIZE],
            "base64 data (76 columns)": data[:SIZE]}  # fmt: skip


def _history(messages: int) -> dict[str, object]:
    """A history as a save masks it: topics of messages, each a few hundred characters."""
    text = "some realistic text of a step in the work, with a path /tmp/x.py and a number 42. "
    topics = [{"messages": [{"ai": n % 2 == 1, "content": f"message {n}: " + text * 4}
                            for n in range(start, start + 20)]}  # fmt: skip
              for start in range(0, messages, 20)]  # fmt: skip
    return {"topics": topics, "current": {"messages": []}}


def run(quick: bool) -> list[Row]:
    rng = random.Random(11)
    values = _secrets(rng)
    masker = SecretMasker(values)
    repeat = 3 if quick else 9
    rows = [
        Row(
            f"masking: {SIZE // 1000} kB of {kind}, {len(values)} secrets",
            timed(lambda text=text: masker.mask(text), repeat) * 1000,
            "ms",
            target=5,
            note="noisy: shared CPU",
        )
        for kind, text in _samples(rng).items()
    ]
    samples = _samples(rng)
    holding = samples["prose"][: SIZE // 2] + values[1] + samples["prose"][SIZE // 2 :]
    masker.mask(holding)  # the pattern, made the first time a secret is found
    rows.append(Row(f"masking: {SIZE // 1000} kB of prose holding a secret",
                    timed(lambda: masker.mask(holding), repeat) * 1000, "ms", target=5,
                    note="noisy: shared CPU"))  # fmt: skip
    history = _history(1_000)
    rows.append(Row("masking: a 1,000-message history, as a save masks it",
                    timed(lambda: masker.mask_value(history), repeat) * 1000, "ms", target=20,
                    note="noisy: shared CPU"))  # fmt: skip
    # Secrets never seen before each time: the masker of the same secrets is made once.
    fresh = (f"a-new-secret-{n:04d}" for n in itertools.count())
    rows.append(Row(f"masking: making the masker of {len(values) + 1} new secrets",
                    timed(lambda: SecretMasker([*values, next(fresh)]), repeat) * 1000, "ms",
                    target=5, note="once per settings change; chats share it"))  # fmt: skip
    rows.append(Row("masking: the first text that holds one of them (the pattern is made)",
                    timed(lambda: SecretMasker([*values, next(fresh)]).mask(holding), repeat)
                    * 1000, "ms", target=50, note="once per masker"))  # fmt: skip
    return rows
