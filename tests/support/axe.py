"""axe-core in a Playwright page: inject the vendored copy, run it, keep what matters.

axe-core (tests/support/vendor/axe-core/, see its VERSION.md) is for tests only; the
page never loads it. The page's Content-Security-Policy refuses the injected script, so
the browser context that runs it must be made with ``bypass_csp=True``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AXE_JS = Path(__file__).parent / "vendor" / "axe-core" / "axe.min.js"
#: The impacts a test refuses; "moderate" and "minor" findings are reported by axe but
#: are not failures here.
BLOCKING = ("serious", "critical")


def axe_violations(page: Any, selector: str | None = None) -> list[dict[str, Any]]:
    """The serious and critical violations axe finds in the page (or under `selector`)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(path=str(AXE_JS))
    found = page.evaluate(
        """async (selector) => {
            const root = selector ? document.querySelector(selector) : document;
            const result = await axe.run(root, {resultTypes: ["violations"]});
            return result.violations;
        }""",
        selector,
    )
    return [v for v in found if v.get("impact") in BLOCKING]


def describe(violations: list[dict[str, Any]]) -> str:
    """One line per failing element, with axe's own explanation (for assertion messages)."""
    lines = []
    for violation in violations:
        for node in violation["nodes"][:10]:
            why = (node.get("any") or node.get("all") or node.get("none") or [{}])[0]
            lines.append(f"{violation['id']} ({violation['impact']}) {node['target']}: "
                         f"{why.get('message', violation['help'])}")  # fmt: skip
    return "\n".join(lines)
