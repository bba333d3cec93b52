// The message box: Enter sends, Shift+Enter is a newline. While the chat runs
// a message is an intervention (to the working agents, to the one selected in
// the tree while it works, or with the toggle to every agent in the run, also
// those waiting on others); the box's placeholder names who gets it. Attachments
// (picked, pasted or dropped on the chat) upload into the chat's folder at once
// and go with the next message as paths; images show as thumbnails. Up in the
// empty box brings back your last message (Down, before you change it, empties
// the box again).

import { andList, byTestId, h, setText } from "../dom.js";
import { imageUrl, isImageName } from "./log-images.js";

export function mountComposer(root, { chats, notices, tree }) {
  const input = byTestId("message-input", root);
  const send = byTestId("send", root);
  const broadcast = byTestId("broadcast-toggle", root);
  const broadcastBox = root.querySelector(".broadcast");
  const attach = byTestId("attach", root);
  const fileList = byTestId("attachments", root);
  /** [{name, path, preview}] uploaded, not yet sent (preview: the address of an image) */
  let attachments = [];
  let busy = false;
  /** The last message put back by Up, while the box still holds it unchanged. */
  let recalled = null;

  function running() {
    return chats.selectedState.running;
  }

  /** The agent selected in the tree while it works ("A1.2"): it alone gets the message. */
  function selectedWorker() {
    const working = chats.selectedState.working || [];
    const chosen = tree?.filter;
    return running() && !broadcast.checked && working.includes(chosen) ? chosen : "";
  }

  /** "Agent 0" (or whom it was handed to) for A0, else the agent's name ("A1.2"). */
  function who(name) {
    return name === "A0" ? chats.selectedState.talker?.title || "Agent 0" : name;
  }

  /** Who gets a message sent now, in words: [placeholder, send button's title]. */
  function recipients() {
    const state = chats.selectedState;
    if (broadcast.checked) {
      const busyNow = (state.agents || [])
        .filter((a) => a.status === "working" || a.status === "waiting").map((a) => who(a.name || `A${a.number}`));
      const names = andList(busyNow.length ? busyNow : [who("A0")]);
      return [`Every agent in this run (${names}) reads this at its next step…`, `Send to ${names} now (Enter)`];
    }
    const to = selectedWorker();
    if (to) return [`Only ${who(to)} reads this at its next step…`, `Send to ${who(to)} alone now (Enter)`];
    // The agent selected in the tree no longer works: say so, and where the message goes instead.
    const chosen = (state.agents || []).find((a) => (a.name || `A${a.number}`) === tree?.filter);
    const gone = chosen ? `${tree.filter} is ${chosen.status === "waiting" ? "waiting on others" : "done"}: ` : "";
    const working = (state.working || []).map(who);
    if (working.length > 1) {
      const names = andList(working);
      return [`${gone}All ${working.length} working agents (${names}) read this at their next step…`,
        `Send to ${names} now (Enter)`];
    }
    const one = working[0] || who("A0");
    return [`${gone}${one} reads this at its next step…`, `Send to ${one} now (Enter)`];
  }

  function render() {
    const live = running();
    setText(send, live ? "Intervene" : "Send");
    send.disabled = busy || input.value.trim() === "";
    broadcastBox.hidden = !live;
    if (!live) broadcast.checked = false;
    if (live) {
      [input.placeholder, send.title] = recipients();
      // A held call is answered with its own buttons; a "yes" typed here is only a message.
      if ((chats.selectedState.agents || []).some((a) => a.held)) {
        input.placeholder = `A tool call waits for your Allow or Deny in the log. ${input.placeholder}`;
      }
    } else {
      input.placeholder = `Message ${who("A0")}… (Enter sends, Shift+Enter for a new line)`;
      send.title = "Send (Enter)";
    }
    fileList.replaceChildren(
      ...attachments.map((file) => {
        const remove = h("button", { type: "button", class: "link-btn", "aria-label": `Remove ${file.name}` }, "×");
        remove.addEventListener("click", () => {
          attachments = attachments.filter((f) => f !== file);
          render();
        });
        const preview = file.preview
          ? h("img", { class: "chip-thumb", src: file.preview, alt: "", testid: "attachment-thumb" })
          : null;
        return h("li", { class: "file-chip", testid: "attachment" }, preview, file.name, remove);
      }),
    );
    fileList.hidden = attachments.length === 0;
  }

  async function submit() {
    const message = input.value.trim();
    if (!message || busy) return;
    busy = true;
    render();
    try {
      const chatId = await chats.target();
      const paths = attachments.map((f) => f.path);
      await chats.send(chatId, message, paths, broadcast.checked ? -1 : 1, selectedWorker());
      input.value = "";
      recalled = null;
      attachments = [];
      autosize();
    } catch (err) {
      notices.error(err, "Not sent");
    } finally {
      busy = false;
      render();
      input.focus();
    }
  }

  /** Upload `files` into the chat's folder (a new chat is made first if none is open). */
  async function upload(files) {
    if (!files.length) return;
    try {
      const chatId = await chats.target();
      for (const file of files) {
        const path = await chats.uploadAttachment(chatId, file);
        const preview = isImageName(path) ? imageUrl(chatId, path) : null;
        attachments.push({ name: file.name, path, preview });
        render();
      }
    } catch (err) {
      notices.error(err, "Upload failed");
    }
  }

  /** Pasted files (a screenshot comes as "image.png": it is named by the time instead). */
  function pasted(event) {
    const files = [...(event.clipboardData?.files || [])];
    if (!files.length) return; // text: pasted as usual
    event.preventDefault();
    const stamp = new Date().toISOString().slice(0, 19).replace(/[-:]/g, "").replace("T", "-");
    upload(files.map((file, i) => {
      if (file.name && file.name !== "image.png") return file;
      const ext = (file.type.split("/")[1] || "png").replace("jpeg", "jpg");
      return new File([file], `pasted-${stamp}${i ? `-${i}` : ""}.${ext}`, { type: file.type });
    }));
  }

  function dragging(event) {
    if (!event.dataTransfer?.types?.includes("Files")) return;
    event.preventDefault();
    root.classList.toggle("drop-target", event.type === "dragover");
  }

  function autosize() {
    input.style.height = "auto";
    input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
  }

  /** Up in an empty box: your last message; Down on it unchanged: empty again. */
  function recall(event) {
    if (event.shiftKey || event.altKey || event.ctrlKey || event.metaKey || event.isComposing) {
      return false;
    }
    if (event.key === "ArrowUp" && input.value === "") {
      const last = chats.lastMessage(chats.selectedId);
      if (!last) return false;
      recalled = last;
      input.value = last;
    } else if (event.key === "ArrowDown" && recalled !== null && input.value === recalled
      && !input.value.slice(input.selectionEnd).includes("\n")) {
      recalled = null;
      input.value = "";
    } else {
      return false;
    }
    input.setSelectionRange(input.value.length, input.value.length);
    autosize();
    render();
    return true;
  }

  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    } else if (recall(event)) {
      event.preventDefault();
    }
  });
  input.addEventListener("input", () => {
    autosize();
    send.disabled = busy || input.value.trim() === "";
  });
  send.addEventListener("click", submit);
  attach.addEventListener("change", () => {
    const files = [...attach.files];
    attach.value = "";
    upload(files);
  });
  input.addEventListener("paste", pasted);
  root.addEventListener("dragover", dragging);
  root.addEventListener("dragleave", dragging);
  root.addEventListener("drop", (event) => {
    if (!event.dataTransfer?.files?.length) return;
    event.preventDefault();
    root.classList.remove("drop-target");
    upload([...event.dataTransfer.files]);
  });
  chats.on("selected", () => {
    attachments = [];
    recalled = null;
    render();
  });
  chats.on("state", (chatId) => {
    if (chatId === chats.selectedId) render();
  });
  tree?.on("change", render);
  broadcast.addEventListener("change", render);
  render();
}
