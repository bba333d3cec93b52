"""The colour variables of webui/css/app.css pass WCAG AA (4.5:1), in both themes.

Checked on the variables themselves, not on elements: every text colour on every
background colour. Elements that other parts of the page build from these variables
(`color: var(--muted)` on `background: var(--panel-2)`, ...) pass with no check of
their own.
"""

from __future__ import annotations

import re
from itertools import product

import pytest

from helpers.files import BASE_DIR

APP_CSS = BASE_DIR / "webui" / "css" / "app.css"
AA = 4.5

TEXTS = ["text", "muted", "faint", "accent", "ok", "warn", "err", "info", "hint", "deleg"]
BACKGROUNDS = [
    "bg", "panel", "panel-2", "hover", "subtle", "code-bg", "code-tint", "banner-bg",
    "accent-soft", "warn-soft", "err-soft", "info-soft", "hint-soft", "deleg-soft",
]  # fmt: skip
CODE_TEXTS = ["hl-keyword", "hl-title", "hl-number", "hl-string", "hl-builtin", "hl-comment",
              "hl-name", "hl-bullet"]  # fmt: skip
CODE_BACKGROUNDS = ["code-bg", "panel-2", "code-tint", "panel"]
PAIRS = (
    list(product(TEXTS, BACKGROUNDS))
    + list(product(CODE_TEXTS, CODE_BACKGROUNDS))
    + [("on-accent", bg) for bg in ("accent", "accent-hover", "err", "err-hover")]
    + [(f"a{n}-fg", f"a{n}-bg") for n in range(1, 6)]
    + [("term-text", "term-bg"), ("term-link", "term-bg")]
)


def theme_variables(selector: str) -> dict[str, str]:
    """The `--name: #rrggbb` declarations of the first block opened by `selector`."""
    css = APP_CSS.read_text(encoding="utf-8")
    start = css.find(selector + " {")
    if start < 0:
        return {}
    block = css[start : css.index("}", start)]
    return dict(re.findall(r"--([\w-]+):\s*(#[0-9a-fA-F]{6})\b", block))


def theme(name: str) -> dict[str, str]:
    light = theme_variables(":root")
    return light if name == "light" else {**light, **theme_variables(DARK)}


DARK = ':root[data-theme="dark"]'


def luminance(hex_colour: str) -> float:
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_contrast_formula_matches_wcag():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    # The failure the issue quotes: timestamps #8c959f on #e8eefc.
    assert contrast("#8c959f", "#e8eefc") == pytest.approx(2.61, abs=0.01)


@pytest.mark.parametrize("name", ["light", "dark"])
def test_every_text_colour_passes_aa_on_every_background(name):
    colours = theme(name)
    missing = sorted({name for pair in PAIRS for name in pair} - colours.keys())
    assert not missing, f"{name}: variables without a #rrggbb value: {missing}"
    failing = [
        f"--{fg} {colours[fg]} on --{bg} {colours[bg]}: {contrast(colours[fg], colours[bg]):.2f}"
        for fg, bg in PAIRS
        if contrast(colours[fg], colours[bg]) < AA
    ]
    assert not failing, f"{name} theme below {AA}:1\n" + "\n".join(failing)


def test_the_dark_theme_redefines_every_colour():
    light = theme_variables(":root")
    dark = theme_variables(DARK)
    assert dark, f"app.css has no {DARK} block"
    assert sorted(light.keys() - dark.keys()) == []
