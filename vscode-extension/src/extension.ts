/**
 * Troupe for VS Code: wiring only. The language server (`troupe lsp`) does the work; the
 * modules under common/ and chat/ hold the extension's own behaviour and are unit-tested.
 */

import type * as vscode from "vscode";

import { ChatPanel } from "./chat/panel";
import { PARTICIPANT_ID, handleChatRequest } from "./chat/participant";
import { TroupeCommands } from "./common/commands";
import { JobStore } from "./common/jobs";
import { languageClientFactory } from "./common/languageClient";
import { noticeChange, noticeQuestion, type NoticeDeps } from "./common/notices";
import { asStatus, routeNotifications } from "./common/notifications";
import { Requests, type ServerStatus } from "./common/protocol";
import { ServerManager } from "./common/server";
import { readSettings } from "./common/settings";
import { StatusBar, StatusController } from "./common/status";
import { createHost, createLog, registerChatParticipant } from "./common/vscodeapi";

let server: ServerManager | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const host = createHost(context);
  const log = createLog("Troupe");
  const store = new JobStore();
  server = new ServerManager({ factory: languageClientFactory(log.channel), folders: () => host.workspaceFolders(), log });
  const team = server;
  const commands: TroupeCommands = new TroupeCommands({
    host, store, log, team: { executeCommand: (c, a) => team.executeCommand(c, a), request: (m, p) => team.request(m, p),
      restart: () => team.restart() },
    chat: { show: (jobId?: string): void => chat.show(jobId), get visible(): boolean { return chat.visible; },
      get shownJob(): string | undefined { return chat.shownJob; } },
  });
  const chat: ChatPanel = new ChatPanel(host, store, commands.chatActions());
  const status = new StatusController(new StatusBar(host.createStatusItem()), store, team);
  const notices: NoticeDeps = {
    host, isShowing: (jobId) => chat.isShowing(jobId), showChat: (jobId) => chat.show(jobId),
    answer: (q) => commands.guarded("answer", () => commands.answerQuestion({ jobId: q.jobId, questionId: q.questionId,
      question: q.text })),
    apply: (changeId) => commands.guarded("apply", () => commands.applyChange({ changeId })),
    discard: (changeId) => commands.guarded("discard", () => commands.discardChange({ changeId })),
  };
  const toldFailure = new Set<string>();

  context.subscriptions.push(
    log.channel, server, chat, store.onDidChange(() => status.refresh()),
    ...commands.register(),
    ...routeNotifications(team, {
      store, log,
      status: (s: ServerStatus) => { status.setStatus(s); chat.setConnected(s.daemon === "connected"); },
      question: (q) => void noticeQuestion(q, notices),
      changeProposed: (c) => void noticeChange(c, notices),
    }),
    team.onStateChange((state) => {
      status.serverChanged();
      if (state.kind === "running") {
        team.request(Requests.getStatus, {}).then((s) => { const parsed = asStatus(s); if (parsed) status.setStatus(parsed); },
          (e: unknown) => log.warn(`troupe/getStatus: ${String(e)}`));
      } else if (state.kind === "failed" && !toldFailure.has(state.reason)) {
        toldFailure.add(state.reason);
        void host.showMessage("error", `Troupe: ${state.reason}`, "Open Settings", "Show Log").then((choice) => {
          if (choice === "Open Settings") void host.openSettings("troupe.path");
          else if (choice === "Show Log") log.show();
        });
      }
    }),
    host.onSettingsChanged(() => {
      const { settings, problems } = readSettings(host);
      problems.forEach((p) => log.warn(p));
      void team.applySettings(settings);
    }),
  );
  const participant = registerChatParticipant(PARTICIPANT_ID, (request, stream, token) =>
    handleChatRequest(request, stream, token, commands.participantDeps()));
  if (participant) context.subscriptions.push(participant);

  status.refresh();
  const { settings, problems } = readSettings(host);
  problems.forEach((p) => log.warn(p));
  void team.start(settings);
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
