// The settings form's editor of `mcp_servers`: the JSON in the desktop clients'
// format in a monospace box (checked by the server as the user types; what is
// wrong shows under the box), and below it each saved server's state in plain
// words, its error output, a Restart button and its tools (folded).

import { h, setText } from "../dom.js";

/** Shown in the empty box: the format, with one local and one remote server. */
export const EXAMPLE = `{
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/notes"]
    },
    "search": {
      "url": "https://example.com/mcp",
      "headers": { "Authorization": "Bearer <token>" }
    }
  }
}`;

/** The JSON box (`attrs`: id, name, test id and data-setting of the form's field). */
export function mcpTextarea(attrs, text) {
  const lines = (text || EXAMPLE).split("\n").length;
  const input = h("textarea", {
    ...attrs, class: "input code mcp-json", spellcheck: "false", autocomplete: "off",
    autocapitalize: "off", wrap: "off", rows: Math.min(16, Math.max(6, lines)), placeholder: EXAMPLE,
  });
  input.value = text;
  return input;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** A server's state in plain words. */
export function stateText(server) {
  switch (server.state) {
    case "starting":
      return "Starting…";
    case "ready":
      // The tools themselves (the Settings page), or their count (My settings).
      return `Ready — ${plural(Array.isArray(server.tools) ? server.tools.length : server.tools, "tool")}`;
    case "failed":
      return server.error ? `Failed: ${server.error}` : "Failed";
    case "disabled":
      return "Disabled";
    case "stopped":
      return "Stopped";
    default:
      return server.state;
  }
}

/** One server's row, built once and updated in place (folds and focus survive a poll). */
class ServerRow {
  constructor(name, onRestart) {
    const p = (this.parts = {});
    p.name = h("span", { class: "mcp-name", id: `mcp-server-${name}` }, name);
    p.transport = h("span", { class: "mcp-transport" });
    p.restart = h("button", {
      type: "button", class: "btn small", testid: "mcp-restart", "aria-label": `Restart ${name}`,
      onclick: () => onRestart(name),
    }, "Restart");
    p.state = h("p", { class: "mcp-state", testid: "mcp-state", "aria-live": "polite" });
    p.restarts = h("span", { class: "mcp-restarts" });
    p.stderrText = h("pre", { class: "mcp-stderr-text", tabindex: "0" });
    p.stderr = h("details", { class: "mcp-stderr", testid: "mcp-stderr" },
      h("summary", {}, "Error output (last lines)"), p.stderrText);
    p.toolsSummary = h("summary", {});
    p.toolList = h("ul", { class: "mcp-tool-list" });
    p.tools = h("details", { class: "mcp-tools", testid: "mcp-tools" }, p.toolsSummary, p.toolList);
    this.el = h("li", { class: "mcp-server", testid: "mcp-server", data: { name }, "aria-labelledby": p.name.id },
      h("div", { class: "mcp-server-head" }, p.name, p.transport, p.restarts, p.restart),
      p.state, p.stderr, p.tools);
    this.shown = "";
  }

  update(server, restarting) {
    const p = this.parts;
    const key = JSON.stringify([server, restarting]);
    if (key === this.shown) return;
    this.shown = key;
    this.el.dataset.state = server.state;
    setText(p.transport, server.transport);
    setText(p.restarts, server.restarts ? `restarted ${plural(server.restarts, "time")}` : "");
    setText(p.state, stateText(server));
    p.restart.disabled = restarting || server.state === "disabled";
    setText(p.restart, restarting ? "Restarting…" : "Restart");
    setText(p.stderrText, server.stderr_tail || "");
    p.stderr.hidden = server.state !== "failed" || !server.stderr_tail;
    const tools = server.tools || [];
    setText(p.toolsSummary, `Tools (${tools.length})`);
    p.toolList.replaceChildren(...tools.map((tool) => h("li", { class: "mcp-tool" },
      h("code", { class: "mcp-tool-name" }, tool.name),
      tool.description ? h("span", { class: "mcp-tool-description" }, tool.description) : null)));
    p.tools.hidden = tools.length === 0;
  }
}

/**
 * The status list under the JSON box, and the check as the user types.
 * `setError(text)` puts what is wrong with the text under the box ("" clears it).
 * Returns {el, note, dispose}: the list, a line saying what the check found (for
 * aria-describedby), and what stops listening when the form goes away.
 */
export function mcpPanel({ mcp, input, setError }) {
  const note = h("span", { class: "field-hint mcp-check", id: `${input.id}-check`, testid: "mcp-check" });
  const title = h("h3", { class: "mcp-status-title", id: `${input.id}-status` }, "Servers (as saved)");
  const empty = h("p", { class: "mcp-empty", testid: "mcp-empty", hidden: true },
    h("strong", {}, "No MCP servers yet. "),
    "Paste the \"mcpServers\" JSON your desktop client uses into the box above (the grey text is an example) and save: each server starts here and its tools become tools of every agent.");
  const loading = h("p", { class: "muted mcp-loading" }, "Asking for the servers' status…");
  const problem = h("p", { class: "error-text", testid: "mcp-status-error", role: "alert", hidden: true });
  const list = h("ul", { class: "mcp-servers", testid: "mcp-servers", "aria-labelledby": title.id });
  const el = h("section", { class: "mcp-status", testid: "mcp-status", "aria-labelledby": title.id },
    title, loading, empty, list, problem);
  const rows = new Map();
  const restart = (name) => mcp.restart(name);

  function render() {
    setText(problem, mcp.error);
    problem.hidden = !mcp.error;
    loading.hidden = mcp.servers !== null || Boolean(mcp.error);
    const servers = mcp.servers || [];
    empty.hidden = mcp.servers === null || servers.length > 0;
    const names = new Set(servers.map((s) => s.name));
    for (const [name, row] of rows) {
      if (!names.has(name)) {
        row.el.remove();
        rows.delete(name);
      }
    }
    servers.forEach((server, place) => {
      let row = rows.get(server.name);
      if (!row) rows.set(server.name, (row = new ServerRow(server.name, restart)));
      row.update(server, mcp.restarting.has(server.name));
      if (list.children[place] !== row.el) list.insertBefore(row.el, list.children[place] || null);
    });
    list.hidden = servers.length === 0;
  }

  function checked(check) {
    if (check.text !== input.value) return; // the user typed on since
    setError(check.ok ? "" : check.error || "This is not a valid MCP configuration.");
    let text = "";
    if (check.unchecked) text = `Not checked: ${check.unchecked}`;
    else if (check.ok && check.servers.length) {
      text = `Looks right: ${plural(check.servers.length, "server")} (${check.servers.join(", ")}).`;
    }
    setText(note, text);
  }

  const onInput = () => {
    setText(note, "");
    mcp.validateSoon(input.value);
  };
  input.addEventListener("input", onInput);
  const offs = [mcp.on("change", render), mcp.on("validated", checked)];
  render();
  return {
    el,
    note,
    dispose() {
      input.removeEventListener("input", onInput);
      for (const off of offs) off();
    },
  };
}
