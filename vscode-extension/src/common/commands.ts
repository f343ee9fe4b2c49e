/**
 * The extension's commands. Each one gathers what the user means (input box, quick pick, the
 * active editor) and sends ONE `troupe.*` command or `troupe/…` request to the language server.
 *
 * Command ids differ from the server's (`troupe.askTeam` vs `troupe.ask`): the language client
 * registers the server's ids as VS Code commands itself, for the code actions.
 */

import * as path from "node:path";

import { firstLine, jobTitle } from "../chat/conversation";
import type { ChatActions } from "../chat/panel";
import type { ParticipantDeps } from "../chat/participant";
import { describeError } from "./connection";
import { renderResults, searchExperience } from "./experience";
import type { Disposable, EditorContext, Host, Log, QuickPickItem } from "./host";
import type { JobRecord, JobStore, PendingQuestion } from "./jobs";
import { fileEditor, inside, objectArg, stringArg } from "./args";
import { applyChange, discardChange, dismissFinding } from "./edits";
import {
  ACTIVE_STATES,
  type AnswerArgs,
  type AskArgs,
  type CommandTypes,
  Commands,
  type JobInfo,
  type JobsQuery,
  type JobStarted,
  Requests,
  type RequestTypes,
} from "./protocol";
import { formatCost, formatTokens } from "./status";
import { openJobViewer, openViewer, type ViewerDeps } from "./viewer";

/** The running language server, as the commands need it (ServerManager in the extension): each command
 * and request typed by its name, as lsp/messages.py declares it (lsp.generated.ts). */
export interface Team extends TeamCommands {
  request<M extends keyof RequestTypes>(method: M, params: RequestTypes[M]["params"]): Promise<RequestTypes[M]["result"]>;
  restart(): Promise<void>;
}

export interface TeamCommands {
  executeCommand<C extends keyof CommandTypes>(command: C, argument: CommandTypes[C]["params"]):
    Promise<CommandTypes[C]["result"]>;
}

export interface ChatOpener {
  show(jobId?: string): void;
  readonly visible: boolean;
  /** The job the visible chat view shows, if any. */
  readonly shownJob?: string | undefined;
}

export interface CommandDeps {
  host: Host;
  team: Team;
  store: JobStore;
  chat: ChatOpener;
  log: Log;
}

export const Ids = {
  askTeam: "troupe.askTeam",
  reviewFile: "troupe.reviewFile",
  runTests: "troupe.runTests",
  showJobs: "troupe.showJobs",
  cancelJob: "troupe.cancelJob",
  answerQuestion: "troupe.answerQuestion",
  dismissFinding: "troupe.dismissFinding",
  openExperience: "troupe.openExperience",
  showChat: "troupe.showChat",
  applyProposedChange: "troupe.applyProposedChange",
  discardProposedChange: "troupe.discardProposedChange",
  showLog: "troupe.showLog",
  restartServer: "troupe.restartServer",
  statusMenu: "troupe.statusMenu",
  /** Not `troupe.openViewer`: that is the server's command, which the language client registers. */
  openRunViewer: "troupe.openRunViewer",
} as const;

type Mode = NonNullable<AskArgs["mode"]>;
const MODES: (QuickPickItem & { mode: Mode })[] = [
  { label: "$(comment-discussion) Answer", description: "explain, change nothing", mode: "ask" },
  { label: "$(edit) Propose a change", description: "a diff you can apply or discard", mode: "change" },
];

const STATE_ICON: Record<string, string> = {
  queued: "$(clock)", running: "$(sync~spin)", waiting_for_answer: "$(question)", succeeded: "$(check)",
  failed: "$(error)", cancelled: "$(circle-slash)",
};

export class TroupeCommands {
  private lastMode: Mode = "ask";

  constructor(private readonly deps: CommandDeps) {}

  /** Every command, by id; `register` hands them to VS Code with errors shown to the user. */
  handlers(): Record<string, (...args: unknown[]) => Promise<unknown>> {
    return {
      [Ids.askTeam]: (arg) => this.askTeam(arg),
      [Ids.reviewFile]: () => this.reviewFile(),
      [Ids.runTests]: () => this.runTests(),
      [Ids.showJobs]: () => this.showJobs(),
      [Ids.cancelJob]: (arg) => this.cancelJob(arg),
      [Ids.answerQuestion]: (arg) => this.answerQuestion(arg),
      [Ids.dismissFinding]: (arg) => this.dismissFinding(arg),
      [Ids.openExperience]: (arg) => this.openExperience(arg),
      [Ids.showChat]: async (arg) => this.deps.chat.show(stringArg(arg, "jobId")),
      [Ids.applyProposedChange]: (arg) => this.applyChange(arg),
      [Ids.discardProposedChange]: (arg) => this.discardChange(arg),
      [Ids.showLog]: async () => this.deps.log.show(),
      [Ids.restartServer]: () => this.deps.team.restart(),
      [Ids.statusMenu]: () => this.statusMenu(),
      [Ids.openRunViewer]: (arg) => this.openRunViewer(arg),
    };
  }

  register(): Disposable[] {
    return Object.entries(this.handlers()).map(([id, handler]) =>
      this.deps.host.registerCommand(id, (...args) => this.guarded(id, () => handler(...args))));
  }

  /** Runs a command; a failure becomes an error message the user reads (and a log line). */
  async guarded<T>(id: string, work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch (error) {
      const message = describeError(error);
      this.deps.log.error(`${id}: ${message}`);
      void this.deps.host.showMessage("error", message.startsWith("Troupe") ? message : `Troupe: ${message}`);
      return undefined;
    }
  }

  // ---------------------------------------------------------------- asking the team

  async askTeam(arg?: unknown): Promise<JobStarted | undefined> {
    const { host } = this.deps;
    const given = objectArg(arg);
    const editor = host.activeEditor();
    const selected = editor?.selection && editor.selectedText.trim() ? editor : undefined;
    const prompt = typeof given["prompt"] === "string" ? given["prompt"] : await host.showInputBox({
      title: "Troupe: Ask the Team",
      prompt: selected ? "Ask the team about the selected code" : "Ask the team",
      placeHolder: "e.g. Why can add() return a negative number?",
    });
    if (!prompt?.trim()) return undefined;
    let mode: Mode | undefined = given["mode"] === "ask" || given["mode"] === "change" ? given["mode"] : undefined;
    if (!mode) {
      const order = this.lastMode === "ask" ? MODES : [...MODES].reverse();
      const picked = await host.showQuickPick(order, { title: "Troupe: what should the team do?" });
      if (!picked) return undefined;
      mode = picked.mode;
    }
    this.lastMode = mode;
    return this.ask(prompt.trim(), mode, editor);
  }

  /** Starts an ask/change job about the active file (and its selection), and opens the chat on it. */
  async ask(prompt: string, mode: Mode, editor = this.deps.host.activeEditor(), openChat = true): Promise<JobStarted> {
    const args: AskArgs = { prompt, mode };
    if (editor?.fsPath && inside(editor.fsPath, this.deps.host.workspaceFolders())) {
      args.file = editor.uri;
      if (editor.selection && editor.selectedText.trim()) args.selection = editor.selection;
    }
    const started = await this.deps.team.executeCommand(Commands.ask, args);
    this.deps.store.started(started.jobId, mode, `${mode}: ${firstLine(prompt)}`);
    if (openChat) this.deps.chat.show(started.jobId);
    return started;
  }

  async reviewFile(): Promise<JobStarted | undefined> {
    const editor = this.fileEditor("review");
    if (!editor) return undefined;
    if (editor.isDirty) {
      void this.deps.host.showMessage("info", "Troupe reviews the file as saved; save it to include your latest edits.");
    }
    const started = await this.deps.team.executeCommand(Commands.review, { file: editor.uri });
    this.deps.store.started(started.jobId, "review", `review ${path.basename(editor.fsPath ?? editor.uri)}`);
    this.deps.log.info(`review job ${started.jobId} started for ${editor.uri}`);
    return started;
  }

  async runTests(): Promise<JobStarted | undefined> {
    const editor = this.deps.host.activeEditor();
    const folders = this.deps.host.workspaceFolders();
    const focus = editor?.fsPath && inside(editor.fsPath, folders) ? editor : undefined;
    if (!focus && folders.length === 0) {
      void this.deps.host.showMessage("warning", "Troupe runs the tests of a workspace folder: open one first.");
      return undefined;
    }
    const started = await this.deps.team.executeCommand(Commands.test, focus ? { file: focus.uri } : {});
    this.deps.store.started(started.jobId, "test", focus ? `test ${path.basename(focus.fsPath ?? "")}` : "test");
    this.deps.log.info(`test job ${started.jobId} started`);
    return started;
  }

  private fileEditor(what: string): EditorContext | undefined {
    return fileEditor(this.deps.host, what);
  }

  // ---------------------------------------------------------------- jobs

  private async fetchJobs(query: JobsQuery): Promise<JobInfo[]> {
    const answer = await this.deps.team.request(Requests.jobs, query);
    const jobs = Array.isArray(answer?.jobs) ? answer.jobs : [];
    for (const job of jobs) this.deps.store.onJob(job);
    return jobs;
  }

  private jobItem(job: JobInfo): QuickPickItem & { job: JobInfo } {
    const tokens = (job.usage?.prompt_tokens ?? 0) + (job.usage?.completion_tokens ?? 0);
    const known = this.deps.store.get(job.id);
    return {
      label: `${STATE_ICON[job.state] ?? ""} ${known?.title ?? jobTitle(job)}`.trim(),
      description: `${job.state.replace(/_/g, " ")} · ${formatTokens(tokens)} tokens · ${formatCost(job.usage?.cost ?? 0)}`,
      detail: [`job ${job.id}`, job.workspace ?? "", job.error ?? ""].filter(Boolean).join(" · "),
      job,
    };
  }

  async showJobs(): Promise<void> {
    const jobs = await this.fetchJobs({ limit: 50 });
    if (!jobs.length) {
      void this.deps.host.showMessage("info", "Troupe has no jobs yet. Try \"Troupe: Ask the Team\".");
      return;
    }
    const picked = await this.deps.host.showQuickPick(jobs.map((job) => this.jobItem(job)),
      { title: "Troupe: jobs", placeHolder: "Pick a job to follow its conversation" });
    if (picked) this.deps.chat.show(picked.job.id);
  }

  async cancelJob(arg?: unknown): Promise<void> {
    let jobId = stringArg(arg, "jobId");
    if (!jobId) {
      const active = (await this.fetchJobs({ state: "active", limit: 50 }))
        .filter((job) => ACTIVE_STATES.includes(job.state));
      if (!active.length) {
        void this.deps.host.showMessage("info", "No Troupe job is running.");
        return;
      }
      const picked = await this.deps.host.showQuickPick(active.map((job) => this.jobItem(job)),
        { title: "Troupe: cancel which job?" });
      jobId = picked?.job.id;
    }
    if (!jobId) return;
    const answer = await this.deps.team.executeCommand(Commands.cancel, { jobId });
    void this.deps.host.showMessage("info", `Troupe: job ${answer.jobId} is ${answer.state}.`);
  }

  // ---------------------------------------------------------------- questions

  private async pendingQuestions(): Promise<PendingQuestion[]> {
    try {
      await this.fetchJobs({ state: "waiting_for_answer", limit: 50 });
    } catch (error) {
      this.deps.log.warn(`listing waiting jobs failed: ${describeError(error)}`);
    }
    return this.deps.store.pendingQuestions();
  }

  async answerQuestion(arg?: unknown): Promise<boolean> {
    const given = objectArg(arg);
    let question: PendingQuestion | undefined;
    if (typeof given["jobId"] === "string") {
      const jobId = given["jobId"];
      question = this.deps.store.pendingQuestions().find((q) => q.jobId === jobId) ?? {
        jobId, questionId: typeof given["questionId"] === "string" ? given["questionId"] : "",
        text: typeof given["question"] === "string" ? given["question"] : "the team's question",
      };
    } else {
      const pending = await this.pendingQuestions();
      if (!pending.length) {
        void this.deps.host.showMessage("info", "The team has no question for you right now.");
        return false;
      }
      if (pending.length === 1) question = pending[0];
      else {
        const picked = await this.deps.host.showQuickPick(pending.map((q) => ({
          label: firstLine(q.text, 80), detail: `job ${q.jobId} · ${this.deps.store.get(q.jobId)?.title ?? ""}`, q,
        })), { title: "Troupe: which question?" });
        question = picked?.q;
      }
    }
    if (!question) return false;
    const text = typeof given["text"] === "string" ? given["text"] : await this.deps.host.showInputBox({
      title: "Troupe: the team asks", prompt: question.text, placeHolder: "Your answer",
    });
    if (!text?.trim()) return false;
    await this.answer(question.jobId, question.questionId, text.trim());
    return true;
  }

  async answer(jobId: string, questionId: string, text: string): Promise<void> {
    const args: AnswerArgs = { jobId, text };
    if (questionId) args.questionId = questionId;
    await this.deps.team.executeCommand(Commands.answer, args);
    this.deps.store.answered(jobId, questionId, text);
  }

  // ---------------------------------------------------------------- findings, proposed changes

  dismissFinding(arg?: unknown): Promise<boolean> {
    return dismissFinding(this.deps, arg);
  }

  applyChange(arg?: unknown): Promise<boolean> {
    return applyChange(this.deps, arg);
  }

  discardChange(arg?: unknown): Promise<boolean> {
    return discardChange(this.deps, arg);
  }

  /** What the chat view's buttons do: the same as the commands, errors shown the same way. */
  chatActions(): ChatActions {
    return {
      ask: (prompt, mode) => this.guarded("chat: ask", () => this.ask(prompt, mode)),
      answer: (jobId, questionId, text) => this.guarded("chat: answer", () => this.answer(jobId, questionId, text)),
      apply: (changeId) => this.guarded("chat: apply", () => this.applyChange({ changeId })),
      discard: (changeId) => this.guarded("chat: discard", () => this.discardChange({ changeId })),
      cancel: (jobId) => this.guarded("chat: cancel", () => this.cancelJob({ jobId })),
      openViewer: (jobId) => this.guarded("chat: open viewer", () => openJobViewer(this.viewerDeps(), jobId)),
    };
  }

  /** What the `@troupe` participant starts: jobs, without opening the chat view. */
  participantDeps(): ParticipantDeps {
    return {
      store: this.deps.store,
      ask: (prompt, mode) => this.guarded("@troupe", () => this.ask(prompt, mode, undefined, false)),
      review: () => this.guarded("@troupe /review", () => this.reviewFile()),
      test: () => this.guarded("@troupe /test", () => this.runTests()),
      cancel: (jobId) => this.guarded("@troupe cancel", () =>
        this.deps.team.executeCommand(Commands.cancel, { jobId })),
    };
  }

  // ---------------------------------------------------------------- the run viewer

  private viewerDeps(): ViewerDeps {
    return { host: this.deps.host, team: this.deps.team, log: this.deps.log,
      takeLink: (jobId) => this.deps.store.takeViewerLink(jobId) };
  }

  /**
   * Opens the daemon's run viewer in the browser: on the job given (`{jobId}`; `{}`: the job
   * list), else (the palette) on the one the user picks, the chat's or the current job first.
   */
  async openRunViewer(arg?: unknown): Promise<boolean> {
    const target = arg === undefined ? await this.pickViewerTarget() : { jobId: stringArg(arg, "jobId") };
    if (!target) return false;
    return await openViewer(this.viewerDeps(), target.jobId);
  }

  private async pickViewerTarget(): Promise<{ jobId?: string | undefined } | undefined> {
    const { store, chat } = this.deps;
    const jobs = store.all();
    const first = (chat.shownJob ? store.get(chat.shownJob) : undefined) ?? store.current();
    if (!first) return {}; // no job known here: the job list
    const item = (job: JobRecord, description: string): QuickPickItem & { jobId?: string } => ({
      label: `${STATE_ICON[job.state] ?? ""} ${job.title}`.trim(), description, detail: `job ${job.id}`, jobId: job.id,
    });
    const items: (QuickPickItem & { jobId?: string })[] = [
      item(first, first.id === chat.shownJob ? "the job in the chat" : "the current job"),
      { label: "$(list-unordered) All jobs", description: "the run viewer's job list" },
      ...jobs.filter((job) => job.id !== first.id).slice(0, 20).map((job) => item(job, job.state.replace(/_/g, " "))),
    ];
    const picked = await this.deps.host.showQuickPick(items, { title: "Troupe: open the run viewer on…" });
    return picked ? { jobId: picked.jobId } : undefined;
  }

  // ---------------------------------------------------------------- experience, menu

  async openExperience(arg?: unknown): Promise<void> {
    const query = typeof arg === "string" ? arg : await this.deps.host.showInputBox({
      title: "Troupe: Open Experience", prompt: "Search what the team has learnt",
      placeHolder: "e.g. off-by-one, flaky test, subtraction",
    });
    if (!query?.trim()) return;
    const results = await searchExperience(query.trim(), this.deps.team);
    await this.deps.host.showDocument(renderResults(results), "markdown");
  }

  async statusMenu(): Promise<void> {
    const waiting = this.deps.store.pendingQuestions().length;
    const changes = this.deps.store.pendingChanges().length;
    const items: (QuickPickItem & { id: string })[] = [
      { label: "$(comment-discussion) Show Chat", id: Ids.showChat },
      { label: "$(question) Ask the Team", id: Ids.askTeam },
      ...(waiting ? [{ label: `$(report) Answer the Team's Question`, description: `${waiting} waiting`,
        id: Ids.answerQuestion }] : []),
      ...(changes ? [{ label: "$(check) Apply Proposed Change", description: `${changes} waiting`,
        id: Ids.applyProposedChange }] : []),
      { label: "$(list-unordered) Show Jobs", id: Ids.showJobs },
      { label: "$(link-external) Open Run Viewer", id: Ids.openRunViewer },
      { label: "$(output) Show Log", id: Ids.showLog },
      { label: "$(debug-restart) Restart Language Server", id: Ids.restartServer },
    ];
    const picked = await this.deps.host.showQuickPick(items, { title: "Troupe" });
    if (picked) await this.handlers()[picked.id]?.();
  }
}
