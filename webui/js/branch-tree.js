// The chat list as a tree: each chat followed by its branches (chats whose `parent.id`
// names it), deeper each level. A branch whose parent is gone (deleted, or not this
// person's) stands on its own. A chat's place is that of the latest activity in its
// tree, so a new branch brings its parent up with it.

/** When a chat last had something happen (its last message, else its making). */
function activity(chat) {
  return Math.max(chat.last_message || 0, chat.created_at || 0);
}

/** `chats` (newest first) as rows `{chat, depth, parent}`: parents before their branches. */
export function nestBranches(chats) {
  const byId = new Map(chats.map((chat) => [chat.id, chat]));
  const branches = new Map();
  const roots = [];
  for (const chat of chats) {
    const parentId = chat.parent?.id;
    if (parentId && parentId !== chat.id && byId.has(parentId)) {
      if (!branches.has(parentId)) branches.set(parentId, []);
      branches.get(parentId).push(chat);
    } else {
      roots.push(chat);
    }
  }
  const latest = new Map();
  const latestOf = (chat, path = new Set()) => {
    if (latest.has(chat.id)) return latest.get(chat.id);
    path.add(chat.id);
    let when = activity(chat);
    for (const branch of branches.get(chat.id) || []) {
      if (!path.has(branch.id)) when = Math.max(when, latestOf(branch, path));
    }
    latest.set(chat.id, when);
    return when;
  };
  const rows = [];
  const seen = new Set();
  const visit = (chat, depth) => {
    if (seen.has(chat.id)) return;
    seen.add(chat.id);
    rows.push({ chat, depth, parent: depth ? byId.get(chat.parent.id) : null });
    const below = [...(branches.get(chat.id) || [])].sort((a, b) => latestOf(b) - latestOf(a));
    for (const branch of below) visit(branch, depth + 1);
  };
  for (const chat of [...roots].sort((a, b) => latestOf(b) - latestOf(a))) visit(chat, 0);
  for (const chat of chats) visit(chat, 0); // parents that name each other: none is lost
  return rows;
}
