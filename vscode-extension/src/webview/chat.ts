/**
 * The chat view's script (runs in the webview, a classic script under a strict CSP).
 *
 * It only draws what the extension sends (TroupeView.ToWebview) and posts back what the user
 * did (TroupeView.FromWebview). Every text is set with `textContent`, never parsed as HTML.
 */

declare function acquireVsCodeApi(): { postMessage(message: TroupeView.FromWebview): void };

(function main(): void {
  const vscode = acquireVsCodeApi();
  const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
  const log = $<HTMLElement>("log");
  const empty = $<HTMLElement>("empty");
  const jobSelect = $<HTMLSelectElement>("job");
  const usage = $<HTMLElement>("usage");
  const cancel = $<HTMLButtonElement>("cancel");
  const connection = $<HTMLElement>("connection");
  const form = $<HTMLFormElement>("ask");
  const prompt = $<HTMLTextAreaElement>("prompt");
  const mode = $<HTMLSelectElement>("mode");

  const FOLD_LINES = 12;
  const FOLD_CHARS = 1200;
  let selected: string | undefined;
  let jobs: TroupeView.JobSummary[] = [];

  function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string):
    HTMLElementTagNameMap[K] {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function button(label: string, onClick: () => void, secondary = false): HTMLButtonElement {
    const b = el("button", secondary ? "secondary" : undefined, label);
    b.type = "button";
    b.addEventListener("click", onClick);
    return b;
  }

  function tokens(n: number): string {
    return n < 1000 ? String(Math.round(n)) : n < 1e6 ? `${(n / 1000).toFixed(n < 1e4 ? 1 : 0)}k` : `${(n / 1e6).toFixed(1)}M`;
  }

  function cost(c: number): string {
    return c <= 0 ? "$0" : c < 0.01 ? `$${c.toFixed(4)}` : `$${c.toFixed(2)}`;
  }

  /** A long message (prompts with the whole repository) folds to its first lines. */
  function longText(text: string): HTMLElement {
    const lines = text.split("\n");
    if (lines.length <= FOLD_LINES && text.length <= FOLD_CHARS) return el("div", "text", text);
    const details = el("details", "text");
    details.append(el("summary", undefined, `${lines.slice(0, 3).join("\n").slice(0, 300)}…`),
      el("div", "text", text));
    return details;
  }

  function diffView(diff: string): HTMLElement {
    const pre = el("pre", "diff");
    for (const line of diff.split("\n")) {
      const cls = line.startsWith("+++") || line.startsWith("---") ? "file"
        : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "ctx";
      pre.appendChild(el("span", cls, line + "\n"));
    }
    return pre;
  }

  function render(entry: TroupeView.Entry): HTMLElement {
    const box = el("div", `entry ${entry.kind}`);
    box.dataset["id"] = entry.id;
    switch (entry.kind) {
      case "phase":
        box.textContent = entry.cycle ? `${entry.phase} (round ${entry.cycle})` : entry.phase;
        break;
      case "message": {
        box.classList.add(`role-${entry.role.replace(/[^a-z0-9_-]/gi, "")}`);
        const who = entry.to ? `${entry.role} → ${entry.to}` : entry.role;
        box.append(el("div", "who", entry.phase ? `${who} · ${entry.phase}` : who), longText(entry.text));
        break;
      }
      case "question": {
        const human = entry.to === "human";
        box.append(el("div", "who", `${entry.role ?? "the team"} asks ${human ? "you" : entry.to}`),
          el("div", "text", entry.text));
        if (entry.answer !== undefined) {
          box.append(el("div", "answer", `${entry.answeredBy ?? "answer"}: ${entry.answer}`));
        } else if (human) {
          const area = el("textarea", "answer-box");
          area.rows = 2;
          area.placeholder = "Your answer";
          const send = button("Answer", () => {
            if (!area.value.trim()) return;
            send.disabled = true;
            vscode.postMessage({ type: "answer", jobId: entry.jobId, questionId: entry.questionId, text: area.value });
          });
          const actions = el("div", "actions");
          actions.append(send);
          box.append(area, actions);
        }
        break;
      }
      case "tool":
        box.classList.add(entry.ok ? "ok" : "failed");
        box.append(el("span", "who", `${entry.tool} ${entry.ok ? "✓" : "✗"}`), el("span", "text", ` ${entry.summary}`));
        break;
      case "change": {
        box.append(el("div", "who", `Proposed change to ${entry.files.join(", ") || "no file"} (${entry.state})`),
          diffView(entry.diff));
        if (entry.note) box.append(el("div", "note", entry.note));
        if (entry.testsFailed && entry.state === "proposed") {
          box.classList.add("tests-failed");
          box.append(el("div", "warning", `⚠ Its own tests failed: ${entry.testsFailed}`));
        }
        if (entry.state === "proposed") {
          const actions = el("div", "actions");
          actions.append(
            button(entry.testsFailed ? "Apply Anyway" : "Apply",
              () => vscode.postMessage({ type: "apply", changeId: entry.changeId })),
            button("Discard", () => vscode.postMessage({ type: "discard", changeId: entry.changeId }), true));
          box.append(actions);
        }
        break;
      }
      case "finding":
        box.classList.add(`severity-${entry.severity.replace(/[^a-z]/gi, "")}`);
        box.append(el("span", "who", `${entry.severity} · ${entry.file}:${entry.line}`), el("span", "text", ` ${entry.message}`));
        break;
      case "state":
        box.classList.add(`state-${entry.state.replace(/[^a-z_]/gi, "")}`);
        box.textContent = entry.error ? `${entry.state}: ${entry.error}` : entry.state;
        break;
      case "result":
        box.append(el("div", "who", "Answer"), el("div", "text", entry.text));
        break;
      case "log":
        box.textContent = `${entry.level}: ${entry.text}`;
        break;
      case "viewer": {
        // The extension opens the link in the browser; the webview never navigates.
        const actions = el("div", "actions");
        actions.append(button("Open in viewer", () => vscode.postMessage({ type: "openViewer", jobId: entry.jobId }),
          true));
        box.append(actions);
        break;
      }
    }
    return box;
  }

  function put(entry: TroupeView.Entry): void {
    const node = render(entry);
    const old = Array.from(log.children).find((c) => (c as HTMLElement).dataset["id"] === entry.id);
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    if (old) old.replaceWith(node);
    else log.appendChild(node);
    empty.hidden = true;
    if (atBottom) log.scrollTop = log.scrollHeight;
  }

  function showJobs(list: TroupeView.JobSummary[], chosen: string | undefined, connected: boolean): void {
    jobs = list;
    selected = chosen;
    jobSelect.replaceChildren(...list.map((job) => {
      const option = el("option", undefined,
        `${job.title} — ${job.waiting ? "waiting for you" : job.state.replace(/_/g, " ")}`);
      option.value = job.id;
      option.selected = job.id === chosen;
      return option;
    }));
    jobSelect.hidden = list.length === 0;
    const job = list.find((j) => j.id === chosen);
    const doing = job?.active && job.phase ? `${job.phase} · ` : "";
    usage.textContent = job ? `${doing}${tokens(job.tokens)} tokens · ${cost(job.cost)}` : "";
    cancel.hidden = !job?.active;
    connection.hidden = connected;
  }

  window.addEventListener("message", (event: MessageEvent<TroupeView.ToWebview>) => {
    const message = event.data;
    switch (message.type) {
      case "state":
        showJobs(message.jobs, message.selected, message.connected);
        log.replaceChildren(empty);
        empty.hidden = message.entries.length > 0;
        message.entries.forEach(put);
        log.scrollTop = log.scrollHeight;
        break;
      case "jobs":
        showJobs(message.jobs, message.selected, message.connected);
        break;
      case "entry":
        if (message.jobId === selected) put(message.entry);
        break;
    }
  });

  jobSelect.addEventListener("change", () => vscode.postMessage({ type: "select", jobId: jobSelect.value }));
  cancel.addEventListener("click", () => {
    if (selected && jobs.some((j) => j.id === selected && j.active)) vscode.postMessage({ type: "cancel", jobId: selected });
  });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!prompt.value.trim()) return;
    vscode.postMessage({ type: "ask", prompt: prompt.value, mode: mode.value === "change" ? "change" : "ask" });
    prompt.value = "";
  });
  prompt.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) form.requestSubmit();
  });
  vscode.postMessage({ type: "ready" });
})();
