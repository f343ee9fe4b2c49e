/**
 * Starting `troupe lsp` (stdio) and keeping one connection to it.
 *
 * `troupe` is found from the `troupe.path` setting, else the workspace's `.venv/bin/troupe`,
 * else `PATH`. {@link ServerManager} starts the server, restarts it when the path changes, sends
 * other setting changes to the running server, and keeps notification handlers across restarts.
 */

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

import { type Connection, type ConnectionFactory, ServerError, type ServerSpec, describeError } from "./connection";
import type { Disposable, Log } from "./host";
import type { Severity } from "./protocol";
import { type TroupeSettings, changed, configurationChange, initializationOptions, needsRestart } from "./settings";

export type Found = { command: string; from: "setting" | "venv" | "PATH" } | { error: string };

export interface FindOptions {
  configured: string;
  folders: string[];
  env: Record<string, string | undefined>;
  platform?: NodeJS.Platform;
}

function isExecutable(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string, env: FindOptions["env"], platform: NodeJS.Platform): string | undefined {
  const exts = platform === "win32" ? (env["PATHEXT"] ?? ".EXE;.CMD;.BAT").split(";") : [""];
  for (const dir of (env["PATH"] ?? "").split(path.delimiter)) {
    if (!dir) continue;
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      if (isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

/** Where `troupe` is: the setting, else `<folder>/.venv/bin/troupe`, else `PATH`. */
export function findTroupe({ configured, folders, env, platform = process.platform }: FindOptions): Found {
  if (configured) {
    let wanted = configured.replace(/^~(?=$|[\\/])/, os.homedir());
    if (folders[0]) wanted = wanted.replace(/\$\{workspaceFolder\}/g, folders[0]);
    if (!/[\\/]/.test(wanted)) {
      const found = onPath(wanted, env, platform);
      return found ? { command: found, from: "setting" }
        : { error: `troupe.path is "${configured}", but there is no such command on PATH` };
    }
    const absolute = path.isAbsolute(wanted) ? wanted : path.resolve(folders[0] ?? process.cwd(), wanted);
    return isExecutable(absolute) ? { command: absolute, from: "setting" }
      : { error: `troupe.path is "${configured}", but ${absolute} is not an executable file` };
  }
  const venv = platform === "win32" ? [".venv", "Scripts", "troupe.exe"] : [".venv", "bin", "troupe"];
  for (const folder of folders) {
    const candidate = path.join(folder, ...venv);
    if (isExecutable(candidate)) return { command: candidate, from: "venv" };
  }
  const found = onPath("troupe", env, platform);
  if (found) return { command: found, from: "PATH" };
  return {
    error: "cannot find `troupe`: set troupe.path, or install Troupe in the workspace's .venv " +
      "(python -m venv .venv && .venv/bin/pip install troupe) or on PATH",
  };
}

export function serverSpec(command: string, settings: TroupeSettings, folders: string[],
  baseEnv: Record<string, string | undefined>): ServerSpec {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(baseEnv)) if (value !== undefined) env[key] = value;
  // troupe.model reaches the daemon per workspace through the server (initializationOptions), not as
  // TROUPE_MODEL: the environment wins over it, so a daemon the server starts would keep the first model.
  env["PYTHONUNBUFFERED"] = "1";
  const spec: ServerSpec = { command, args: ["lsp"], env, initializationOptions: initializationOptions(settings) };
  if (folders[0]) spec.cwd = folders[0];
  return spec;
}

export type ServerState =
  | { kind: "stopped" }
  | { kind: "starting"; command: string }
  | { kind: "running"; command: string }
  | { kind: "failed"; reason: string };

type Handler = (params: unknown) => void;

export interface ServerManagerDeps {
  factory: ConnectionFactory;
  folders: () => string[];
  log: Log;
  env?: Record<string, string | undefined>;
}

export class ServerManager implements Disposable {
  private connection: Connection | undefined;
  private attached: Disposable[] = [];
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly stateListeners = new Set<(state: ServerState) => void>();
  private current: ServerState = { kind: "stopped" };
  private settings: TroupeSettings | undefined;
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly deps: ServerManagerDeps) {}

  get state(): ServerState {
    return this.current;
  }

  get minimumSeverity(): Severity {
    return this.settings?.minimumSeverity ?? "info";
  }

  /** Handlers stay registered across restarts. */
  onNotification(method: string, handler: Handler): Disposable {
    let set = this.handlers.get(method);
    if (!set) {
      set = new Set();
      this.handlers.set(method, set);
      this.connection?.onNotification(method, (params) => this.dispatch(method, params));
    }
    set.add(handler);
    return { dispose: () => set?.delete(handler) };
  }

  onStateChange(listener: (state: ServerState) => void): Disposable {
    this.stateListeners.add(listener);
    return { dispose: () => this.stateListeners.delete(listener) };
  }

  start(settings: TroupeSettings): Promise<void> {
    return this.serially(() => this.doStart(settings));
  }

  stop(): Promise<void> {
    return this.serially(() => this.doStop());
  }

  restart(settings?: TroupeSettings): Promise<void> {
    return this.serially(async () => {
      const next = settings ?? this.settings;
      await this.doStop();
      if (next) await this.doStart(next);
    });
  }

  /** A restart when the path changed; otherwise the running server is told. */
  applySettings(settings: TroupeSettings): Promise<void> {
    return this.serially(async () => {
      const before = this.settings;
      if (!before || needsRestart(before, settings) || this.current.kind !== "running") {
        if (before && needsRestart(before, settings)) this.deps.log.info("troupe.path changed: restarting the server");
        await this.doStop();
        await this.doStart(settings);
        return;
      }
      this.settings = settings;
      if (changed(before, settings) && this.connection) {
        await this.connection.notify("workspace/didChangeConfiguration", configurationChange(settings));
      }
    });
  }

  async executeCommand<T>(command: string, argument: object): Promise<T> {
    return this.running().executeCommand<T>(command, argument);
  }

  async request<T>(method: string, params: object): Promise<T> {
    return this.running().request<T>(method, params);
  }

  dispose(): void {
    void this.stop();
  }

  // ---------------------------------------------------------------- internals

  private running(): Connection {
    if (this.connection && this.current.kind === "running") return this.connection;
    const why = this.current.kind === "failed" ? `: ${this.current.reason}`
      : this.current.kind === "starting" ? " yet: it is starting" : "";
    throw new ServerError(`The Troupe language server is not running${why}. See "Troupe: Show Log".`);
  }

  private serially(work: () => Promise<void>): Promise<void> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private setState(state: ServerState): void {
    this.current = state;
    for (const listener of this.stateListeners) listener(state);
  }

  private dispatch(method: string, params: unknown): void {
    for (const handler of this.handlers.get(method) ?? []) {
      try {
        handler(params);
      } catch (error) {
        this.deps.log.error(`handling ${method} failed: ${describeError(error)}`);
      }
    }
  }

  private async doStart(settings: TroupeSettings): Promise<void> {
    this.settings = settings;
    const folders = this.deps.folders();
    const env = this.deps.env ?? process.env;
    const found = findTroupe({ configured: settings.path, folders, env });
    if ("error" in found) {
      this.deps.log.error(found.error);
      this.setState({ kind: "failed", reason: found.error });
      return;
    }
    this.deps.log.info(`starting ${found.command} lsp (found via ${found.from})`);
    const connection = this.deps.factory(serverSpec(found.command, settings, folders, env), {
      minimumSeverity: () => this.minimumSeverity,
    });
    this.connection = connection;
    this.attached = [...this.handlers.keys()].map((method) =>
      connection.onNotification(method, (params) => this.dispatch(method, params)));
    this.setState({ kind: "starting", command: found.command });
    this.attached.push(connection.onRunningChange((running) => {
      if (this.connection !== connection) return;
      if (running) this.setState({ kind: "running", command: found.command });
      else if (this.current.kind === "running") this.setState({ kind: "failed", reason: "the language server stopped" });
    }));
    try {
      await connection.start();
      this.setState({ kind: "running", command: found.command });
    } catch (error) {
      const reason = `${found.command} lsp did not start: ${describeError(error)}`;
      this.deps.log.error(reason);
      this.setState({ kind: "failed", reason });
    }
  }

  private async doStop(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    for (const d of this.attached) d.dispose();
    this.attached = [];
    if (connection) {
      try {
        await connection.stop();
      } catch (error) {
        this.deps.log.warn(`stopping the language server: ${describeError(error)}`);
      }
    }
    if (this.current.kind !== "failed" || connection) this.setState({ kind: "stopped" });
  }
}
