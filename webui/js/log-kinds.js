// The kinds of log item, in the order of LogKind in core/log.py.
// A Python test compares this list with that one: change both together.
export const LOG_KINDS = Object.freeze([
  "user",
  "agent",
  "response",
  "tool",
  "subagent",
  "code_exe",
  "util",
  "warning",
  "error",
  "info",
  "hint",
  "progress",
  "input",
  "notify",
  "mcp_tool",
  "browser",
]);
