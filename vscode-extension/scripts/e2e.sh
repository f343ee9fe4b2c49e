#!/usr/bin/env bash
# The extension end to end in a real VS Code (code-server + headless Chromium), offline:
# a real Troupe daemon on the fake LLM server, a git workspace with calc.py; the .vsix installed;
# edit + save -> the Troupe diagnostic in the Problems panel; "Troupe: Ask the Team" -> progress
# in the status bar -> Apply in the chat view -> the fix on disk; the model's second finding
# dismissed; ruff's F401 (lint of the buffer) fixed by its quick fix. Screenshots and logs go to
# $ARTIFACTS (default <repo>/test-artifacts/vscode-e2e).
#
#   scripts/e2e.sh [path/to/troupe.vsix]      (default: the newest troupe-*.vsix here, else built)
#
# Needs code-server, Chromium and playwright-core, installed by e2e/install-code-server.sh into
# $CS_DIR (default ~/.cache/troupe-vscode-e2e); with E2E_INSTALL=1 this script installs them
# (about 3.5 minutes on 2 cores, from the npm registry and Debian). Without them it exits 77.
# Needs Troupe in $REPO/.venv (scripts/test makes it) or TROUPE_BIN + PYTHON.
set -euo pipefail
EXT=$(cd "$(dirname "$0")/.." && pwd)
REPO=$(dirname "$EXT")
CS_DIR=${CS_DIR:-$HOME/.cache/troupe-vscode-e2e}
ARTIFACTS=${ARTIFACTS:-$REPO/test-artifacts/vscode-e2e}
PYTHON=${PYTHON:-$REPO/.venv/bin/python}
TROUPE_BIN=${TROUPE_BIN:-$REPO/.venv/bin/troupe}
t0=$SECONDS
step() { printf '[%4ss] == %s\n' "$((SECONDS - t0))" "$*"; }

have_tools() {
  [ -x "$CS_DIR/node_modules/.bin/code-server" ] && [ -f "$CS_DIR/e2e-tools/node_modules/playwright-core/package.json" ] \
    && command -v "${CHROMIUM:-chromium}" >/dev/null
}
if ! have_tools; then
  if [ "${E2E_INSTALL:-0}" = 1 ]; then
    step "installing code-server, Chromium and playwright-core into $CS_DIR"
    bash "$EXT/e2e/install-code-server.sh" "$CS_DIR"
  else
    echo "e2e: SKIPPED: code-server/Chromium/playwright-core not installed in $CS_DIR" \
         "(run with E2E_INSTALL=1, or e2e/install-code-server.sh $CS_DIR)" >&2
    exit 77
  fi
fi
[ -x "$TROUPE_BIN" ] && [ -x "$PYTHON" ] || { echo "e2e: Troupe not found at $TROUPE_BIN (run scripts/test once, or set TROUPE_BIN and PYTHON)" >&2; exit 2; }

VSIX=${1:-$(ls -t "$EXT"/troupe-*.vsix 2>/dev/null | head -n 1 || true)}
if [ -z "$VSIX" ]; then
  step "building the .vsix"
  ( cd "$EXT" && { [ -d node_modules ] || npm ci --ignore-scripts --no-audit --no-fund; } && npm run --silent compile \
    && node_modules/.bin/vsce package --allow-missing-repository --out troupe-e2e.vsix >/dev/null )
  VSIX=$EXT/troupe-e2e.vsix
fi
VSIX=$(readlink -f "$VSIX")
step "vsix: $VSIX"

# A short folder: the daemon's Unix socket path must stay under ~100 bytes.
TMP=$(mktemp -d /tmp/tre2e-XXXXXX)
LLM_PID="" DAEMON_PID=""
cleanup() {
  for pid in $DAEMON_PID $LLM_PID; do kill "$pid" 2>/dev/null || true; done
  for pid in $DAEMON_PID $LLM_PID; do wait "$pid" 2>/dev/null || true; done
  mkdir -p "$ARTIFACTS"
  cp "$TMP"/*.log "$TMP"/*.jsonl "$ARTIFACTS"/ 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT
rm -rf "$ARTIFACTS" && mkdir -p "$ARTIFACTS"

# --- the fake LLM: a review that finds the planted bug (and a missing docstring); a change that fixes the bug
cat > "$TMP/script.json" <<'EOF'
{
  "default_reply": "[{\"start_line\": 5, \"severity\": \"major\", \"message\": \"add() subtracts: a planted bug\", \"quote\": \"return a - b\", \"replacement\": \"    return a + b\"}, {\"start_line\": 4, \"severity\": \"minor\", \"message\": \"add() has no docstring saying what it returns\", \"quote\": \"def add(a, b):\"}]",
  "rules": [
    {"user": "List the files to change", "times": 1,
     "reply": "I will fix the subtraction.\n<INFO> calc.py: add() must return a + b"},
    {"user": "Make the change.", "times": 1,
     "reply": "calc.py\n```python\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n```\n"},
    {"user": "Give the ONE most important problem", "times": 1, "reply": "<INFO> Finished"}
  ]
}
EOF
step "starting the fake LLM server"
( cd "$REPO" && exec "$PYTHON" -m tests.fakes.llm_server --port 0 --latency "${E2E_LLM_LATENCY:-0.4}" \
    --script "$TMP/script.json" --record "$TMP/llm-requests.jsonl" ) > "$TMP/fake-llm.log" 2>&1 &
LLM_PID=$!
for _ in $(seq 100); do grep -q '^FAKE_LLM_URL=' "$TMP/fake-llm.log" && break; sleep 0.1; done
URL=$(sed -n 's/^FAKE_LLM_URL=//p' "$TMP/fake-llm.log" | head -n 1)
[ -n "$URL" ] || { cat "$TMP/fake-llm.log"; echo "e2e: the fake LLM server did not start" >&2; exit 1; }

step "starting the daemon (TROUPE_HOME=$TMP/home)"
mkdir -p "$TMP/home"
export TROUPE_HOME=$TMP/home
( exec env -u OPENAI_API_KEY -u ANTHROPIC_API_KEY PATH="$(dirname "$TROUPE_BIN"):$PATH" \
    TROUPE_MODEL=openai/fake-model TROUPE_API_BASE="$URL/v1" TROUPE_API_KEY=sk-fake TROUPE_AUTOSTART=0 \
    TROUPE_WATCH_DEBOUNCE=0.2 TROUPE_SSE_HEARTBEAT=1 LITELLM_LOCAL_MODEL_COST_MAP=True \
    XDG_CONFIG_HOME="$TMP/config" "$TROUPE_BIN" daemon ) > "$TMP/daemon.log" 2>&1 &
DAEMON_PID=$!
for _ in $(seq 200); do [ -S "$TROUPE_HOME/troupe.sock" ] && break; sleep 0.1; done
[ -S "$TROUPE_HOME/troupe.sock" ] || { tail -30 "$TMP/daemon.log"; echo "e2e: the daemon did not start" >&2; exit 1; }

step "workspace: a git repository with calc.py (a planted bug) and its test"
WS=$TMP/workspace
mkdir -p "$WS"
git init -q "$WS"
printf '*.log\n' > "$WS/.gitignore"
printf 'import os\n\n\ndef add(a, b):\n    return a - b\n' > "$WS/calc.py"
printf 'from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n' > "$WS/test_calc.py"
WS=$(readlink -f "$WS")

step "VS Code (code-server $("$CS_DIR/node_modules/.bin/code-server" --version 2>/dev/null | head -n 1 | cut -d' ' -f1)) in headless Chromium"
CS_DIR=$CS_DIR VSIX=$VSIX WORKSPACE=$WS TROUPE_HOME=$TROUPE_HOME TROUPE_BIN=$TROUPE_BIN ARTIFACTS=$ARTIFACTS \
  XDG_CONFIG_HOME="$TMP/config" node "$EXT/e2e/run.mjs"
step "passed; screenshots in $ARTIFACTS"
