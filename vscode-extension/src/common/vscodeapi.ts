/**
 * The VS Code API behind the {@link Host} interface: the one place (with languageClient.ts)
 * that loads the `vscode` module, so everything else runs in unit tests without VS Code.
 */

import * as vscode from "vscode";

import type { CancellationToken, ChatRequest, ChatStream } from "../chat/participant";
import type {
  DiagnosticData,
  DiagnosticInfo,
  DiagnosticSeverityName,
  Disposable,
  EditorContext,
  Host,
  Log,
  MessageKind,
  StatusItem,
  WebviewPanel,
} from "./host";
import type { Range } from "./protocol";

const SECTION = "troupe";

function range(r: vscode.Range): Range {
  return { start: { line: r.start.line, character: r.start.character },
    end: { line: r.end.line, character: r.end.character } };
}

const SEVERITY_NAMES: Record<number, DiagnosticSeverityName> = {
  [vscode.DiagnosticSeverity.Error]: "error",
  [vscode.DiagnosticSeverity.Warning]: "warning",
  [vscode.DiagnosticSeverity.Information]: "information",
  [vscode.DiagnosticSeverity.Hint]: "hint",
};

export function diagnosticInfo(d: vscode.Diagnostic): DiagnosticInfo {
  // vscode-languageclient keeps the server's `data` on the diagnostic it creates.
  const raw = (d as vscode.Diagnostic & { data?: unknown }).data;
  const code = typeof d.code === "object" ? d.code.value : d.code;
  const info: DiagnosticInfo = { message: d.message, severity: SEVERITY_NAMES[d.severity] ?? "error", range: range(d.range) };
  if (d.source !== undefined) info.source = d.source;
  if (code !== undefined) info.code = code;
  if (typeof raw === "object" && raw !== null) info.data = raw as DiagnosticData;
  else if (typeof code === "number") info.data = { findingId: code }; // the server's code is the finding id when no rule
  return info;
}

export interface OutputLog extends Log {
  readonly channel: vscode.LogOutputChannel;
}

export function createLog(name: string): OutputLog {
  const channel = vscode.window.createOutputChannel(name, { log: true });
  return {
    channel,
    info: (m) => channel.info(m),
    warn: (m) => channel.warn(m),
    error: (m) => channel.error(m),
    show: () => channel.show(true),
  };
}

function statusItem(): StatusItem {
  const item = vscode.window.createStatusBarItem("troupe.status", vscode.StatusBarAlignment.Left, 10);
  item.name = "Troupe";
  let warning = false;
  return {
    get text() { return item.text; },
    set text(v: string) { item.text = v; },
    get tooltip() { return typeof item.tooltip === "string" ? item.tooltip : ""; },
    set tooltip(v: string) { item.tooltip = v; },
    get command() { return typeof item.command === "string" ? item.command : undefined; },
    set command(v: string | undefined) { item.command = v; },
    get warning() { return warning; },
    set warning(v: boolean) {
      warning = v;
      item.backgroundColor = v ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    },
    show: () => item.show(),
    dispose: () => item.dispose(),
  };
}

function webviewPanel(extensionUri: vscode.Uri, viewType: string, title: string, folders: string[]): WebviewPanel {
  const panel = vscode.window.createWebviewPanel(viewType, title,
    { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
    { enableScripts: true, retainContextWhenHidden: true,
      localResourceRoots: folders.map((f) => vscode.Uri.joinPath(extensionUri, ...f.split("/"))) });
  const webview = panel.webview;
  return {
    webview: {
      get html() { return webview.html; },
      set html(v: string) { webview.html = v; },
      get cspSource() { return webview.cspSource; },
      resourceUri: (rel) => webview.asWebviewUri(vscode.Uri.joinPath(extensionUri, ...rel.split("/"))).toString(),
      postMessage: async (m) => await webview.postMessage(m),
      onDidReceiveMessage: (listener) => webview.onDidReceiveMessage(listener),
    },
    get visible() { return panel.visible; },
    get title() { return panel.title; },
    set title(v: string) { panel.title = v; },
    reveal: () => panel.reveal(undefined, true),
    onDidDispose: (listener) => panel.onDidDispose(listener),
    dispose: () => panel.dispose(),
  };
}

function editorContext(editor: vscode.TextEditor | undefined): EditorContext | undefined {
  if (!editor) return undefined;
  const doc = editor.document;
  const sel = editor.selection;
  const context: EditorContext = { uri: doc.uri.toString(), isDirty: doc.isDirty, cursorLine: sel.active.line,
    selectedText: sel.isEmpty ? "" : doc.getText(sel) };
  if (doc.uri.scheme === "file") context.fsPath = doc.uri.fsPath;
  if (!sel.isEmpty) context.selection = range(sel);
  return context;
}

export function createHost(context: vscode.ExtensionContext): Host {
  const show: Record<MessageKind, (m: string, ...a: string[]) => Thenable<string | undefined>> = {
    info: vscode.window.showInformationMessage,
    warning: vscode.window.showWarningMessage,
    error: vscode.window.showErrorMessage,
  };
  return {
    workspaceFolders: () => (vscode.workspace.workspaceFolders ?? [])
      .filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath),
    setting: (key) => vscode.workspace.getConfiguration(SECTION).get(key),
    onSettingsChanged: (listener) => vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(SECTION)) listener((key) => e.affectsConfiguration(key));
    }),
    registerCommand: (id, handler) => vscode.commands.registerCommand(id, handler),
    showInputBox: async (o) => await vscode.window.showInputBox({ ...o, ignoreFocusOut: true }),
    showQuickPick: async (items, o) => await vscode.window.showQuickPick(items, { ...o, matchOnDescription: true }),
    showMessage: async (kind, message, ...actions) => await show[kind](message, ...actions),
    openSettings: async (query) => { await vscode.commands.executeCommand("workbench.action.openSettings", query); },
    openExternal: async (url) => await vscode.env.openExternal(vscode.Uri.parse(url, true)),
    asExternalUri: async (url) => (await vscode.env.asExternalUri(vscode.Uri.parse(url, true))).toString(true),
    showDocument: async (content, language) => {
      const doc = await vscode.workspace.openTextDocument({ content, language });
      await vscode.window.showTextDocument(doc, { preview: false });
    },
    activeEditor: () => editorContext(vscode.window.activeTextEditor),
    diagnostics: (uri) => vscode.languages.getDiagnostics(vscode.Uri.parse(uri)).map(diagnosticInfo),
    dirtyDocuments: () => vscode.workspace.textDocuments.filter((d) => d.isDirty).map((d) => d.uri.toString()),
    saveDocuments: async (uris) => {
      for (const doc of vscode.workspace.textDocuments) {
        if (uris.includes(doc.uri.toString())) await doc.save();
      }
    },
    createStatusItem: statusItem,
    createWebviewPanel: (viewType, title, folders) => webviewPanel(context.extensionUri, viewType, title, folders),
  };
}

/** Registers the `@troupe` participant where this VS Code has the chat API; undefined elsewhere. */
export function registerChatParticipant(id: string,
  handle: (request: ChatRequest, stream: ChatStream, token: CancellationToken) => Promise<{ metadata: object }>):
  Disposable | undefined {
  const chat = (vscode as { chat?: typeof vscode.chat }).chat;
  if (typeof chat?.createChatParticipant !== "function") return undefined;
  const participant = chat.createChatParticipant(id, async (request, _context, stream, token) =>
    await handle({ prompt: request.prompt, command: request.command }, {
      progress: (text) => stream.progress(text),
      markdown: (text) => stream.markdown(text),
      button: (command) => stream.button(command),
    }, token));
  participant.iconPath = new vscode.ThemeIcon("organization");
  return participant;
}
