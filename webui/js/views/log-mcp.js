// How a call of an MCP server's tool looks in the log (kind "mcp_tool"): the tool's
// `<server>.<tool>` name with an "MCP" badge, the arguments as a table, the result,
// the images the tool returned shown like attachments and its files as links.

import { h } from "../dom.js";
import { kvpsTable, longText, setLongText, updateKvpsTable } from "./widgets.js";

/** kvps keys shown by their own parts, not in the arguments' table. */
const OWN_KEYS = ["images", "files", "status"];

/** Where the page can fetch a saved file: only the address Cadre serves a chat's saved
 * files at (core/tooling/mcp_tool.py `file_url`), else null. `images` and `files` sit among the
 * call's arguments, which a misled model writes: `//host/x`, `/\host/x` or `https://…`
 * would be a foreign link or image in Cadre's page. */
export function fileUrl(path) {
  const text = String(path);
  return /^\/api\/chats\/[\w-]+\/files\/mcp\/[\w.-]+$/.test(text) ? text : null;
}

function baseName(path) {
  return String(path).split(/[\\/]/).pop() || String(path);
}

function imageTile(path) {
  const name = baseName(path);
  const url = fileUrl(path);
  if (!url) return h("li", { class: "mcp-image-tile", testid: "mcp-image" }, name);
  return h("li", { class: "mcp-image-tile", testid: "mcp-image" },
    h("a", { href: url, target: "_blank", rel: "noopener", title: `Open ${name}` },
      h("img", { src: url, alt: name, loading: "lazy" })),
    h("span", { class: "mcp-image-name" }, name));
}

function fileLink(path) {
  const name = baseName(path);
  const url = fileUrl(path);
  return h("li", { testid: "mcp-file" },
    url ? h("a", { href: url, target: "_blank", rel: "noopener", download: name }, name) : name);
}

function list(value) {
  return Array.isArray(value) ? value : [];
}

export const MCP_TOOL = {
  build(view) {
    const p = view.parts;
    p.title.classList.add("mono");
    view.head.insertBefore(h("span", { class: "li-mcp-badge", title: "A tool of an MCP server" }, "MCP"), p.title);
    p.table = kvpsTable();
    p.result = longText("li-result mono", 1200);
    p.images = h("ul", { class: "li-mcp-images", testid: "mcp-images", "aria-label": "Images the tool returned" });
    p.files = h("ul", { class: "li-files li-mcp-files", testid: "mcp-files", "aria-label": "Files the tool returned" });
    view.el.append(view.head, p.table, p.result, p.images, p.files);
  },
  update(view, item, prev) {
    const p = view.parts;
    if (!prev || JSON.stringify(prev.kvps) !== JSON.stringify(item.kvps)) {
      updateKvpsTable(p.table, item.kvps, OWN_KEYS);
      const images = list(item.kvps.images);
      p.images.replaceChildren(...images.map(imageTile));
      p.images.hidden = images.length === 0;
      const files = list(item.kvps.files);
      p.files.replaceChildren(...files.map(fileLink));
      p.files.hidden = files.length === 0;
    }
    if (!prev || prev.content !== item.content) setLongText(p.result, item.content);
  },
};
