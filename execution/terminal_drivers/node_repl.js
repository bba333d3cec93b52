// A persistent Node.js session for code_execution_tool (run as a script in a terminal).
// Reads one file path per line from stdin, runs the file's code in one shared
// context (a final expression's value is printed, as in the REPL; a promise is
// awaited), then prints the session's readiness marker with 0 (ran) or 1 (threw).

const fs = require("fs");
const readline = require("readline");
const util = require("util");
const vm = require("vm");

const TOKEN = process.env.CADRE_READY_TOKEN;
delete process.env.CADRE_READY_TOKEN;
const context = vm.createContext({
  require, console, process, Buffer, setTimeout, clearTimeout, setInterval, clearInterval,
  setImmediate, URL, TextEncoder, TextDecoder, fetch: globalThis.fetch,
});

function ready(code) {
  process.stdout.write(`__CADRE_READY_${TOKEN}_${code}__`);
}

async function run(path) {
  try {
    const source = fs.readFileSync(path, "utf8");
    let value = vm.runInContext(source, context, { filename: "<code>" });
    if (value && typeof value.then === "function") value = await value;
    if (value !== undefined) console.log(util.inspect(value, { colors: false }));
    return 0;
  } catch (err) {
    console.error(err && err.stack ? err.stack : String(err));
    return 1;
  }
}

const lines = readline.createInterface({ input: process.stdin, terminal: false });
let queue = Promise.resolve();
lines.on("line", (line) => {
  const path = line.trim();
  if (path) queue = queue.then(() => run(path)).then(ready);
});
lines.on("close", () => queue.then(() => process.exit(0)));
ready(0);
