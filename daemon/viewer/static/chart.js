// Tokens and cost over time, as inline SVG: cumulative tokens as an area (left axis), cumulative
// cost as a dashed line (right axis), one dot per model call in the caller's colour.

import { s, h, fmtInt, fmtCost, fmtSeconds } from "./dom.js";
import { roleColour, roleLabel } from "./roles.js";

const W = 420;
const H = 190;
const PAD = { left: 52, right: 58, top: 14, bottom: 30 };

export class UsageChart {
  constructor(root, totals) {
    this.root = root;
    this.totals = totals;
  }

  reset(startedAt) {
    this.t0 = startedAt || null;
    this.points = [];
    this.render();
  }

  apply(event) {
    if (this.t0 === null && event.at) this.t0 = event.at;
    if (event.kind !== "usage") return;
    const data = event.data || {};
    const progress = event.progress || {};  // the job's totals after this call, as the daemon counted them
    this.points.push({
      t: Math.max(0, (event.at || this.t0 || 0) - (this.t0 || event.at || 0)),
      tokens: progress.tokens || 0, cost: progress.cost || 0, cached: progress.cached_tokens || 0,
      step: (data.prompt_tokens || 0) + (data.completion_tokens || 0), role: event.role, model: data.model,
    });
    this.render();
  }

  render() {
    const points = this.points;
    const last = points[points.length - 1] || { tokens: 0, cost: 0, t: 0 };
    const cached = last.cached ? ` (${fmtInt(last.cached)} cached)` : "";
    this.totals.textContent = `${fmtInt(last.tokens)} tokens${cached} · ${fmtCost(last.cost)} · ${points.length} call(s)`;
    if (!points.length) {
      this.root.replaceChildren(h("p", { class: "placeholder", text: "No model calls yet." }));
      return;
    }
    const maxT = Math.max(last.t, 1);
    const maxTokens = Math.max(last.tokens, 1);
    const maxCost = last.cost > 0 ? last.cost : 0;  // no cost (a local model): a flat line at $0
    const x = (t) => PAD.left + (t / maxT) * (W - PAD.left - PAD.right);
    const yTok = (v) => H - PAD.bottom - (v / maxTokens) * (H - PAD.top - PAD.bottom);
    const yCost = (v) => H - PAD.bottom - (maxCost ? v / maxCost : 0) * (H - PAD.top - PAD.bottom);
    const line = [[0, 0], ...points.map((p) => [p.t, p.tokens])];
    const stepped = line.flatMap(([t, v], i) => (i ? [[t, line[i - 1][1]], [t, v]] : [[t, v]]));
    const tokPath = stepped.map(([t, v], i) => `${i ? "L" : "M"}${x(t).toFixed(1)},${yTok(v).toFixed(1)}`).join(" ");
    const area = `${tokPath} L${x(last.t).toFixed(1)},${yTok(0)} L${x(0)},${yTok(0)} Z`;
    const costPath = [[0, 0], ...points.map((p) => [p.t, p.cost])]
      .map(([t, v], i) => `${i ? "L" : "M"}${x(t).toFixed(1)},${yCost(v).toFixed(1)}`).join(" ");
    const grid = [0, 0.5, 1].map((f) => {
      const y = yTok(maxTokens * f);
      return s("g", { class: "grid" },
        s("line", { x1: PAD.left, x2: W - PAD.right, y1: y, y2: y }),
        s("text", { x: PAD.left - 6, y: y + 4, "text-anchor": "end", class: "axis tok", text: fmtInt(maxTokens * f) }),
        maxCost || !f ? s("text", { x: W - PAD.right + 6, y: y + 4, class: "axis cost", text: fmtCost(maxCost * f) }) : null);
    });
    const dots = points.map((p) => s("circle", { cx: x(p.t), cy: yTok(p.tokens), r: 3.5, fill: roleColour(p.role), class: "call-dot" },
      s("title", { text: `${roleLabel(p.role)} · +${fmtInt(p.step)} tokens · total ${fmtInt(p.tokens)} · ${fmtCost(p.cost)}` +
        (p.model ? ` · ${p.model}` : "") })));
    const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img",
      "aria-label": `${fmtInt(last.tokens)} tokens and ${fmtCost(last.cost)} over ${fmtSeconds(last.t)}` },
    grid,
    s("path", { d: area, class: "tok-area" }),
    s("path", { d: tokPath, class: "tok-line" }),
    s("path", { d: costPath, class: "cost-line" }),
    dots,
    s("text", { x: PAD.left, y: H - 8, class: "axis", text: "0s" }),
    s("text", { x: W - PAD.right, y: H - 8, "text-anchor": "end", class: "axis", text: fmtSeconds(maxT) }));
    const legend = h("div", { class: "legend" },
      h("span", { class: "key tok", text: "tokens" }), h("span", { class: "key cost", text: "cost" }));
    this.root.replaceChildren(svg, legend);
  }
}
