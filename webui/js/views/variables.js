// The "Context variables" dialog of the chat header: the selected chat's named texts
// as rows (name, value, Remove), Add, and Save, which replaces the chat's set. A
// problem is said in words next to the rows, and the row at fault gets the focus.

import { byTestId, h, setText } from "../dom.js";
import { collect } from "../stores/variables.js";

export function mountVariables({ chats, variables, notices }) {
  const open = byTestId("chat-variables");
  const dialog = byTestId("variables");
  const form = dialog.querySelector("form");
  const list = byTestId("variable-rows");
  const empty = byTestId("variables-empty");
  const head = byTestId("variables-head");
  const problem = byTestId("variables-error");
  const save = byTestId("variables-save");
  let chatId = null;
  let counter = 0;

  function rows() {
    return [...list.querySelectorAll(".variable-row")];
  }

  function showProblem(text, input = null) {
    setText(problem, text);
    problem.hidden = !text;
    for (const field of list.querySelectorAll("[aria-invalid]")) field.removeAttribute("aria-invalid");
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.focus();
    }
  }

  function refreshEmpty() {
    empty.hidden = rows().length > 0;
    head.hidden = !empty.hidden; // the columns' names, over the rows
  }

  function addRow(name = "", value = "") {
    counter += 1;
    const nameId = `variable-name-${counter}`;
    const valueId = `variable-value-${counter}`;
    const nameInput = h("input", {
      id: nameId, class: "input variable-name", testid: "variable-name", value: name,
      autocomplete: "off", spellcheck: "false", "aria-describedby": "variables-help",
      placeholder: "Name, e.g. client",
    });
    const valueInput = h("textarea", {
      id: valueId, class: "input variable-value", testid: "variable-value", rows: 1,
      placeholder: "Value: any text",
    });
    valueInput.value = value;
    // As many lines as the value has (up to six; it scrolls past that).
    const fit = () => { valueInput.rows = Math.min(6, valueInput.value.split("\n").length); };
    valueInput.addEventListener("input", fit);
    fit();
    const remove = h("button", { type: "button", class: "btn small", testid: "variable-remove" }, "Remove");
    const label = () => nameInput.value.trim() || "this variable";
    const named = () => {
      remove.setAttribute("aria-label", `Remove ${label()}`);
      valueInput.setAttribute("aria-label", `Value of ${label()}`);
      row.setAttribute("aria-label", `Variable ${label()}`);
    };
    const row = h("div", { class: "variable-row", testid: "variable-row", role: "group" },
      nameInput, valueInput, remove);
    nameInput.setAttribute("aria-label", "Name");
    nameInput.addEventListener("input", named);
    named();
    remove.addEventListener("click", () => {
      const next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      refreshEmpty();
      (next?.querySelector(".variable-name") || byTestId("variable-add")).focus();
    });
    list.append(row);
    refreshEmpty();
    return nameInput;
  }

  function fill(values) {
    list.replaceChildren();
    for (const [name, value] of Object.entries(values)) addRow(name, value);
    refreshEmpty();
  }

  open.addEventListener("click", async () => {
    chatId = chats.selectedId;
    if (!chatId) return;
    showProblem("");
    try {
      fill(await variables.load(chatId));
    } catch (err) {
      notices.error(err, "Context variables");
      return;
    }
    dialog.showModal();
    (list.querySelector(".variable-name") || byTestId("variable-add")).focus();
  });

  byTestId("variable-add").addEventListener("click", () => addRow().focus());
  byTestId("variables-cancel").addEventListener("click", () => dialog.close());

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const all = rows();
    const found = collect(all.map((row) => ({
      name: row.querySelector(".variable-name").value,
      value: row.querySelector(".variable-value").value,
    })));
    if (found.problem) {
      showProblem(found.problem, all[found.row]?.querySelector(`.variable-${found.field}`));
      return;
    }
    save.disabled = true;
    try {
      fill(await variables.save(chatId, found.variables));
      showProblem("");
      dialog.close();
    } catch (err) {
      showProblem(`Not saved: ${err.message}`);
    } finally {
      save.disabled = false;
    }
  });

  const render = () => {
    open.disabled = !chats.selectedId;
  };
  chats.on("selected", render);
  chats.on("list", render);
  render();
}
