// A unified diff rendered per file: hunk headers, old/new line numbers, + and − lines coloured.

import { h } from "./dom.js";

export function parseDiff(text) {
  const files = [];
  let file = null;
  let oldNo = 0;
  let newNo = 0;
  const start = (name) => { file = { name, lines: [], added: 0, removed: 0 }; files.push(file); };
  for (const line of String(text || "").split("\n")) {
    if (line.startsWith("diff --git ")) { start(line.replace(/^diff --git a\/(.*) b\/.*$/, "$1")); continue; }
    if (!file) start("(change)");
    if (line.startsWith("--- ") || line.startsWith("+++ ")) {
      const name = line.slice(4).replace(/^[ab]\//, "");
      if (line.startsWith("+++ ") && name !== "/dev/null") file.name = name;
      continue;
    }
    if (/^(index |new file mode|deleted file mode|similarity index|rename (from|to) )/.test(line)) continue;
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      file.lines.push({ kind: "hunk", text: line });
    } else if (line.startsWith("+")) {
      file.added += 1;
      file.lines.push({ kind: "add", text: line.slice(1), newNo: newNo++ });
    } else if (line.startsWith("-")) {
      file.removed += 1;
      file.lines.push({ kind: "del", text: line.slice(1), oldNo: oldNo++ });
    } else if (line.startsWith(" ")) {
      file.lines.push({ kind: "ctx", text: line.slice(1), oldNo: oldNo++, newNo: newNo++ });
    } else if (line.startsWith("\\")) {
      file.lines.push({ kind: "meta", text: line });
    }
  }
  return files.filter((f) => f.lines.length);
}

const SIGN = { add: "+", del: "-", ctx: " ", hunk: "", meta: "" };

export function renderDiff(text) {
  const files = parseDiff(text);
  if (!files.length) return [h("p", { class: "placeholder", text: "The change is empty." })];
  return files.map((file) => h("details", { class: "diff-file", open: "" },
    h("summary", {},
      h("span", { class: "diff-name", text: file.name }),
      h("span", { class: "count pass", text: `+${file.added}` }),
      h("span", { class: "count fail", text: `−${file.removed}` })),
    h("table", { class: "diff" }, h("tbody", {}, file.lines.map((line) => (
      line.kind === "hunk" || line.kind === "meta"
        ? h("tr", { class: line.kind }, h("td", { colspan: 4, text: line.text }))
        : h("tr", { class: line.kind },
          h("td", { class: "ln", text: line.oldNo ?? "" }),
          h("td", { class: "ln", text: line.newNo ?? "" }),
          h("td", { class: "sign", text: SIGN[line.kind] }),
          h("td", { class: "src", text: line.text }))
    ))))));
}

export class ChangeView {
  constructor(root, meta) { this.root = root; this.meta = meta; }

  reset() {
    this.root.replaceChildren(h("p", { class: "placeholder", text: "No change proposed (yet)." }));
    this.meta.textContent = "";
  }

  apply(event) {
    if (event.kind !== "change_proposed") return;
    const data = event.data || {};
    this.meta.textContent = `change ${String(data.change_id || "").slice(0, 8)} · ${(data.files || []).length} file(s)`;
    const warning = data.tests_failed
      ? [h("p", { class: "tests-failed", text: `⚠ Its own tests failed: ${data.tests_failed}` })] : [];
    this.root.replaceChildren(...warning, ...renderDiff(data.diff));
  }
}
