/**
 * The Troupe chat view: a webview panel that follows one job at a time — its conversation by
 * role and phase, the team's questions with an answer box, proposed diffs with Apply and
 * Discard — and lets the user ask the team. It needs no other extension.
 *
 * The panel only relays: what to show comes from the {@link JobStore}; what the user does goes
 * to {@link ChatActions} (the same code the commands use).
 */

import type { Disposable, Host, WebviewPanel } from "../common/host";
import type { JobStore } from "../common/jobs";
import { chatHtml, makeNonce } from "./html";
import { parseFromWebview } from "./messages";

export const VIEW_TYPE = "troupe.chat";
export const SCRIPT = "out/webview/webview/chat.js";
export const STYLE = "media/chat.css";
const RESOURCE_FOLDERS = ["media", "out/webview"];

export interface ChatActions {
  ask(prompt: string, mode: "ask" | "change"): Promise<unknown>;
  answer(jobId: string, questionId: string, text: string): Promise<unknown>;
  apply(changeId: string): Promise<unknown>;
  discard(changeId: string): Promise<unknown>;
  cancel(jobId: string): Promise<unknown>;
  /** Opens the run viewer on the job in the browser (never in the webview). */
  openViewer(jobId: string): Promise<unknown>;
}

export class ChatPanel implements Disposable {
  private panel: WebviewPanel | undefined;
  private selected: string | undefined;
  private ready = false;
  private connected = true;
  private readonly subscriptions: Disposable[] = [];
  private panelSubscriptions: Disposable[] = [];

  constructor(private readonly host: Host, private readonly store: JobStore, private readonly actions: ChatActions) {
    this.subscriptions.push(store.onDidChange((jobId, entry) => this.onJobChanged(jobId, entry)));
  }

  get visible(): boolean {
    return this.panel?.visible ?? false;
  }

  /** The job whose conversation the user sees right now, if any. */
  get shownJob(): string | undefined {
    return this.visible ? this.selected : undefined;
  }

  /** Whether the user can see this job's conversation right now. */
  isShowing(jobId: string): boolean {
    return this.visible && this.selected === jobId;
  }

  /** Opens (or reveals) the panel on a job: the given one, else the one shown, else the current one. */
  show(jobId?: string): void {
    this.selected = jobId ?? this.selected ?? this.store.current()?.id;
    if (!this.panel) {
      this.panel = this.host.createWebviewPanel(VIEW_TYPE, "Troupe", RESOURCE_FOLDERS);
      this.ready = false;
      const webview = this.panel.webview;
      webview.html = chatHtml({ cspSource: webview.cspSource, nonce: makeNonce(), title: "Troupe",
        scriptUri: webview.resourceUri(SCRIPT), styleUri: webview.resourceUri(STYLE) });
      this.panelSubscriptions = [
        webview.onDidReceiveMessage((raw) => void this.onMessage(raw)),
        this.panel.onDidDispose(() => this.closed()),
      ];
    } else {
      this.panel.reveal();
      this.postState();
    }
    this.updateTitle();
  }

  setConnected(connected: boolean): void {
    if (connected === this.connected) return;
    this.connected = connected;
    this.postJobs();
  }

  dispose(): void {
    for (const d of this.subscriptions) d.dispose();
    this.panel?.dispose();
  }

  // ---------------------------------------------------------------- internals

  private closed(): void {
    for (const d of this.panelSubscriptions) d.dispose();
    this.panelSubscriptions = [];
    this.panel = undefined;
    this.ready = false;
  }

  private updateTitle(): void {
    if (!this.panel) return;
    const job = this.selected ? this.store.get(this.selected) : undefined;
    this.panel.title = job ? `Troupe: ${job.title}` : "Troupe";
  }

  private post(message: TroupeView.ToWebview): void {
    if (this.panel && this.ready) void this.panel.webview.postMessage(message);
  }

  private postState(): void {
    const message: TroupeView.ToWebview = {
      type: "state", jobs: this.store.summaries(), entries: this.selected ? this.store.get(this.selected)?.entries ?? [] : [],
      connected: this.connected,
    };
    if (this.selected) message.selected = this.selected;
    this.post(message);
  }

  private postJobs(): void {
    const message: TroupeView.ToWebview = { type: "jobs", jobs: this.store.summaries(), connected: this.connected };
    if (this.selected) message.selected = this.selected;
    this.post(message);
  }

  private onJobChanged(jobId: string, entry?: TroupeView.Entry): void {
    if (!this.panel) return;
    if (!this.selected) {
      this.selected = jobId; // a first job appeared while the view was empty: follow it
      this.postState();
      this.updateTitle();
      return;
    }
    if (entry && jobId === this.selected) this.post({ type: "entry", jobId, entry });
    this.postJobs();
    if (jobId === this.selected) this.updateTitle();
  }

  private async onMessage(raw: unknown): Promise<void> {
    const message = parseFromWebview(raw);
    if (!message) return; // not ours, or malformed: ignored
    switch (message.type) {
      case "ready":
        this.ready = true;
        this.postState();
        return;
      case "select":
        this.selected = message.jobId;
        this.postState();
        this.updateTitle();
        return;
      case "ask":
        await this.actions.ask(message.prompt, message.mode);
        return;
      case "answer":
        await this.actions.answer(message.jobId, message.questionId, message.text);
        this.postState(); // answered: the entry shows the answer; failed: its box is usable again
        return;
      case "apply":
        await this.actions.apply(message.changeId);
        return;
      case "discard":
        await this.actions.discard(message.changeId);
        return;
      case "cancel":
        await this.actions.cancel(message.jobId);
        return;
      case "openViewer":
        await this.actions.openViewer(message.jobId);
        return;
    }
  }
}
