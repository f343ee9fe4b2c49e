/**
 * The extension's view of one running language server, as an interface.
 *
 * `languageClient.ts` implements it with vscode-languageclient; the tests with a fake. Errors
 * from the server arrive as {@link ServerError} with the server's own message (which already
 * says what went wrong and what to do).
 */

import type { Disposable } from "./host";
import type { Severity } from "./protocol";

export interface Connection {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** `workspace/executeCommand` with the one object argument every `troupe.*` command takes. */
  executeCommand<T>(command: string, argument: object): Promise<T>;
  request<T>(method: string, params: object): Promise<T>;
  notify(method: string, params: object): Promise<void>;
  onNotification(method: string, handler: (params: unknown) => void): Disposable;
  /** Called with false when the server process stops or crashes, true when it (re)starts. */
  onRunningChange(handler: (running: boolean) => void): Disposable;
}

/** How to start the server process; see server.ts. */
export interface ServerSpec {
  command: string;
  args: string[];
  cwd?: string;
  env: Record<string, string>;
  initializationOptions: object;
}

export interface ConnectionOptions {
  /** Read on every publishDiagnostics: the current `troupe.minimumSeverity`. */
  minimumSeverity(): Severity;
}

export type ConnectionFactory = (spec: ServerSpec, options: ConnectionOptions) => Connection;

export class ServerError extends Error {
  constructor(message: string, readonly code?: number) {
    super(message);
    this.name = "ServerError";
  }
}

/** A readable line for any error thrown by a connection or a handler. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === "object" && error !== null && "message" in error) {
    return String((error as { message: unknown }).message);
  }
  return String(error);
}

export function errorCode(error: unknown): number | undefined {
  if (typeof error === "object" && error !== null && "code" in error) {
    const code = (error as { code: unknown }).code;
    return typeof code === "number" ? code : undefined;
  }
  return undefined;
}
