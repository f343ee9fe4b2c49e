/**
 * What the extension says to `troupe lsp` and hears back: nothing is written here, everything is
 * generated from the Python declarations and re-exported.
 *
 * lsp.generated.ts (from lsp/messages.py: `python -m lsp.typescript --write`): the server's
 * `troupe.*` commands (each takes ONE object with camelCase keys), its `troupe/…` requests and
 * notifications, their params and results, and the error codes. daemon.generated.ts (from
 * daemon/messages.py and daemon/payloads.py): the daemon's own JSON (snake_case) that those
 * messages carry (JobInfo, StreamEvent, SearchResults, …). scripts/ci.sh regenerates both;
 * tests/vscode/test_protocol_types.py fails when either drifts. The extension's own VS Code command
 * ids are different (`troupe.askTeam`, …): the language client registers the server's command ids itself.
 */

export * from "./lsp.generated";
export {
  ACTIVE_STATES,
  FINAL_STATES,
  JOB_KINDS,
  SEVERITIES,
  type ChangeInfo,
  type EventPayloads,
  type FindingInfo,
  type JobInfo,
  type JobKind,
  type JobList,
  type JobProgress,
  type JobResult,
  type JobState,
  type SearchHit,
  type SearchResults,
  type Severity,
  type TroupeEvent as StreamEvent,
  type Usage,
} from "./daemon.generated";
