/**
 * The status bar item: idle, working (phase, tokens, cost), or daemon unreachable; a click
 * opens the Troupe menu.
 *
 * {@link statusView} is the whole decision, from what the server and the job store say; the
 * {@link StatusBar} only copies it onto the item.
 */

import type { Disposable, StatusItem } from "./host";
import type { JobStore } from "./jobs";
import type { ServerStatus } from "./protocol";
import type { ServerState } from "./server";

export const MENU_COMMAND = "troupe.statusMenu";

export interface StatusInput {
  server: ServerState;
  /** The last `troupe/status` the server sent (undefined before the first). */
  status?: ServerStatus;
  /** The newest active job, if any. */
  activeJob?: { title: string; phase?: string; role?: string; waiting: boolean };
  activeJobs: number;
}

export interface StatusView {
  text: string;
  tooltip: string;
  warning: boolean;
}

export function formatTokens(tokens: number): string {
  if (tokens < 1000) return `${Math.round(tokens)}`;
  if (tokens < 1_000_000) return `${(tokens / 1000).toFixed(tokens < 10_000 ? 1 : 0)}k`;
  return `${(tokens / 1_000_000).toFixed(1)}M`;
}

export function formatCost(cost: number): string {
  if (cost <= 0) return "$0";
  if (cost < 0.01) return `$${cost.toFixed(4)}`;
  return `$${cost.toFixed(2)}`;
}

export function statusView(input: StatusInput): StatusView {
  const { server, status } = input;
  const usage = status ? `${formatTokens(status.tokens)} tokens · ${formatCost(status.cost)}` : "";
  const session = usage ? `\nThis session: ${usage}.` : "";
  if (server.kind === "failed") {
    return { text: "$(warning) Troupe: not running", tooltip: `Troupe's language server is not running: ${server.reason}` +
      "\nClick for the log and a restart.", warning: true };
  }
  if (server.kind !== "running") {
    return { text: "$(loading~spin) Troupe: starting", tooltip: "Starting the Troupe language server…", warning: false };
  }
  if (status?.daemon === "unreachable") {
    return { text: "$(debug-disconnect) Troupe: daemon unreachable",
      tooltip: `Cannot reach the Troupe daemon${status.reason ? ` (${status.reason})` : ""}. ` +
        "Reviews and commands pause; the language server reconnects by itself. Start it with `troupe up`." +
        "\nClick for the log and a restart.", warning: true };
  }
  if (status?.daemon === "connecting") {
    return { text: "$(loading~spin) Troupe: connecting", tooltip: "Connecting to the Troupe daemon…", warning: false };
  }
  // The server counts the daemon's jobs; the window's own count only until it has spoken.
  const active = status ? status.activeJobs : input.activeJobs;
  if (active > 0) {
    const job = input.activeJob;
    const doing = job?.waiting ? "waiting for you" : job?.phase ? job.phase : "working";
    const parts = [`$(sync~spin) Troupe: ${doing}`];
    if (usage) parts.push(usage);
    const tooltip = `${active} job${active === 1 ? "" : "s"} running` +
      (job ? `; newest: ${job.title}${job.phase ? ` (${job.phase}${job.role ? ` · ${job.role}` : ""})` : ""}` : "") +
      (job?.waiting ? "\nThe team asked you a question." : "") + session + "\nClick for the Troupe menu.";
    return { text: parts.join(" · "), tooltip, warning: false };
  }
  return { text: "$(organization) Troupe", tooltip: `Troupe: idle.${session}\nClick for the Troupe menu.`,
    warning: false };
}

export class StatusBar implements Disposable {
  constructor(private readonly item: StatusItem) {
    item.command = MENU_COMMAND;
    item.show();
  }

  update(input: StatusInput): void {
    const view = statusView(input);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.warning = view.warning;
  }

  dispose(): void {
    this.item.dispose();
  }
}

/** Keeps the status bar in step with the server's state, its `troupe/status`, and the jobs. */
export class StatusController {
  private last: ServerStatus | undefined;

  constructor(private readonly bar: StatusBar, private readonly store: JobStore,
    private readonly server: { readonly state: ServerState }) {}

  get status(): ServerStatus | undefined {
    return this.last;
  }

  setStatus(status: ServerStatus): void {
    this.last = status;
    this.refresh();
  }

  /** The server stopped or restarted: what it said before no longer holds. */
  serverChanged(): void {
    if (this.server.state.kind !== "running") this.last = undefined;
    this.refresh();
  }

  refresh(): void {
    const active = this.store.active();
    const job = active[0];
    const input: StatusInput = { server: this.server.state, activeJobs: active.length };
    if (this.last) input.status = this.last;
    if (job) {
      input.activeJob = { title: job.title, waiting: job.question !== undefined };
      if (job.phase) input.activeJob.phase = job.phase;
      if (job.role) input.activeJob.role = job.role;
    }
    this.bar.update(input);
  }
}
