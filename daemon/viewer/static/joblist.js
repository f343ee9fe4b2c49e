// The list of jobs on the left: newest first, state, kind, what was asked, tokens.

import { h, fmtInt, fmtWhen } from "./dom.js";
import { ROOT } from "./api.js";
import { jobTitle } from "./view.js";

export function renderJobList(list, jobs, selectedId, onSelect) {
  if (!jobs.length) {
    list.replaceChildren(h("li", { class: "placeholder", text: "No jobs yet. Ask the team: troupe ask \"…\"" }));
    return;
  }
  list.replaceChildren(...jobs.map((job) => {
    const usage = job.usage || {};
    const tokens = (usage.prompt_tokens || 0) + (usage.completion_tokens || 0);
    const link = h("a", { href: `${ROOT}/jobs/${encodeURIComponent(job.id)}`, class: "job-link" },
      h("div", { class: "job-line" },
        h("span", { class: `dot ${job.state}`, title: job.state }),
        h("span", { class: "kind", text: job.kind }),
        h("span", { class: "when", text: fmtWhen(job.created_at) })),
      h("div", { class: "job-prompt", text: jobTitle(job) }),
      h("div", { class: "job-meta", text: `${job.id.slice(0, 8)} · ${job.state.replaceAll("_", " ")}` +
        (tokens ? ` · ${fmtInt(tokens)} tok` : "") +
        (usage.cached_prompt_tokens ? ` (${fmtInt(usage.cached_prompt_tokens)} cached)` : "") }));
    link.addEventListener("click", (event) => {
      if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      onSelect(job.id);
    });
    return h("li", { class: job.id === selectedId ? "selected" : "", dataset: { jobId: job.id } }, link);
  }));
}
