"""The browser's list of log kinds mirrors the Python one, in order."""

from __future__ import annotations

import re

from core.log import LOG_KINDS
from helpers.files import BASE_DIR


def test_js_log_kinds_match_python():
    source = (BASE_DIR / "webui" / "js" / "log-kinds.js").read_text()
    block = re.search(r"LOG_KINDS\s*=\s*Object\.freeze\(\[(.*?)\]\)", source, re.S)
    assert block, "webui/js/log-kinds.js must define LOG_KINDS = Object.freeze([...])"
    assert tuple(re.findall(r'"([a-z_]+)"', block.group(1))) == LOG_KINDS
