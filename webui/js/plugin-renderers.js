// Plugins' log-item renderers: a plugin whose plugin.yaml names `log_renderer:
// webui/log.js` draws the log items of its own tools (or those its `matches(item)`
// picks) its own way, in place of the plain table and text. The module exports
//
//   export function render(item, root) { ... }  // at first and at each change of the item
//   export function matches(item) { ... }       // optional: which items it draws
//
// `item` is the log item's data ({type, heading, content, kvps, agentno, no}); `root` is
// the element to draw into. The list of renderers (GET /api/log-renderers) is asked at the
// first item drawn after a chat is opened or the Plugins panel changed something.

import { fetchJson } from "./http.js";

/** @type {Promise<Array<{plugin: string, module: object}>> | null} */
let loading = null;
/** The renderers once loaded (null before). */
let loaded = null;
/** Counts the asks: a load that a newer ask overtook keeps its answer to itself. */
let asked = 0;

async function loadAll(ask) {
  let listed = [];
  try {
    listed = (await fetchJson("/api/log-renderers")).renderers || [];
  } catch (err) {
    console.error("the plugins' log renderers could not be listed:", err);
  }
  const found = [];
  for (const entry of listed) {
    try {
      const module = await import(entry.url);
      if (typeof module.render !== "function") throw new Error("it exports no render(item, root)");
      found.push({ plugin: entry.plugin, module });
    } catch (err) {
      console.error(`plugin ${entry.plugin}: its log renderer could not be loaded:`, err);
    }
  }
  if (ask === asked) loaded = found;
  return found;
}

/** The renderers, loaded at the first ask. */
export function logRenderers() {
  loading ??= loadAll(asked);
  return loading;
}

/** The renderers if already loaded, else null (the caller waits on logRenderers()). */
export function loadedRenderers() {
  return loaded;
}

/** A plugin was installed, switched, updated or removed: ask again at the next item. */
export function forgetLogRenderers() {
  asked += 1;
  loading = null;
  loaded = null;
}

/** Whether `item` is a call of one of the renderer's plugin's tools: the item names the
 * plugin whose tool made it (core/log.py `plugin`), so a same-named tool of a profile or of
 * Cadre is not drawn by it. */
function ownItem(renderer, item) {
  return item.type === "tool" && Boolean(item.plugin) && item.plugin === renderer.plugin;
}

/** The first renderer that draws `item`, or null. */
export function rendererFor(renderers, item) {
  for (const renderer of renderers) {
    const { matches } = renderer.module;
    try {
      if (typeof matches === "function" ? matches(item) : ownItem(renderer, item)) {
        return renderer;
      }
    } catch (err) {
      console.error(`plugin ${renderer.plugin}: its matches(item) failed:`, err);
    }
  }
  return null;
}
