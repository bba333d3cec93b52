"""What a layer without an agent tells the model: a prompt file's name and its variables.

Every text the model reads is a prompt file (`prompts/`), rendered with the agent's
prompt renderer. `helpers/`, `browsing/`, `execution/` and `memory/` sit below the
loop and hold no renderer: they say what to tell as data, a `Told` returned (a tool's
result) or carried by a `RepairableTold` raised (helpers/errors.py), and the tool layer
renders it (`core.tool.Tool.run` renders a raised one; a tool renders a returned one
with `told.render(...)`). Rendering is the tool's; choosing the words is the prompt
file's; the module below only names the event and its facts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: What renders a prompt file with variables: an agent's `read_prompt`, a `PromptLoader`'s
#: `render`.
Renderer = Callable[..., str]


@dataclass(frozen=True)
class Told:
    """A text for the model as the prompt file that says it and the file's variables."""

    prompt: str
    variables: dict[str, Any] = field(default_factory=dict)

    def render(self, render: Renderer) -> str:
        """The text, a variable that is itself told (one, or a list of them, joined by
        ", ") rendered first."""
        return render(self.prompt, **{k: _rendered(v, render) for k, v in self.variables.items()})


def _rendered(value: Any, render: Renderer) -> Any:
    if isinstance(value, Told):
        return value.render(render)
    if isinstance(value, list | tuple) and value and all(isinstance(v, Told) for v in value):
        return ", ".join(item.render(render) for item in value)
    return value


def told(prompt: str, /, **variables: Any) -> Told:
    """`Told(prompt, variables)`, written like a render call."""
    return Told(prompt, variables)


def render_lines(parts: Sequence[Told | str], render: Renderer) -> str:
    """Lines of a result, some told (rendered here) and some data kept as they are (a
    file's own lines), joined by line breaks."""
    return "\n".join(part if isinstance(part, str) else part.render(render) for part in parts)
