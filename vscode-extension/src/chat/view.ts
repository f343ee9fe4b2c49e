/**
 * What the chat view shows, and the messages between the extension and the webview.
 *
 * Shared by the extension (CommonJS) and the webview's script, which runs as a classic script
 * under a strict CSP: so no import/export here, only a global namespace of types (it emits
 * nothing). The extension checks every message coming back from the webview (messages.ts).
 */

declare namespace TroupeView {
  type ChangeState = "proposed" | "applying" | "applied" | "discarded" | "failed";

  type Entry =
    | { id: string; kind: "phase"; phase: string; cycle?: number }
    | { id: string; kind: "message"; role: string; phase?: string; text: string; to?: string }
    | {
      id: string; kind: "question"; jobId: string; questionId: string; text: string; role?: string;
      /** "human": the user answers it here; otherwise it is the team's own clarification. */
      to: string; answer?: string; answeredBy?: string;
    }
    | { id: string; kind: "tool"; tool: string; ok: boolean; summary: string }
    | { id: string; kind: "change"; changeId: string; files: string[]; diff: string; state: ChangeState; note?: string;
        /** The change's own tests failed (the daemon's words): offered with a warning, "Apply Anyway". */
        testsFailed?: string }
    | { id: string; kind: "finding"; file: string; line: number; severity: string; message: string }
    | { id: string; kind: "state"; state: string; error?: string }
    | { id: string; kind: "result"; text: string }
    /** "Open in viewer" on a finished job; the link itself stays in the extension. */
    | { id: string; kind: "viewer"; jobId: string }
    | { id: string; kind: "log"; level: string; text: string };

  interface JobSummary {
    id: string;
    kind: string;
    state: string;
    title: string;
    active: boolean;
    waiting: boolean;
    phase?: string;
    tokens: number;
    cost: number;
  }

  type ToWebview =
    | { type: "state"; jobs: JobSummary[]; selected?: string; entries: Entry[]; connected: boolean }
    | { type: "entry"; jobId: string; entry: Entry }
    | { type: "jobs"; jobs: JobSummary[]; selected?: string; connected: boolean };

  type FromWebview =
    | { type: "ready" }
    | { type: "select"; jobId: string }
    | { type: "answer"; jobId: string; questionId: string; text: string }
    | { type: "apply"; changeId: string }
    | { type: "discard"; changeId: string }
    | { type: "cancel"; jobId: string }
    | { type: "openViewer"; jobId: string }
    | { type: "ask"; prompt: string; mode: "ask" | "change" };
}
