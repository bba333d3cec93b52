// A log item drawn by a plugin (../plugin-renderers.js): the plugin's drawing in place of
// the plain parts, a "Details" button that shows those again, and a renderer's failure in
// plain words (the plain parts then show, as if there were no renderer). A held call's
// question (log-approval.js) stays whatever draws the item.

import { h, setText } from "../dom.js";
import { loadedRenderers, logRenderers, rendererFor } from "../plugin-renderers.js";

/** Draw `item` with its plugin's renderer, if one draws it (after the first item, the
 * renderers are loaded: until then the item waits, shown plainly). */
export function updatePluginView(view, item) {
  const renderers = loadedRenderers();
  if (renderers === null) {
    if (!view.waitsForRenderers) {
      view.waitsForRenderers = true;
      logRenderers().then(() => {
        view.waitsForRenderers = false;
        updatePluginView(view, view.item);
      });
    }
    return;
  }
  if (view.renderer === undefined) view.renderer = rendererFor(renderers, item);
  const renderer = view.renderer;
  if (!renderer) return;
  const p = view.parts;
  if (!p.pluginView) build(view, renderer);
  try {
    renderer.module.render(item, p.pluginView);
    view.el.classList.add("plugin-drawn");
    p.pluginFailed.hidden = true;
    p.pluginDetails.hidden = false;
  } catch (err) {
    console.error(`plugin ${renderer.plugin}: its log renderer failed:`, err);
    view.el.classList.remove("plugin-drawn");
    setText(p.pluginFailed, `The ${renderer.plugin} plugin could not draw this step `
      + `(${err?.message || err}), so it is shown plainly.`);
    p.pluginFailed.hidden = false;
    p.pluginDetails.hidden = true;
  }
}

function build(view, renderer) {
  const p = view.parts;
  p.pluginView = h("div", { class: "plugin-view", testid: "plugin-view", data: { plugin: renderer.plugin } });
  p.pluginFailed = h("p", { class: "error-text plugin-failed", testid: "plugin-view-failed", hidden: true });
  p.pluginDetails = h("button", {
    type: "button", class: "btn small plugin-details", testid: "plugin-details",
    "aria-pressed": "false", title: "Also show the call's arguments and result as they are",
  }, "Details");
  p.pluginDetails.addEventListener("click", () => {
    const shown = view.el.classList.toggle("show-plain");
    p.pluginDetails.setAttribute("aria-pressed", String(shown));
  });
  view.head.insertBefore(p.pluginDetails, p.time);
  view.head.after(p.pluginView, p.pluginFailed);
}
