import * as assert from "node:assert/strict";
import { describe, it } from "node:test";

import { findingId, findingSeverity, findingsNear, shown } from "../common/diagnostics";
import type { DiagnosticInfo } from "../common/host";

function diag(line: number, severity: DiagnosticInfo["severity"], data?: Record<string, unknown>,
  source = "troupe"): DiagnosticInfo {
  const d: DiagnosticInfo = { message: `at ${line}`, severity, source,
    range: { start: { line, character: 0 }, end: { line, character: 5 } } };
  if (data) d.data = data;
  return d;
}

describe("diagnostics", () => {
  it("shows everything at the default minimum", () => {
    for (const s of ["error", "warning", "information", "hint"] as const) assert.equal(shown(diag(0, s), "info"), true);
  });

  it("uses the finding's own severity when the server sends it", () => {
    assert.equal(findingSeverity(diag(0, "error", { severity: "major" })), "major");
    assert.equal(shown(diag(0, "error", { severity: "major" }), "critical"), false);
    assert.equal(shown(diag(0, "error", { severity: "critical" }), "critical"), true);
    assert.equal(shown(diag(0, "warning", { severity: "minor" }), "major"), false);
  });

  it("never hides an Error without a stated severity: it may be critical", () => {
    assert.equal(shown(diag(0, "error"), "critical"), true);
    assert.equal(shown(diag(0, "warning"), "major"), false);
    assert.equal(shown(diag(0, "information"), "minor"), false);
  });

  it("leaves other tools' diagnostics alone", () => {
    assert.equal(shown(diag(0, "hint", undefined, "ruff"), "critical"), true);
  });

  it("finds the finding id in the diagnostic's data", () => {
    assert.equal(findingId(diag(0, "error", { findingId: 12 })), 12);
    assert.equal(findingId(diag(0, "error", { findingId: "12" })), undefined);
    assert.equal(findingId(diag(0, "error")), undefined);
  });

  it("lists Troupe findings nearest the cursor first, skipping other sources and ones without an id", () => {
    const list = [diag(1, "error", { findingId: 1 }), diag(9, "warning", { findingId: 2 }),
      diag(5, "error", { findingId: 3 }, "ruff"), diag(6, "error")];
    assert.deepEqual(findingsNear(list, 8).map(findingId), [2, 1]);
    assert.deepEqual(findingsNear(list, 0).map(findingId), [1, 2]);
  });
});
