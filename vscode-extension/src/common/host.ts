/**
 * The slice of VS Code the extension uses, as plain interfaces.
 *
 * Only `vscodeapi.ts` (and `languageClient.ts`) load the `vscode` module; every other module
 * receives these interfaces, so the unit tests run in plain Node with fakes (src/test/fakes.ts).
 */

import type { FindingDiagnosticData, LintDiagnosticData, Range } from "./protocol";

/** A diagnostic's `data` as the editor hands it over: the fields of the server's records, each unchecked. */
export type DiagnosticData = { [K in keyof (FindingDiagnosticData & LintDiagnosticData)]?: unknown };

export interface Disposable {
  dispose(): unknown;
}

export interface QuickPickItem {
  label: string;
  description?: string;
  detail?: string;
}

export type MessageKind = "info" | "warning" | "error";

/** The active text editor, as the commands need it. */
export interface EditorContext {
  uri: string;
  /** The file's path when the document is a file on disk. */
  fsPath?: string;
  isDirty: boolean;
  /** The selection, when it is not empty. */
  selection?: Range;
  selectedText: string;
  cursorLine: number;
}

export type DiagnosticSeverityName = "error" | "warning" | "information" | "hint";

export interface DiagnosticInfo {
  message: string;
  severity: DiagnosticSeverityName;
  source?: string;
  code?: string | number;
  range: Range;
  /** The `data` the language server attached (`findingId`, `severity`, …), unchecked: read a field with its type. */
  data?: DiagnosticData;
}

export interface StatusItem {
  text: string;
  tooltip: string;
  command: string | undefined;
  /** Shown with the warning background. */
  warning: boolean;
  show(): void;
  dispose(): void;
}

export interface Log {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  show(): void;
}

export interface Webview {
  html: string;
  readonly cspSource: string;
  /** A URI the webview may load, for a path relative to the extension's folder. */
  resourceUri(relativePath: string): string;
  postMessage(message: unknown): Promise<boolean>;
  onDidReceiveMessage(listener: (message: unknown) => void): Disposable;
}

export interface WebviewPanel {
  readonly webview: Webview;
  readonly visible: boolean;
  title: string;
  reveal(): void;
  onDidDispose(listener: () => void): Disposable;
  dispose(): void;
}

export interface InputOptions {
  title?: string;
  prompt: string;
  placeHolder?: string;
  value?: string;
}

export interface PickOptions {
  title?: string;
  placeHolder?: string;
}

export interface Host {
  workspaceFolders(): string[];
  /** A `troupe.*` setting as stored (unvalidated); `settings.ts` makes sense of it. */
  setting(key: string): unknown;
  /** `affects("troupe.path")` tells whether that setting changed. */
  onSettingsChanged(listener: (affects: (key: string) => boolean) => void): Disposable;

  registerCommand(id: string, handler: (...args: unknown[]) => unknown): Disposable;
  showInputBox(options: InputOptions): Promise<string | undefined>;
  showQuickPick<T extends QuickPickItem>(items: T[], options: PickOptions): Promise<T | undefined>;
  showMessage(kind: MessageKind, message: string, ...actions: string[]): Promise<string | undefined>;
  openSettings(query: string): Promise<void>;
  /** Opens an http(s) URL in the browser (`vscode.env.openExternal`); false when it was not opened. */
  openExternal(url: string): Promise<boolean>;
  /** The address under which the user's browser reaches a local http(s) address (`vscode.env.asExternalUri`:
   * the same on a desktop, a forwarded port or a proxy path such as code-server's /proxy/<port>/). */
  asExternalUri(url: string): Promise<string>;
  /** Opens a new untitled document with this content. */
  showDocument(content: string, language: string): Promise<void>;

  activeEditor(): EditorContext | undefined;
  diagnostics(uri: string): DiagnosticInfo[];
  /** URIs of the open documents with unsaved changes. */
  dirtyDocuments(): string[];
  saveDocuments(uris: string[]): Promise<void>;

  createStatusItem(): StatusItem;
  createWebviewPanel(viewType: string, title: string, localResourceFolders: string[]): WebviewPanel;
}
