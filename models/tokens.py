"""Token counting that works offline.

tiktoken downloads its encodings on first use, which fails without internet.
litellm's wheel bundles the same files (named by tiktoken's cache key) in
`litellm/litellm_core_utils/tokenizers/`, so we point `TIKTOKEN_CACHE_DIR`
there. The folder is found through importlib metadata so that litellm itself
(4 s, 200 MB to import) is not imported just to count tokens.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from helpers.images import data_url_tokens

if TYPE_CHECKING:
    import tiktoken

log = logging.getLogger(__name__)

ENCODING = "cl100k_base"

#: Texts longer than this are estimated, not encoded: an exact count of a
#: multi-megabyte tool output costs seconds of CPU on the event loop and is
#: only used to decide what to cut, where an estimate serves as well.
EXACT_LIMIT = 50_000

#: Characters per token used for estimates (typical for English and code).
CHARS_PER_TOKEN = 4


def _bundled_tokenizer_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


@cache
def _encoding() -> tiktoken.Encoding | None:
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        folder = _bundled_tokenizer_dir()
        if folder is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        import tiktoken

        return tiktoken.get_encoding(ENCODING)
    except Exception as exc:  # noqa: BLE001 - any failure means "estimate instead"
        log.warning("tiktoken encoding %s unavailable (%s); estimating token counts", ENCODING, exc)
        return None


def preload() -> None:
    """Load the encoding now (in a background thread at start-up), not in a chat's first step."""
    _encoding()


def estimate_tokens(text: str) -> int:
    """A cheap estimate, for texts too large to encode exactly."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


#: Model families whose tokenizer is o200k_base (the newer OpenAI models).
_O200K = ("gpt-4o", "chatgpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4")
#: Families whose tokenizer litellm ships (no download): its counter is used for them.
_LITELLM_COUNTED = ("claude", "deepseek")


@cache
def _named_encoding(name: str) -> tiktoken.Encoding | None:
    base = _encoding()  # sets up the offline cache folder
    if base is None or name == ENCODING:
        return base
    try:
        import tiktoken

        return tiktoken.get_encoding(name)
    except Exception:  # noqa: BLE001 - not bundled: the default encoding will do
        return base


def count_for_model(text: str, model: str) -> int:
    """Tokens of `text` as `model` counts them, where that is known offline.

    litellm's own counter for the families whose tokenizer it bundles (when
    litellm is loaded anyway), the model's tiktoken encoding for OpenAI
    models, cl100k otherwise. Past `EXACT_LIMIT` characters: an estimate.
    """
    if not text:
        return 0
    if len(text) > EXACT_LIMIT:
        return estimate_tokens(text)
    name = model.rsplit("/", 1)[-1].lower()
    litellm = sys.modules.get("litellm")
    if litellm is not None and name.startswith(_LITELLM_COUNTED):
        try:
            return int(litellm.token_counter(model=model, text=text))
        except Exception:  # noqa: BLE001 - any failure: count it ourselves
            pass
    return _encoded_length("o200k_base" if name.startswith(_O200K) else ENCODING, text)


def count_tokens(text: str) -> int:
    """Tokens of `text` in the cl100k encoding (estimated past `EXACT_LIMIT` characters)."""
    if not text:
        return 0
    if len(text) > EXACT_LIMIT:
        return estimate_tokens(text)
    return _encoded_length(ENCODING, text)


# The same texts are counted again and again (the system prompt on every step,
# each step's prompt for usage): remembering a few hundred counts saves a
# millisecond per step. At most 128 x EXACT_LIMIT characters are held.
@lru_cache(maxsize=128)
def _encoded_length(name: str, text: str) -> int:
    encoding = _named_encoding(name)
    if encoding is None:
        return estimate_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))


def count_content(content: object, model: str = "") -> int:
    """Tokens of a message's content: its text, or its parts (text, and images by their size
    as the providers count them, never their base64 bytes as text)."""
    if isinstance(content, str):
        return count_for_model(content, model) if model else count_tokens(content)
    total = 0
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image_url":
            url = part.get("image_url", {})
            total += data_url_tokens(str(url.get("url", "") if isinstance(url, dict) else url))
        else:
            total += count_content(str(part.get("text", "")), model)
    return total
