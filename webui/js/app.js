// The page's entry: create the stores, connect the socket to them, mount the views.

import * as socket from "./socket.js";
import { ChatsStore } from "./stores/chats.js";
import { ContextStore } from "./stores/context.js";
import { FilesStore } from "./stores/files.js";
import { LogStore } from "./stores/log.js";
import { McpStore } from "./stores/mcp.js";
import { MeStore } from "./stores/me.js";
import { NoticesStore } from "./stores/notices.js";
import { NotificationsStore } from "./stores/notifications.js";
import { ProjectsStore } from "./stores/projects.js";
import { SettingsStore } from "./stores/settings.js";
import { SetupStore } from "./stores/setup.js";
import { TreeStore } from "./stores/tree.js";
import { UsersStore } from "./stores/users.js";
import { VariablesStore } from "./stores/variables.js";
import { VoiceStore } from "./stores/voice.js";
import { byTestId } from "./dom.js";
import { onPasswordNeeded, onSignInNeeded } from "./http.js";
import { Router } from "./router.js";
import { mountAccount } from "./views/account.js";
import { mountBackup } from "./views/backup.js";
import { mountChatHeader } from "./views/chat-header.js";
import { mountFallbackStatus } from "./views/fallback-status.js";
import { mountCluster } from "./views/cluster.js";
import { mountEvals } from "./views/evals.js";
import { mountComposer } from "./views/composer.js";
import { mountContext } from "./views/context.js";
import { mountControls } from "./views/controls.js";
import { mountFiles } from "./views/files.js";
import { mountLayout } from "./views/layout.js";
import { LogView } from "./views/log-view.js";
import { mountNotices } from "./views/notices.js";
import { askPassword, askSignIn } from "./views/password-dialog.js";
import { mountNotifications } from "./views/notifications.js";
import { mountProjects } from "./views/projects.js";
import { mountMemory } from "./views/memory.js";
import { mountMessageActions } from "./views/message-actions.js";
import { mountBranches } from "./views/branch-actions.js";
import { mountSettings } from "./views/settings.js";
import { mountSetup } from "./views/setup.js";
import { mountScheduler } from "./views/scheduler.js";
import { mountSkills } from "./views/skills.js";
import { mountPlugins } from "./views/plugins.js";
import { mountSidebar } from "./views/sidebar.js";
import { mountTree } from "./views/tree.js";
import { mountUsers } from "./views/users.js";
import { mountVariables } from "./views/variables.js";
import { mountVoiceInput } from "./views/voice-input.js";
import { mountVoiceOutput } from "./views/voice-output.js";

const logStore = new LogStore();
const chats = new ChatsStore(logStore);
const tree = new TreeStore(chats);
const settings = new SettingsStore();
const context = new ContextStore();
const notices = new NoticesStore();
const notifications = new NotificationsStore();
const setup = new SetupStore();
const variables = new VariablesStore();
const mcp = new McpStore();
const files = new FilesStore();
const projects = new ProjectsStore();
const me = new MeStore();
const users = new UsersStore();
const voice = new VoiceStore();
// A chat made without naming a project (New chat, or a message with no chat open) goes
// into the project the chat list shows.
chats.projectForNew = () => projects.forNewChat;
const stores = {
  logStore, chats, tree, settings, context, notices, notifications, setup, variables, mcp, files,
  projects, me, users, voice,
};

function wireSocket() {
  socket.on("log", (event) => {
    // A new guid under the page: the chat was reset; fetch its new log whole.
    if (logStore.applyEvent(event) && event.chat_id === chats.selectedId) {
      chats.refresh().catch((err) => notices.error(err));
    }
  });
  socket.on("state", (state) => chats.applyState(state));
  socket.on("chats:delta", (delta) => chats.applyDelta(delta));
  socket.on("notifications:delta", (delta) => notifications.applyDelta(delta));
  socket.on("notify", (notice) => notices.push(notice));
  socket.on("connected", () => {
    // The lists may have changed while the page was away (deltas are not replayed).
    chats.load().catch((err) => notices.error(err, "Chats"));
    notifications.load().catch((err) => notices.error(err, "Notifications"));
  });
  chats.on("error", (err) => notices.error(err));
}

function mount() {
  // A change that lets Cadre run another program asks for the password (server/security/reauth.py),
  // or a new sign-in through the provider from someone who has none.
  onPasswordNeeded(askPassword);
  onSignInNeeded(askSignIn);
  const chatEl = document.querySelector(".chat");
  mountNotices(stores);
  mountNotifications(stores);
  mountSidebar(byTestId("sidebar"), stores);
  mountChatHeader(chatEl, stores);
  new LogView(byTestId("log"), stores);
  mountControls(chatEl, stores);
  mountFallbackStatus(chatEl, stores);
  mountComposer(chatEl, stores);
  mountTree(document.querySelector(".panel"), stores);
  mountSettings(stores);
  mountBackup(stores);
  mountCluster();
  mountContext(stores);
  mountSetup(stores);
  mountMemory(stores);
  mountSkills(stores);
  mountPlugins(stores);
  mountEvals(stores);
  mountScheduler(stores);
  mountFiles(stores);
  mountProjects(stores);
  mountVariables(stores);
  mountAccount(stores);
  mountUsers(stores);
  mountMessageActions(byTestId("log"), stores);
  mountBranches(byTestId("log"), stores);
  mountLayout(stores);
  mountVoiceInput(chatEl, stores);
  mountVoiceOutput(byTestId("log"), stores);
}

async function start() {
  // Who uses the page, asked first: what a member may not use is hidden once it answers
  // (the views listen before it can).
  const known = me.load().catch((err) => notices.error(err, "Your account"));
  wireSocket();
  mount();
  voice.load().catch((err) => notices.error(err, "Voice"));
  socket.connect();
  // The first list: open the chat the address names (else the newest, so the page
  // opens on something).
  await new Promise((resolve) => {
    const stop = chats.on("list", () => {
      stop();
      resolve();
    });
  });
  await known;
  await new Router(stores).start();
}

start().catch((err) => notices.error(err, "Start"));
