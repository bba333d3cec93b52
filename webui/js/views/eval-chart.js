// The Evaluations panel's chart: a bar per task of its pass rate (two when compared: the
// earlier result's in grey above the new one's), the percentages written beside the bars,
// and the whole said in the SVG's label for screen readers. Inline SVG, no library.

const SVG = "http://www.w3.org/2000/svg";
const LABEL_W = 150;
const BAR_W = 260;

function el(tag, attrs = {}, text = "") {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text) node.textContent = text;
  return node;
}

const percent = (rate) => (rate === null || rate === undefined ? "–" : `${Math.round(rate * 100)}%`);

/** tasks: [{name, rate}]; before: {name: rate} of the earlier result, or null. */
export function passRateChart(tasks, before = null) {
  const rowH = before ? 36 : 22;
  const height = 8 + rowH * tasks.length;
  const said = tasks.map((t) => (before
    ? `${t.name}: ${percent(before[t.name])} before, ${percent(t.rate)} now`
    : `${t.name}: ${percent(t.rate)}`)).join("; ");
  const svg = el("svg", { viewBox: `0 0 ${LABEL_W + BAR_W + 50} ${height}`, role: "img",
    "aria-label": `Pass rate per task. ${said}`, class: "eval-chart", "data-testid": "eval-chart" });
  tasks.forEach((task, i) => {
    const y = 4 + i * rowH;
    const name = task.name.length > 22 ? `${task.name.slice(0, 21)}…` : task.name;
    svg.append(el("text", { x: 0, y: y + 14, class: "eval-chart-label" }, name));
    const bars = before ? [[before[task.name], "before"], [task.rate, "now"]] : [[task.rate, "now"]];
    bars.forEach(([rate, kind], k) => {
      const top = y + k * 15;
      const width = Math.max(BAR_W * (rate ?? 0), 1);
      svg.append(el("rect", { x: LABEL_W, y: top + 3, width, height: 11, class: `eval-bar ${kind}` }));
      svg.append(el("text", { x: LABEL_W + width + 5, y: top + 13, class: "eval-chart-value" }, percent(rate)));
    });
  });
  return svg;
}
