// The page's main text as markdown, run inside the page by browsing/session.py.
// Links and form fields get numbers ([3]) and a data-cadre-ref attribute, so a
// later step can act on "3". Hidden elements, scripts and styles are skipped.
() => {
  const root = document.querySelector("main, [role=main], article") || document.body;
  if (!root) return "";
  document.querySelectorAll("[data-cadre-ref]").forEach((el) => el.removeAttribute("data-cadre-ref"));
  let next = 1;
  const out = [];
  const SKIP = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG", "HEAD"]);
  const BLOCK = new Set(["P", "DIV", "SECTION", "ARTICLE", "HEADER", "FOOTER", "NAV", "ASIDE",
    "FORM", "TABLE", "TR", "UL", "OL", "BLOCKQUOTE", "PRE", "FIELDSET", "MAIN", "BR", "HR"]);
  const clean = (text) => text.replace(/\s+/g, " ").trim();
  const visible = (el) => {
    const style = getComputedStyle(el);
    return style.display !== "none" && style.visibility !== "hidden" && !el.hidden;
  };
  const ref = (el) => { const n = next++; el.setAttribute("data-cadre-ref", String(n)); return n; };
  const field = (el) => {
    const tag = el.tagName.toLowerCase();
    const type = tag === "input" ? (el.type || "text") : tag;
    if (type === "hidden") return "";
    const label = clean((el.labels && el.labels[0] && el.labels[0].innerText) || el.getAttribute("aria-label")
      || el.placeholder || el.name || el.id || "");
    if (tag === "button" || type === "submit" || type === "button") {
      return ` [${ref(el)}: button "${clean(el.innerText || el.value || label)}"] `;
    }
    if (tag === "select") {
      const options = [...el.options].map((o) => (o.selected ? `*${clean(o.text)}*` : clean(o.text)));
      return ` [${ref(el)}: select "${label}" options: ${options.join(" | ")}] `;
    }
    if (type === "checkbox" || type === "radio") {
      return ` [${ref(el)}: ${type} "${label}"${el.checked ? " checked" : ""}] `;
    }
    const value = type === "password" ? (el.value ? "***" : "") : el.value;
    return ` [${ref(el)}: ${type} "${label}"${value ? ` value="${clean(value)}"` : ""}] `;
  };
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) { out.push(node.textContent.replace(/\s+/g, " ")); return; }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const el = node;
    if (SKIP.has(el.tagName.toUpperCase()) || !visible(el)) return;
    const tag = el.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || tag === "BUTTON") {
      out.push(field(el));
      return;
    }
    if (tag === "A" && el.href) {
      const text = clean(el.innerText) || el.getAttribute("aria-label") || el.href;
      out.push(` [${text}][${ref(el)}] `);
      return;
    }
    if (tag === "IMG") { if (el.alt) out.push(` ![${clean(el.alt)}] `); return; }
    const heading = /^H([1-6])$/.exec(tag);
    if (heading) { out.push(`\n\n${"#".repeat(Number(heading[1]))} ${clean(el.innerText)}\n\n`); return; }
    if (tag === "LI") out.push("\n- ");
    else if (BLOCK.has(tag)) out.push("\n\n");
    for (const child of el.childNodes) walk(child);
    if (BLOCK.has(tag)) out.push("\n\n");
    else if (tag === "TD" || tag === "TH") out.push(" | ");
  };
  walk(root);
  return out.join("").split("\n").map((line) => line.replace(/[ \t]+/g, " ").trim())
    .join("\n").replace(/\n{3,}/g, "\n\n").trim();
}
