/**
 * The real {@link Connection}: vscode-languageclient running `troupe lsp` over stdio.
 *
 * The client shows the server's work-done progress, applies its `workspace/applyEdit`, turns
 * its diagnostics into Problems (filtered by `troupe.minimumSeverity`) and registers its
 * `troupe.*` commands for the code actions; its log and stderr go to the Troupe output channel.
 */

import type * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
  State,
} from "vscode-languageclient/node";

import type { Connection, ConnectionFactory, ConnectionOptions, ServerSpec } from "./connection";
import { shown } from "./diagnostics";
import type { Disposable } from "./host";
import { CLIENT_ID } from "./settings";
import { diagnosticInfo } from "./vscodeapi";

class LanguageClientConnection implements Connection {
  private readonly client: LanguageClient;

  constructor(spec: ServerSpec, options: ConnectionOptions, output: vscode.OutputChannel) {
    // No `transport`: with TransportKind.stdio the client would append `--stdio`, which
    // `troupe lsp` (stdio by default) does not take.
    const process = { command: spec.command, args: spec.args,
      options: { env: spec.env, ...(spec.cwd ? { cwd: spec.cwd } : {}) } };
    const serverOptions: ServerOptions = { run: process, debug: process };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }],
      initializationOptions: spec.initializationOptions,
      outputChannel: output,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: {
        handleDiagnostics: (uri, diagnostics, next) =>
          next(uri, diagnostics.filter((d) => shown(diagnosticInfo(d), options.minimumSeverity()))),
      },
    };
    this.client = new LanguageClient(CLIENT_ID, "Troupe", serverOptions, clientOptions);
  }

  async start(): Promise<void> {
    await this.client.start();
  }

  async stop(): Promise<void> {
    if (this.client.needsStop()) await this.client.stop(5000);
  }

  async executeCommand<T>(command: string, argument: object): Promise<T> {
    return await this.client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [argument] }) as T;
  }

  async request<T>(method: string, params: object): Promise<T> {
    return await this.client.sendRequest<T>(method, params);
  }

  async notify(method: string, params: object): Promise<void> {
    await this.client.sendNotification(method, params);
  }

  onNotification(method: string, handler: (params: unknown) => void): Disposable {
    return this.client.onNotification(method, (params: unknown) => {
      handler(params);
    });
  }

  onRunningChange(handler: (running: boolean) => void): Disposable {
    return this.client.onDidChangeState((event) => {
      if (event.newState === State.Running) handler(true);
      else if (event.newState === State.Stopped) handler(false);
    });
  }
}

export function languageClientFactory(output: vscode.OutputChannel): ConnectionFactory {
  return (spec, options) => new LanguageClientConnection(spec, options, output);
}
