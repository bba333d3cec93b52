// A tool call's title in plain words. The server heads a tool's row "A0: Using tool
// 'text_editor:write'" (core/tool.py; an API's readers keep it); the page says "Writing a
// file" and shows the tool's own name beside it, smaller, for whoever wants it.

/** Plain words by tool name ("name:method" first, then the name alone). */
const TITLES = {
  "text_editor:read": "Reading a file",
  "text_editor:write": "Writing a file",
  "text_editor:patch": "Changing a file",
  memory_save: "Saving a memory",
  memory_load: "Searching memory",
  memory_delete: "Deleting memories",
  memory_forget: "Forgetting memories",
  document_query: "Reading a document",
  search_engine: "Searching the web",
  vision_load: "Looking at images",
  "skills:list": "Listing skills",
  "skills:load": "Loading a skill",
  "skills:files": "Listing a skill's files",
  "skills:read": "Reading a skill's file",
  "scheduler:list": "Listing scheduled tasks",
  "scheduler:create": "Scheduling a task",
  "scheduler:update": "Changing a scheduled task",
  "scheduler:delete": "Deleting a scheduled task",
  "scheduler:run": "Running a scheduled task",
  notify_user: "Notifying you",
  wait: "Waiting",
};

const USING = /^Using tool '([^']+)'$/;

/** {title, tool} of a row's title ("Using tool 'x'" → plain words and "x"); others as
 * they are, with no tool. */
export function toolTitle(text) {
  const found = USING.exec(text || "");
  if (!found) return { title: text, tool: "" };
  const tool = found[1];
  const plain = TITLES[tool] || TITLES[tool.split(":")[0]] || `Using ${tool.split(":")[0]}`;
  return { title: plain, tool };
}

/** A heading with its agent ("A0: Using tool 'x'" → "A0: Writing a file"), as the status
 * line shows it. */
export function plainHeading(heading) {
  const at = (heading || "").indexOf(": ");
  if (at < 0) return toolTitle(heading).title;
  return `${heading.slice(0, at + 2)}${toolTitle(heading.slice(at + 2)).title}`;
}
