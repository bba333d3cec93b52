// The backup dialog (from Settings): download a zip of the parts chosen (secrets only
// when ticked, with a warning); upload a backup, see what each part holds and what it
// would replace, choose the parts, restore after asking. The server does the checking.

import { byTestId, h } from "../dom.js";
import { HttpError, csrfToken, fetchJson, postJson } from "../http.js";
import { confirmDialog } from "./dialogs.js";

function size(bytes) {
  if (bytes >= 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  return bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${bytes} B`;
}

function files(count, bytes) {
  return `${count} file${count === 1 ? "" : "s"}, ${size(bytes)}`;
}

function chats(count) {
  return ` (${count} chat${count === 1 ? "" : "s"})`;
}

/** POST `body` to `url`; the answer as a Blob and the file name the server gave it. */
async function download(url, body) {
  const response = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": await csrfToken() },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    const data = await response.json().catch(() => null);
    throw new HttpError(response.status, data?.error || `${response.status} ${response.statusText}`);
  }
  const name = /filename="?([^";]+)"?/.exec(response.headers.get("Content-Disposition") || "");
  return { blob: await response.blob(), name: name ? name[1] : "cadre-backup.zip" };
}

export function mountBackup({ notices }) {
  const dialog = byTestId("backup");
  const partsBox = byTestId("backup-parts");
  const warning = byTestId("backup-secrets-warning");
  const downloadButton = byTestId("backup-download");
  const upload = byTestId("backup-upload");
  const status = byTestId("backup-status");
  const preview = byTestId("backup-preview");
  const rows = byTestId("backup-rows");
  const restoreButton = byTestId("backup-restore");
  const reload = byTestId("backup-reload");
  let token = null;

  function checkbox(name, checked, testid, onchange) {
    const input = h("input", { type: "checkbox", name, testid, value: name });
    input.checked = checked;
    input.addEventListener("change", onchange);
    return input;
  }

  function chosen(root) {
    return [...root.querySelectorAll("input[type=checkbox]:checked")].map((i) => i.value);
  }

  async function loadParts() {
    const data = await fetchJson("/api/backup/parts");
    const legend = partsBox.querySelector("legend");
    partsBox.replaceChildren(legend, ...data.parts.map((part) => h("label", { class: "backup-part" },
      checkbox(part.name, part.default, `backup-part-${part.name}`, onPartsChanged), part.label)));
    onPartsChanged();
  }

  function onPartsChanged() {
    const settings = partsBox.querySelector("input[value=settings]");
    // The secrets live mostly in the settings: a backup with secrets holds them too.
    if (settings && partsBox.querySelector("input[value=secrets]")?.checked) settings.checked = true;
    const names = chosen(partsBox);
    warning.hidden = !names.includes("secrets");
    downloadButton.disabled = names.length === 0;
  }

  async function makeBackup() {
    downloadButton.disabled = true;
    try {
      const { blob, name } = await download("/api/backup", { parts: chosen(partsBox) });
      const link = h("a", { href: URL.createObjectURL(blob), download: name, hidden: true });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
      status.textContent = `Backup downloaded as ${name} (${size(blob.size)}).`;
    } catch (err) {
      notices.error(err, "Backup");
    } finally {
      onPartsChanged();
    }
  }

  function previewRow(part) {
    const secret = part.name === "secrets";
    const inBackup = files(part.backup_files, part.backup_bytes) + (part.name === "chats" ? chats(part.backup_chats) : "");
    const now = files(part.current_files, part.current_bytes) + (part.name === "chats" ? chats(part.current_chats) : "");
    return h("li", { class: `backup-row${secret ? " secret" : ""}`, testid: `backup-row-${part.name}` },
      h("label", { class: "backup-part" },
        checkbox(part.name, !secret, `backup-restore-${part.name}`, onRestoreChanged), part.label),
      h("span", { class: "backup-row-detail" }, `In the backup: ${inBackup}.`),
      h("span", { class: "backup-row-detail" }, secret
        ? "Replaces this Cadre's API keys, login password and secrets."
        : `Replaces what Cadre has now: ${now}.`));
  }

  function onRestoreChanged() {
    restoreButton.disabled = chosen(rows).length === 0;
  }

  async function onUpload() {
    const file = upload.files[0];
    upload.value = "";
    if (!file) return;
    token = null;
    preview.hidden = restoreButton.hidden = reload.hidden = true;
    status.textContent = `Reading ${file.name}…`;
    const form = new FormData();
    form.append("archive", file, file.name);
    try {
      const found = await fetchJson("/api/backup/preview", { method: "POST", body: form });
      token = found.token;
      const made = new Date(found.created_at * 1000).toLocaleString();
      status.textContent = `${file.name}: made ${made}${found.secrets ? ", with secrets" : ""}. Choose what to restore.`;
      rows.replaceChildren(...found.parts.map(previewRow));
      preview.hidden = restoreButton.hidden = false;
      onRestoreChanged();
    } catch (err) {
      status.textContent = `This backup cannot be restored: ${err.message}`;
    }
  }

  async function restore() {
    const parts = chosen(rows);
    const text = parts.includes("secrets")
      ? "The chosen parts, secrets included, replace what Cadre has now. This cannot be undone."
      : "The chosen parts replace what Cadre has now. This cannot be undone.";
    if (!token || !(await confirmDialog("Restore this backup?", text, { okLabel: "Restore", danger: true }))) return;
    restoreButton.disabled = true;
    status.textContent = "Restoring…";
    try {
      const done = await postJson("/api/backup/restore", { token, parts });
      token = null;
      preview.hidden = restoreButton.hidden = true;
      reload.hidden = false;
      status.textContent = `Restored: ${done.restored.join(", ")} (${done.files} files). Reload the page to see everything as restored.`;
      reload.focus();
    } catch (err) {
      status.textContent = `Nothing was restored: ${err.message}`;
      onRestoreChanged();
    }
  }

  downloadButton.addEventListener("click", makeBackup);
  upload.addEventListener("change", onUpload);
  restoreButton.addEventListener("click", restore);
  reload.addEventListener("click", () => window.location.reload());
  byTestId("backup-close").addEventListener("click", () => dialog.close());
  byTestId("settings-backup").addEventListener("click", (event) => {
    event.target.closest("dialog")?.close();
    status.textContent = "";
    preview.hidden = restoreButton.hidden = reload.hidden = true;
    dialog.showModal();
    loadParts().catch((err) => notices.error(err, "Backup"));
  });
}
