/** Reading loosely typed command arguments, and the file a command is about. */

import * as path from "node:path";

import type { EditorContext, Host } from "./host";

/** The object argument a command was given (from a code action, a button, another command), or {}. */
export function objectArg(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {};
}

export function stringArg(value: unknown, key: string): string | undefined {
  if (typeof value === "string") return value;
  const inner = objectArg(value)[key];
  return typeof inner === "string" ? inner : undefined;
}

/** Whether the file lies inside one of the folders. */
export function inside(file: string, folders: string[]): boolean {
  return folders.some((folder) => {
    const rel = path.relative(folder, file);
    return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
  });
}

/** The active editor's file, or undefined after telling the user to open one. */
export function fileEditor(host: Host, what: string): EditorContext | undefined {
  const editor = host.activeEditor();
  if (!editor?.fsPath) {
    void host.showMessage("warning", `Troupe: open a file from a workspace folder to ${what} it.`);
    return undefined;
  }
  return editor;
}
