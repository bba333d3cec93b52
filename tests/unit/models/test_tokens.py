"""Token counts per model family, offline."""

from __future__ import annotations

import subprocess
import sys

from models.tokens import EXACT_LIMIT, count_for_model, count_tokens, estimate_tokens

TEXT = (
    "Les élèves ont étudié la théorie des ensembles — 日本語のテキストも少し。 def f(x): return x"
)


def test_newer_openai_models_use_their_own_encoding():
    assert count_for_model(TEXT, "openai/gpt-4.1-mini") != count_for_model(TEXT, "openai/gpt-4")
    assert count_for_model(TEXT, "openai/gpt-4") == count_tokens(TEXT)
    assert count_for_model(TEXT, "ollama/llama3.2") == count_tokens(TEXT)  # unknown: cl100k


def test_huge_texts_are_estimated():
    big = "x" * (EXACT_LIMIT + 1)
    assert count_for_model(big, "openai/gpt-4.1") == estimate_tokens(big)


def test_claude_is_counted_by_litellm_offline():
    code = (
        "import os; os.environ['LITELLM_LOCAL_MODEL_COST_MAP'] = 'True'\n"
        "import litellm\n"
        "from models.tokens import count_for_model\n"
        f"model, text = 'anthropic/claude-3-5-sonnet-20240620', {TEXT!r}\n"
        "print(count_for_model(text, model), litellm.token_counter(model=model, text=text))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": "."})  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    ours, litellms = map(int, done.stdout.split())
    assert ours == litellms
