/**
 * The commands about what the team left in the editor: dismissing a finding (the daemon keeps it
 * dismissed and learns from the reason) and applying or discarding a proposed change.
 */

import { firstLine } from "../chat/conversation";
import { fileEditor, objectArg, stringArg } from "./args";
import type { CommandDeps } from "./commands";
import { describeError } from "./connection";
import { findingId, findingsNear, onLine } from "./diagnostics";
import type { DiagnosticInfo } from "./host";
import type { PendingChange } from "./jobs";
import { Commands, type DismissArgs } from "./protocol";

export async function dismissFinding(deps: CommandDeps, arg?: unknown): Promise<boolean> {
  const given = objectArg(arg);
  let id = typeof given["findingId"] === "number" ? given["findingId"] : undefined;
  if (id === undefined) {
    const editor = fileEditor(deps.host, "dismiss a finding in");
    if (!editor) return false;
    const near = findingsNear(deps.host.diagnostics(editor.uri), editor.cursorLine);
    if (!near.length) {
      void deps.host.showMessage("info", "Troupe: this file has no Troupe finding to dismiss.");
      return false;
    }
    const here = near.filter((d) => onLine(d, editor.cursorLine));
    let chosen: DiagnosticInfo | undefined = here.length === 1 ? here[0] : undefined;
    if (!chosen) {
      const picked = await deps.host.showQuickPick(near.map((d) => ({
        label: firstLine(d.message, 100), description: `line ${d.range.start.line + 1} · ${d.severity}`, d,
      })), { title: "Troupe: dismiss which finding?" });
      chosen = picked?.d;
    }
    id = chosen ? findingId(chosen) : undefined;
  }
  if (id === undefined) return false;
  let reason = typeof given["reason"] === "string" ? given["reason"] : undefined;
  if (reason === undefined && !("findingId" in given)) {
    reason = await deps.host.showInputBox({
      title: "Troupe: dismiss the finding", prompt: "Why? (optional; the team learns from it)",
      placeHolder: "e.g. intended: this function must subtract",
    });
    if (reason === undefined) return false; // Escape: nothing dismissed
  }
  const args: DismissArgs = { findingId: id };
  if (reason?.trim()) args.reason = reason.trim();
  await deps.team.executeCommand(Commands.dismiss, args);
  return true;
}

async function pickChange(deps: CommandDeps, arg: unknown, verb: string): Promise<PendingChange | undefined> {
  const changeId = stringArg(arg, "changeId");
  const pending = deps.store.pendingChanges();
  if (changeId) {
    return pending.find((c) => c.changeId === changeId) ?? { jobId: "", changeId, files: [], diff: "" };
  }
  if (!pending.length) {
    void deps.host.showMessage("info", "The team has no proposed change waiting.");
    return undefined;
  }
  if (pending.length === 1) return pending[0];
  const picked = await deps.host.showQuickPick(pending.map((c) => ({
    label: c.files.join(", ") || `change ${c.changeId}`, description: `change ${c.changeId}`,
    detail: deps.store.get(c.jobId)?.title ?? "", c,
  })), { title: `Troupe: ${verb} which change?` });
  return picked?.c;
}

/**
 * Applies a proposed change: the server sends the edit (`workspace/applyEdit`), then the files
 * the edit made dirty are saved. A file that already had unsaved edits of yours stays unsaved.
 */
export async function applyChange(deps: CommandDeps, arg?: unknown): Promise<boolean> {
  const change = await pickChange(deps, arg, "apply");
  if (!change) return false;
  const { host, store, team } = deps;
  const dirtyBefore = new Set(host.dirtyDocuments());
  store.markChange(change.changeId, "applying");
  try {
    await team.executeCommand(Commands.applyChange, { changeId: change.changeId });
  } catch (error) {
    store.markChange(change.changeId, "proposed", describeError(error));
    throw error;
  }
  const edited = host.dirtyDocuments().filter((uri) => !dirtyBefore.has(uri));
  await host.saveDocuments(edited);
  store.markChange(change.changeId, "applied", `applied; saved ${edited.length} file${edited.length === 1 ? "" : "s"}`);
  deps.log.info(`change ${change.changeId} applied; saved ${edited.join(", ") || "nothing"}`);
  return true;
}

export async function discardChange(deps: CommandDeps, arg?: unknown): Promise<boolean> {
  const change = await pickChange(deps, arg, "discard");
  if (!change) return false;
  await deps.team.executeCommand(Commands.discardChange, { changeId: change.changeId });
  deps.store.markChange(change.changeId, "discarded");
  return true;
}
