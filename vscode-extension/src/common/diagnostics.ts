/**
 * Which Troupe diagnostics are shown (`troupe.minimumSeverity`), and which finding is meant
 * by "Dismiss Finding".
 *
 * The server is told the minimum too; filtering here as well makes the setting take effect at
 * once, also with a server that ignores it. A diagnostic's `data.severity` (when the server
 * sends it) is exact; otherwise the LSP severity is read generously (an Error may be critical),
 * so a setting never hides a finding that might meet it.
 */

import type { DiagnosticInfo, DiagnosticSeverityName } from "./host";
import { SEVERITIES, type Severity } from "./protocol";

export const SOURCE = "troupe";

const RANK: Record<Severity, number> = { critical: 0, major: 1, minor: 2, info: 3 };
const MOST_SEVERE_FOR: Record<DiagnosticSeverityName, Severity> = {
  error: "critical",
  warning: "minor",
  information: "info",
  hint: "info",
};

export function findingSeverity(diagnostic: Pick<DiagnosticInfo, "severity" | "data">): Severity {
  const stated = diagnostic.data?.["severity"];
  if (typeof stated === "string" && (SEVERITIES as readonly string[]).includes(stated)) return stated as Severity;
  return MOST_SEVERE_FOR[diagnostic.severity];
}

export function shown(diagnostic: Pick<DiagnosticInfo, "severity" | "source" | "data">, minimum: Severity): boolean {
  if (diagnostic.source !== SOURCE) return true;
  return RANK[findingSeverity(diagnostic)] <= RANK[minimum];
}

export function findingId(diagnostic: DiagnosticInfo): number | undefined {
  const id = diagnostic.data?.["findingId"];
  return typeof id === "number" && Number.isInteger(id) ? id : undefined;
}

/** Troupe findings of a document, the ones on the cursor's line first. */
export function findingsNear(diagnostics: DiagnosticInfo[], line: number): DiagnosticInfo[] {
  const ours = diagnostics.filter((d) => d.source === SOURCE && findingId(d) !== undefined);
  const distance = (d: DiagnosticInfo): number =>
    line < d.range.start.line ? d.range.start.line - line : line > d.range.end.line ? line - d.range.end.line : 0;
  return ours.sort((a, b) => distance(a) - distance(b) || a.range.start.line - b.range.start.line);
}

export function onLine(diagnostic: DiagnosticInfo, line: number): boolean {
  return diagnostic.range.start.line <= line && line <= diagnostic.range.end.line;
}
