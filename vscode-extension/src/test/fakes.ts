/**
 * Fakes of VS Code (the Host) and of the language server (a Connection), for the unit tests.
 * Each records what the extension did and answers as the test scripts it.
 */

import type { Connection, ConnectionFactory, ConnectionOptions, ServerSpec } from "../common/connection";
import type {
  DiagnosticInfo,
  Disposable,
  EditorContext,
  Host,
  InputOptions,
  Log,
  MessageKind,
  PickOptions,
  QuickPickItem,
  StatusItem,
  Webview,
  WebviewPanel,
} from "../common/host";

export class FakeLog implements Log {
  lines: string[] = [];
  shown = 0;
  info(m: string): void { this.lines.push(`info: ${m}`); }
  warn(m: string): void { this.lines.push(`warn: ${m}`); }
  error(m: string): void { this.lines.push(`error: ${m}`); }
  show(): void { this.shown++; }
}

export class FakeStatusItem implements StatusItem {
  text = "";
  tooltip = "";
  command: string | undefined;
  warning = false;
  visible = false;
  show(): void { this.visible = true; }
  dispose(): void { this.visible = false; }
}

export class FakeWebview implements Webview {
  html = "";
  readonly cspSource = "https://csp.example";
  posted: TroupeView.ToWebview[] = [];
  private listener: ((m: unknown) => void) | undefined;
  resourceUri(rel: string): string { return `https://res.example/${rel}`; }
  async postMessage(message: unknown): Promise<boolean> {
    this.posted.push(structuredClone(message) as TroupeView.ToWebview);
    return true;
  }
  onDidReceiveMessage(listener: (m: unknown) => void): Disposable {
    this.listener = listener;
    return { dispose: () => { this.listener = undefined; } };
  }
  /** What the webview script would post. */
  send(message: unknown): void { this.listener?.(message); }
}

export class FakePanel implements WebviewPanel {
  readonly webview = new FakeWebview();
  visible = true;
  title: string;
  reveals = 0;
  disposed = false;
  private onDispose: (() => void) | undefined;
  constructor(readonly viewType: string, title: string, readonly folders: string[]) { this.title = title; }
  reveal(): void { this.reveals++; this.visible = true; }
  onDidDispose(listener: () => void): Disposable {
    this.onDispose = listener;
    return { dispose: () => undefined };
  }
  dispose(): void { this.disposed = true; this.onDispose?.(); }
}

export interface ShownMessage {
  kind: MessageKind;
  message: string;
  actions: string[];
}

export class FakeHost implements Host {
  folders: string[] = [];
  settings: Record<string, unknown> = {};
  commands = new Map<string, (...args: unknown[]) => unknown>();
  editor: EditorContext | undefined;
  diagnosticsByUri = new Map<string, DiagnosticInfo[]>();
  dirty = new Set<string>();
  saved: string[][] = [];
  documents: { content: string; language: string }[] = [];
  messages: ShownMessage[] = [];
  inputs: InputOptions[] = [];
  picks: { items: QuickPickItem[]; options: PickOptions }[] = [];
  panels: FakePanel[] = [];
  statusItems: FakeStatusItem[] = [];
  settingsOpened: string[] = [];
  /** Scripted answers, taken in order; undefined = the user pressed Escape. */
  inputAnswers: (string | undefined)[] = [];
  pickAnswers: ((items: QuickPickItem[]) => QuickPickItem | undefined)[] = [];
  messageAnswers: (string | undefined)[] = [];
  private settingsListeners: ((affects: (key: string) => boolean) => void)[] = [];

  workspaceFolders(): string[] { return this.folders; }
  setting(key: string): unknown { return this.settings[key]; }
  onSettingsChanged(listener: (affects: (key: string) => boolean) => void): Disposable {
    this.settingsListeners.push(listener);
    return { dispose: () => undefined };
  }
  changeSettings(values: Record<string, unknown>): void {
    Object.assign(this.settings, values);
    for (const l of this.settingsListeners) l((key) => Object.keys(values).some((k) => `troupe.${k}` === key));
  }
  registerCommand(id: string, handler: (...args: unknown[]) => unknown): Disposable {
    if (this.commands.has(id)) throw new Error(`command ${id} already exists`);
    this.commands.set(id, handler);
    return { dispose: () => this.commands.delete(id) };
  }
  async run(id: string, ...args: unknown[]): Promise<unknown> {
    const handler = this.commands.get(id);
    if (!handler) throw new Error(`no command ${id}`);
    return await handler(...args);
  }
  async showInputBox(options: InputOptions): Promise<string | undefined> {
    this.inputs.push(options);
    return this.inputAnswers.shift();
  }
  async showQuickPick<T extends QuickPickItem>(items: T[], options: PickOptions): Promise<T | undefined> {
    this.picks.push({ items, options });
    const answer = this.pickAnswers.shift();
    return answer ? answer(items) as T | undefined : undefined;
  }
  async showMessage(kind: MessageKind, message: string, ...actions: string[]): Promise<string | undefined> {
    this.messages.push({ kind, message, actions });
    return this.messageAnswers.shift();
  }
  async openSettings(query: string): Promise<void> { this.settingsOpened.push(query); }
  /** URLs opened in the browser; `externalAnswer` false: the user declined. */
  external: string[] = [];
  externalAnswer = true;
  async openExternal(url: string): Promise<boolean> {
    this.external.push(url);
    return this.externalAnswer;
  }
  /** asExternalUri as code-server answers it: its proxy address for the port, path and query dropped. */
  proxy?: string;
  async asExternalUri(url: string): Promise<string> {
    if (!this.proxy) return url;
    return `${this.proxy}/proxy/${new URL(url).port}/`;
  }
  async showDocument(content: string, language: string): Promise<void> { this.documents.push({ content, language }); }
  activeEditor(): EditorContext | undefined { return this.editor; }
  diagnostics(uri: string): DiagnosticInfo[] { return this.diagnosticsByUri.get(uri) ?? []; }
  dirtyDocuments(): string[] { return [...this.dirty]; }
  async saveDocuments(uris: string[]): Promise<void> {
    this.saved.push(uris);
    for (const uri of uris) this.dirty.delete(uri);
  }
  createStatusItem(): StatusItem {
    const item = new FakeStatusItem();
    this.statusItems.push(item);
    return item;
  }
  createWebviewPanel(viewType: string, title: string, folders: string[]): WebviewPanel {
    const panel = new FakePanel(viewType, title, folders);
    this.panels.push(panel);
    return panel;
  }
  errors(): string[] { return this.messages.filter((m) => m.kind === "error").map((m) => m.message); }
}

/** Picks the item whose label contains the text. */
export const pickLabel = (text: string) => (items: QuickPickItem[]): QuickPickItem | undefined =>
  items.find((i) => i.label.includes(text));

export interface SentCommand {
  command: string;
  argument: object;
}

export class FakeConnection implements Connection {
  started = 0;
  stopped = 0;
  commands: SentCommand[] = [];
  requests: { method: string; params: object }[] = [];
  notifications: { method: string; params: object }[] = [];
  /** Answers by command or method name; a function gets the argument; an Error is thrown. */
  answers = new Map<string, unknown>();
  startError: Error | undefined;
  private handlers = new Map<string, ((p: unknown) => void)[]>();
  private runningHandlers: ((running: boolean) => void)[] = [];

  constructor(readonly spec?: ServerSpec, readonly options?: ConnectionOptions) {}

  async start(): Promise<void> {
    this.started++;
    if (this.startError) throw this.startError;
  }
  async stop(): Promise<void> { this.stopped++; }
  private answer(name: string, arg: object): unknown {
    const answer = this.answers.get(name);
    if (answer instanceof Error) throw answer;
    return typeof answer === "function" ? (answer as (a: object) => unknown)(arg) : answer;
  }
  async executeCommand<T>(command: string, argument: object): Promise<T> {
    this.commands.push({ command, argument });
    return this.answer(command, argument) as T;
  }
  async request<T>(method: string, params: object): Promise<T> {
    this.requests.push({ method, params });
    return this.answer(method, params) as T;
  }
  async notify(method: string, params: object): Promise<void> { this.notifications.push({ method, params }); }
  onNotification(method: string, handler: (params: unknown) => void): Disposable {
    const list = this.handlers.get(method) ?? [];
    list.push(handler);
    this.handlers.set(method, list);
    return { dispose: () => list.splice(list.indexOf(handler), 1) };
  }
  onRunningChange(handler: (running: boolean) => void): Disposable {
    this.runningHandlers.push(handler);
    return { dispose: () => undefined };
  }
  /** The server sends a notification. */
  emit(method: string, params: unknown): void {
    for (const h of this.handlers.get(method) ?? []) h(params);
  }
  crash(): void { for (const h of this.runningHandlers) h(false); }
}

/** A factory that records every connection it makes; `prepare` scripts the next one. */
export function fakeFactory(): { factory: ConnectionFactory; made: FakeConnection[];
  prepare: (f: (c: FakeConnection) => void) => void } {
  const made: FakeConnection[] = [];
  let next: ((c: FakeConnection) => void) | undefined;
  return {
    made,
    prepare: (f) => { next = f; },
    factory: (spec, options) => {
      const c = new FakeConnection(spec, options);
      next?.(c);
      made.push(c);
      return c;
    },
  };
}

/** An error like the ones vscode-languageclient throws for a JSON-RPC error answer. */
export function rpcError(code: number, message: string): Error {
  return Object.assign(new Error(message), { code });
}

export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));
