/**
 * The `troupe.*` settings: read once, validated, and turned into what the language server gets.
 *
 * The server receives them twice: as `initializationOptions` when it starts, and in
 * `workspace/didChangeConfiguration` (`{settings: {troupe: …}}`) when they change. Only a new
 * path to `troupe` needs a new server process; everything else is sent to the running one.
 */

import type { Host } from "./host";
import { SEVERITIES, type Severity } from "./protocol";

/** The language client's id: also the prefix of its `troupe.trace.server` setting. */
export const CLIENT_ID = "troupe";

export interface TroupeSettings {
  /** Path to the `troupe` executable; "" means: find it (see server.ts). */
  path: string;
  /** A litellm model string; "" means: the daemon's own setting. */
  model: string;
  reviewOnSave: boolean;
  testOnSave: boolean;
  minimumSeverity: Severity;
}

export const DEFAULTS: TroupeSettings = {
  path: "",
  model: "",
  reviewOnSave: true,
  testOnSave: false,
  minimumSeverity: "info",
};

/** Settings whose change needs a new server process. */
const RESTART_KEYS = ["path"] as const;

export interface ReadResult {
  settings: TroupeSettings;
  /** One line per setting that was ignored, saying why; the caller logs them. */
  problems: string[];
}

export function readSettings(host: Pick<Host, "setting">): ReadResult {
  const problems: string[] = [];
  const text = (key: "path" | "model"): string => {
    const value = host.setting(key);
    if (value === undefined || value === null) return DEFAULTS[key];
    if (typeof value !== "string") {
      problems.push(`troupe.${key} must be a string, got ${JSON.stringify(value)}; using "${DEFAULTS[key]}"`);
      return DEFAULTS[key];
    }
    return value.trim();
  };
  const flag = (key: "reviewOnSave" | "testOnSave"): boolean => {
    const value = host.setting(key);
    if (value === undefined || value === null) return DEFAULTS[key];
    if (typeof value !== "boolean") {
      problems.push(`troupe.${key} must be true or false, got ${JSON.stringify(value)}; using ${DEFAULTS[key]}`);
      return DEFAULTS[key];
    }
    return value;
  };
  const severity = (): Severity => {
    const value = host.setting("minimumSeverity");
    if (value === undefined || value === null) return DEFAULTS.minimumSeverity;
    if (typeof value === "string" && (SEVERITIES as readonly string[]).includes(value)) return value as Severity;
    problems.push(`troupe.minimumSeverity must be one of ${SEVERITIES.join(", ")}, got ${JSON.stringify(value)}; ` +
      `using "${DEFAULTS.minimumSeverity}"`);
    return DEFAULTS.minimumSeverity;
  };
  const settings = { path: text("path"), model: text("model"), reviewOnSave: flag("reviewOnSave"),
    testOnSave: flag("testOnSave") };
  return { settings: { ...settings, minimumSeverity: severity() }, problems };
}

/** What the server is told: its own options plus the user's settings (camelCase, as LSP does). */
export interface ServerOptionsPayload {
  /** The extension shows questions and proposed changes itself (chat view, notifications). */
  questions: "notification";
  changes: "notification";
  model: string | null;
  reviewOnSave: boolean;
  testOnSave: boolean;
  minimumSeverity: Severity;
}

export function initializationOptions(settings: TroupeSettings): ServerOptionsPayload {
  return {
    questions: "notification",
    changes: "notification",
    model: settings.model || null,
    reviewOnSave: settings.reviewOnSave,
    testOnSave: settings.testOnSave,
    minimumSeverity: settings.minimumSeverity,
  };
}

/** The `workspace/didChangeConfiguration` parameters. */
export function configurationChange(settings: TroupeSettings): { settings: { troupe: ServerOptionsPayload } } {
  return { settings: { troupe: initializationOptions(settings) } };
}

export function needsRestart(before: TroupeSettings, after: TroupeSettings): boolean {
  return RESTART_KEYS.some((key) => before[key] !== after[key]);
}

export function changed(before: TroupeSettings, after: TroupeSettings): boolean {
  return (Object.keys(after) as (keyof TroupeSettings)[]).some((key) => before[key] !== after[key]);
}
