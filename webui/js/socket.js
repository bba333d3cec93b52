// The one owner of the Socket.IO connection (see server/protocol.md).
//
// Stores call `request(event, payload)` and get a Promise of the ack; server
// events reach listeners registered with `on`. After a reconnect the chat the
// page follows is subscribed again from the version and guid the page has, so
// no item is missed and none is shown twice (items are upserts).

import { io } from "../vendor/socket.io/socket.io.esm.min.js";
import { Emitter } from "./emitter.js";

/** How long an ack may take before a request fails. */
const ACK_TIMEOUT_MS = 20000;
/** The error of every event once the session has ended (server/sockets.py). */
const SESSION_ENDED = "this session has ended: log in again";
/** Events the server sends (protocol.md, "server → client"). */
const SERVER_EVENTS = ["log", "state", "chats:delta", "notifications:delta"];

const events = new Emitter();
let socket = null;
let everConnected = false;
/** The chat this page follows: {chatId, cursor: () => {since, guid}, onAck}. */
let subscription = null;

/** Tell the banner: status is "connected" or "disconnected". */
function setStatus(status, detail = "") {
  events.emit("status", { status, detail });
}

async function leaveIfLoggedOut() {
  const reply = await fetch("/", { method: "HEAD", redirect: "manual" }).catch(() => null);
  if (reply && reply.type === "opaqueredirect") loadAgain();
}

/** Load the page again from the server (which sends a logged-out page to the login), keeping
 * the chat it shows. Going to `/#/chat/<id>` from that very address would only move to the
 * `#` part, without asking the server: the page would sit there disconnected. */
function loadAgain() {
  if (window.location.pathname === "/" && !window.location.search) window.location.reload();
  else window.location.assign(`/${window.location.hash}`);
}

/** Open the connection (once). WebSocket only: no long-polling fallback. */
export function connect(url = undefined) {
  if (socket) return socket;
  socket = io(url, { transports: ["websocket"], reconnectionDelayMax: 4000 });
  socket.on("connect", () => {
    const again = everConnected;
    everConnected = true;
    setStatus("connected");
    events.emit("connected", { reconnect: again });
    if (again) resubscribe();
  });
  socket.on("disconnect", (reason) => {
    setStatus("disconnected", reason);
    // The server closes a socket only when its session ended (logout, a new password):
    // reload, and the server sends this page to the login.
    if (reason === "io server disconnect") loadAgain();
  });
  socket.on("connect_error", (err) => {
    setStatus("disconnected", err?.message || "cannot connect");
    // Refused by the server (no network failure: those are retried): the session may have
    // ended before this page's socket got there (a logout in another tab). Then go to
    // the login; a page still logged in keeps its status line and nothing more.
    if (!socket.active) leaveIfLoggedOut();
  });
  for (const name of SERVER_EVENTS) socket.on(name, (data) => events.emit(name, data));
  return socket;
}

/**
 * Listen to a server event ("log", "state", "chats:delta", "notifications:delta") or
 * to "status" / "connected" / "notify" (a toast: resubscribing failed) from this
 * module. Returns the function that stops it.
 */
export function on(event, fn) {
  return events.on(event, fn);
}

/** Thrown for an `{ok: false}` ack or a timeout; `message` is the server's text. */
export class RequestError extends Error {
  constructor(event, message) {
    super(message);
    this.name = "RequestError";
    this.event = event;
  }
}

/** Emit `event` with an ack; resolves with the ack, rejects on `{ok: false}`. */
export function request(event, payload = {}) {
  if (!socket) connect();
  return new Promise((resolve, reject) => {
    socket.timeout(ACK_TIMEOUT_MS).emit(event, payload, (err, ack) => {
      if (err) reject(new RequestError(event, `${event}: no answer from the server`));
      else if (ack?.error === SESSION_ENDED) window.location.assign(`/${window.location.hash}`); // to the login
      else if (!ack || ack.ok !== true) {
        reject(new RequestError(event, ack?.error || `${event} failed`));
      } else resolve(ack);
    });
  });
}

/**
 * Follow one chat: subscribe from `cursor()` ({since, guid}) and hand the ack to
 * `onAck`. The same is done again after every reconnect, with the cursor of then.
 */
export function subscribe(chatId, cursor, onAck) {
  subscription = { chatId, cursor, onAck };
  return sendSubscribe(subscription);
}

/** Follow no chat any more, without telling the server (the chat is gone). */
export function forget() {
  subscription = null;
}

function sendSubscribe(sub) {
  const { since, guid } = sub.cursor();
  return request("chat:subscribe", { chat_id: sub.chatId, since, guid }).then((ack) => {
    sub.onAck(sub.chatId, ack);
    return ack;
  });
}

function resubscribe() {
  if (!subscription) return;
  sendSubscribe(subscription).catch((err) => {
    events.emit("notify", { title: "Reconnected", message: err.message, type: "error" });
  });
}
