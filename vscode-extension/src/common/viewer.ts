/**
 * The daemon's run viewer, opened in the browser.
 *
 * The language server's `troupe.openViewer` asks the daemon for a one-time link (a login, spent
 * at first use, valid 10 minutes); the extension asks it not to open the link itself (`open: false`)
 * and opens it with `vscode.env.openExternal` after mapping it with `vscode.env.asExternalUri`, so that
 * it works where the browser is not on the daemon's machine (code-server's /proxy/<port>/, a
 * forwarded port). code-server maps only the origin (path and query dropped): see {@link externalUrl}.
 * `troupe/jobFinished` brings such a link along (`viewerUrl`): the chat view's "Open in viewer"
 * uses it once, while it is fresh, and asks the server for a new one after that.
 *
 * Links are only ever opened in the browser, never in a webview; the webview never sees them.
 */

import type { TeamCommands } from "./commands";
import { describeError } from "./connection";
import type { Host, Log } from "./host";
import { Commands, type ViewerAnswer } from "./protocol";

/** How long a link from `troupe/jobFinished` is used: the daemon's 10 minutes, less a margin. */
export const VIEWER_LINK_TTL_MS = 9 * 60_000;

/** The URL when it is one the browser may open (http or https, nothing else), else undefined. */
export function asViewerUrl(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length > 4096) return undefined;
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname ? value : undefined;
  } catch {
    return undefined;
  }
}

export function asViewerAnswer(value: unknown): ViewerAnswer | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const url = asViewerUrl(v["url"]);
  return url ? { url, opened: v["opened"] === true } : undefined;
}

export interface ViewerDeps {
  host: Pick<Host, "openExternal" | "asExternalUri">;
  team: TeamCommands;
  log: Log;
  /** The unspent link `troupe/jobFinished` brought for the job, taken (JobStore.takeViewerLink). */
  takeLink?(jobId: string): string | undefined;
}

/**
 * Opens the run viewer on a job (an id or a unique prefix), or on the job list without one.
 * True when the browser was asked to open it; a server error (the viewer off, no such job)
 * is thrown for the caller to show.
 */
export async function openViewer(deps: ViewerDeps, jobId?: string): Promise<boolean> {
  let raw: unknown;
  try {
    raw = await deps.team.executeCommand(Commands.openViewer, jobId ? { jobId, open: false } : { open: false });
  } catch (error) {
    // pygls answers an unknown command with "Command name '…' is not defined" (invalid params).
    if (/openViewer\b.*not defined/.test(describeError(error))) {
      throw new Error("Troupe: this language server has no run viewer (troupe.openViewer); update troupe.");
    }
    throw error;
  }
  const answer = asViewerAnswer(raw);
  if (!answer) throw new Error("Troupe: the language server answered troupe.openViewer without a link.");
  if (answer.opened) return true;
  return await openLink(deps, answer.url);
}

/** The chat view's "Open in viewer": the job's link from `troupe/jobFinished` once, then fresh ones. */
export async function openJobViewer(deps: ViewerDeps, jobId: string): Promise<boolean> {
  const link = deps.takeLink?.(jobId);
  if (link) return await openLink(deps, link);
  return await openViewer(deps, jobId);
}

/**
 * The link as the user's browser must open it: the daemon's origin mapped by `asExternalUri`, then
 * the link's own path and query under what it answered (`http://127.0.0.1:8765/viewer/jobs/j?token=t`
 * behind code-server: `https://cs.example/proxy/8765/viewer/jobs/j?token=t`).
 */
export async function externalUrl(host: Pick<Host, "asExternalUri">, url: string): Promise<string> {
  const link = new URL(url);
  const mapped = asViewerUrl(await host.asExternalUri(`${link.protocol}//${link.host}/`));
  if (!mapped) return url;
  const base = new URL(mapped);
  base.pathname = `${base.pathname.replace(/\/+$/, "")}${link.pathname}`;
  base.search = link.search;
  return base.toString();
}

async function openLink(deps: ViewerDeps, url: string): Promise<boolean> {
  const opened = await deps.host.openExternal(await externalUrl(deps.host, url));
  // The URL carries a login code: never logged.
  if (!opened) deps.log.info("the run viewer link was not opened (the browser refused or the user declined)");
  return opened;
}
