"""Plugins' handlers of run events: each call isolated, and limited in time.

A plugin's handlers module (`handlers.py` unless its plugin.yaml names another) holds
functions named after the run events of core/events.py, `on_` and the event's name in
snake case, each given the event:

    on_run_started(event)       on_monologue_started(event)   on_model_calling(event)
    on_model_called(event)      on_history_added(event)       on_iteration_ended(event)
    on_tool_started(event)      on_tool_ended(event)          on_step_progressed(event)
    on_monologue_ended(event)   on_run_ended(event)           on_state_changed(event)
    on_chat_saved(event)        on_chat_closed(event)

`on_model_calling` may change `event.messages` (the call sends the change): a plugin's way
to add to what the model reads. A subordinate's start and end are its
`MonologueStarted` and `MonologueEnded` (their `ctx` names the agent).

An `async def` handler may also take the chat after the event (`on_chat_saved(event,
chat)`, its second parameter required or named `chat`: the shipped plugin
plugins/chat_naming/ names chats so); it may change the chat, then await `chat.save()`, or
start work of its own with `chat.events.spawn` (`on_chat_closed` says when to stop it).

An `async def` handler is awaited on the agents' loop: it must not block. A plain function
runs in a worker thread of the plugins' own, so a slow one holds no other chat and no
thread Cadre's own work needs; it gets the event alone (a chat's agents are read on the
loop only), and hears a chat's events one at a time in the order they happened, each once
the chat's save of it is done (core/plugin_lanes.py). Either way the run waits for it at
most `budget()` seconds (the setting `plugin_handler_seconds`): one that takes longer is
left behind and recorded. A handler that raises, or a module that fails to import, is
recorded with its error (profiles/plugins.py `record_problem`: the Plugins panel and a log
line) and the run goes on, as with any subscriber of run events.

Which plugins' handlers run is decided at each event a plugin handles: those switched on
for the agent's profile in the chat's project (Agent 0's for an event that names no
agent), so a plugin switched meanwhile takes part from the next event, without a restart.
Which events some plugin handles at all is read from the handler files' text (the
handlers' names it mentions) when a chat is made and when each of its runs starts: the
others cost a step one lookup, and the events that cost something to build
(`COSTLY`) are built only once a plugin handles them.

For other handler formats (Agent Zero's extensions: a helper of their own),
`add_handler_source(source)` adds a function `source(plugin, event_type)` returning the
callables to run for that plugin and event, treated exactly as the functions above.
"""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
import logging
import re
import sys
import weakref
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from core import plugin_lanes
from core.events import (
    ChatClosed,
    ChatSaved,
    HistoryAdded,
    IterationEnded,
    ModelCalled,
    ModelCalling,
    MonologueEnded,
    MonologueStarted,
    RunEnded,
    RunEvent,
    RunStarted,
    StateChanged,
    StepProgressed,
    ToolEnded,
    ToolStarted,
)
from helpers import file_snapshot
from profiles.plugins import Plugin, active_plugins, discover_plugins, record_problem

if TYPE_CHECKING:
    from core.chat import Chat
    from core.run_context import RunContext

log = logging.getLogger(__name__)

#: The events a plugin may handle.
EVENTS: tuple[type, ...] = (
    RunStarted, MonologueStarted, ModelCalling, ModelCalled, HistoryAdded, IterationEnded,
    StepProgressed, ToolStarted, ToolEnded, MonologueEnded, RunEnded, StateChanged, ChatSaved,
    ChatClosed,
)  # fmt: skip
#: A handler's time when the settings cannot be read.
DEFAULT_BUDGET = 10.0

Handler = Callable[[Any], Any]
HandlerSource = Callable[[Plugin, type], Iterable[Handler]]
_extra_sources: list[HandlerSource] = []
#: The threads plain handlers run in: a handler stuck past its time keeps one, never one of
#: the loop's default pool, which Cadre's own work (saving chats...) uses.
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cadre-plugin")
#: Handler modules by path: (the file's stamp, module or None when it failed).
_modules: dict[Path, tuple[object, ModuleType | None]] = {}


def function_name(kind: type) -> str:
    """`on_` and the event's class name in snake case (RunEnded: on_run_ended)."""
    return "on_" + re.sub(r"(?<!^)(?=[A-Z])", "_", kind.__name__).lower()


def add_handler_source(source: HandlerSource) -> None:
    """Another way for a plugin to bring handlers (see the module's docstring)."""
    if source not in _extra_sources:
        _extra_sources.append(source)


def subscribe(chat: Chat) -> None:
    """Run the active plugins' handlers on `chat`'s events."""
    kinds = _kinds_handled()
    _handled[chat] = kinds
    for kind in EVENTS:
        # Built only for a listener (`RunEvents.wants`): while no plugin handles them, a
        # step makes none of these (a run that starts once one does listens from then on).
        if kind not in COSTLY or kind in kinds:
            _listen(chat, kind)


#: Events that cost something to build: listened to only while some plugin handles them.
COSTLY = (ModelCalling, ModelCalled, HistoryAdded, ToolStarted)
#: Per chat, the events some plugin handles (switched on or not): found when the chat is
#: made and again when each of its runs starts, from the handler files' text (no plugin's
#: code runs for it). Another event of the run costs one lookup, not a look at the
#: plugins' folders (a step has a dozen). A plugin switched on or off mid-run is heard from
#: its next event; a handler newly written for an event no plugin handled, from the next run.
_handled: weakref.WeakKeyDictionary[Chat, frozenset[type]] = weakref.WeakKeyDictionary()
#: The costly events each chat listens to already.
_listening: weakref.WeakKeyDictionary[Chat, set[type]] = weakref.WeakKeyDictionary()
#: The events a handlers file names, by path: (the file's stamp, kinds).
_declared: dict[Path, tuple[object, frozenset[type]]] = {}
#: A handler's name anywhere in a file's text.
_HANDLER_NAME = re.compile(r"\bon_[a-z_]+\b")


def _listen(chat: Chat, kind: type) -> None:
    if kind in COSTLY:
        _listening.setdefault(chat, set()).add(kind)
    chat.events.subscribe(kind, lambda event: _dispatch(chat, kind, event))


def _kinds_handled() -> frozenset[type]:
    """The events any usable plugin has a handler for (every one with another source)."""
    if _extra_sources:
        return frozenset(EVENTS)
    kinds: set[type] = set()
    for plugin in discover_plugins().values():
        if plugin.usable and plugin.handlers_file is not None:
            kinds |= _kinds_in(plugin.handlers_file)
    return frozenset(kinds)


def _kinds_in(path: Path) -> frozenset[type]:
    """The events whose handler's name (`on_run_ended`...) `path` mentions anywhere: a
    handler may be a `def`, an assignment, an import, inside an `if` or a `try`; a name
    mentioned that is no handler costs only a lookup at that event. A file that may make
    names the text does not show (`import *`, a module `__getattr__`) counts for all."""
    stamp = file_snapshot.stamp_of(str(path))
    known = _declared.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset(EVENTS)  # told when it is imported; until then listen to all
    if "import *" in text or "__getattr__" in text:
        kinds = frozenset(EVENTS)
    else:
        names = set(_HANDLER_NAME.findall(text))
        kinds = frozenset(kind for kind in EVENTS if function_name(kind) in names)
    _declared[path] = (stamp, kinds)
    return kinds


def _dispatch(chat: Chat, kind: type, event: RunEvent) -> Any:
    """The work of the handlers for `event` (None when there is none: nothing to await)."""
    ctx: RunContext | None = getattr(event, "ctx", None)
    if ctx is None:
        ctx = chat.agent0.ctx
    try:
        if kind is RunStarted:
            kinds = _handled[chat] = _kinds_handled()
            for costly in COSTLY:
                if costly in kinds and costly not in _listening.get(chat, ()):
                    _listen(chat, costly)
        if kind not in _handled.get(chat, ()):
            return None  # no plugin handles it: nothing to switch on or off per agent
        plugins = active_plugins(ctx.profile, ctx.project_ref)
    except Exception:  # the plugins' folders are unreadable: the run goes on without them
        log.exception("plugins could not be listed for a run event")
        return None
    calls = [(p, h) for p in plugins for h in handlers(p, kind)]
    if not calls:
        return None
    seconds = _budget(ctx)
    plain = [(p, h) for p, h in calls if not inspect.iscoroutinefunction(h)]
    if not plain:
        return _run_all(calls, chat, kind, event, seconds)
    awaited = [(p, h) for p, h in calls if inspect.iscoroutinefunction(h)]

    def work() -> Awaitable[None]:
        return _run_all(plain, chat, kind, event, seconds)

    # In the chat's lane from its telling, the order events happen in (core/plugin_lanes.py).
    placed = plugin_lanes.told(chat, work, kind)
    return _awaited_then_heard(chat, awaited, placed, work, kind, event, seconds)


async def _awaited_then_heard(
    chat: Chat, awaited: list[tuple[Plugin, Handler]], placed: plugin_lanes.Call | None,
    work: plugin_lanes.Work, kind: type, event: RunEvent, seconds: float,
) -> None:  # fmt: skip
    """One coroutine for an event's work (a stop closes it unstarted): the `async def`
    handlers, then the wait for the plain ones' turn."""
    if awaited:
        await _run_all(awaited, chat, kind, event, seconds)
    await plugin_lanes.heard(chat, placed, work, seconds)


def handlers(plugin: Plugin, kind: type) -> list[Handler]:
    """The callables plugin `plugin` runs on events of type `kind`."""
    found: list[Handler] = []
    module = _module(plugin)
    if module is not None:
        function = getattr(module, function_name(kind), None)
        if callable(function):
            found.append(function)
    for source in _extra_sources:
        try:
            found.extend(source(plugin, kind))
        except Exception as exc:  # a source's bug is the plugin's problem, not the run's
            record_problem(plugin.name, f"finding handlers of {kind.__name__}", repr(exc))
    return found


def _module(plugin: Plugin) -> ModuleType | None:
    path = plugin.handlers_file
    if path is None:
        return None
    stamp = file_snapshot.stamp_of(str(path))  # a shipped plugin's: stat'ed once
    if stamp is None:
        return None
    cached = _modules.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    module = None
    try:
        module = _import(path, plugin.name)
    except Exception as exc:  # recorded once per version of the file
        record_problem(plugin.name, f"loading {path.name}", f"{type(exc).__name__}: {exc}")
    _modules[path] = (stamp, module)
    return module


def _import(path: Path, plugin: str) -> ModuleType:
    name = f"cadre_plugin_{plugin.replace('-', '_')}_{abs(hash(str(path))):x}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


async def _run_all(
    calls: list[tuple[Plugin, Handler]], chat: Chat, kind: type, event: RunEvent,
    seconds: float,
) -> None:  # fmt: skip
    for plugin, handler in calls:
        where = f"handler {getattr(handler, '__name__', function_name(kind))}"
        try:
            given = (event, chat) if _takes_chat(handler) else (event,)
            # A deadline on this task, not a task per call (wait_for's): a handler that
            # returns at once, as most do at most events, costs a step next to nothing.
            async with asyncio.timeout(seconds):
                if inspect.iscoroutinefunction(handler):
                    await handler(*given)
                else:
                    loop = asyncio.get_running_loop()
                    await loop.run_in_executor(_pool, _call_plain, handler, given)
        except TimeoutError:
            record_problem(plugin.name, where, f"took longer than {seconds:g} s and was left"
                           " behind; the run went on")  # fmt: skip
        except Exception as exc:
            record_problem(plugin.name, where, f"{type(exc).__name__}: {exc}")


#: Whether each handler takes the chat (see `_takes_chat`), kept while it lives.
_asks_chat: weakref.WeakKeyDictionary[Handler, bool] = weakref.WeakKeyDictionary()


def _takes_chat(handler: Handler) -> bool:
    """Whether `handler` is given the chat after the event: an `async def` whose second
    parameter is required or named `chat` (`on_chat_saved(event, chat)`). A plain function
    runs in a worker thread, where a chat's agents are not to be read: it gets the event."""
    try:
        return _asks_chat[handler]
    except (KeyError, TypeError):
        pass
    asks = False
    if inspect.iscoroutinefunction(handler):
        positional = [
            p for p in inspect.signature(handler).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]  # fmt: skip
        second = positional[1] if len(positional) > 1 else None
        asks = second is not None and (second.default is second.empty or second.name == "chat")
    try:
        _asks_chat[handler] = asks
    except TypeError:  # not weakly referable (a callable object of another source)
        pass
    return asks


def _call_plain(handler: Handler, given: tuple[Any, ...]) -> None:
    result = handler(*given)
    if inspect.isawaitable(result):  # a plain function that returned a coroutine: not run
        close = getattr(result, "close", None)
        if close is not None:
            close()
        raise TypeError("returned a coroutine: write it as `async def` instead")


def _budget(ctx: RunContext) -> float:
    """Seconds a handler's call may take (the setting `plugin_handler_seconds`)."""
    try:
        return float(ctx.settings.plugin_handler_seconds)
    except Exception:  # settings unreadable mid-change: the default, never a failed run
        return DEFAULT_BUDGET
