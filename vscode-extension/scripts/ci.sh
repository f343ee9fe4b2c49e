#!/usr/bin/env bash
# CI for the VS Code extension, from a clean state: npm ci, the daemon's and the language server's types
# generated from the Python protocol, compile (strict tsc, both the extension and the webview script), unit tests (node's test runner, no VS Code needed), and
# `vsce package`. Prints the .vsix's path and size on the last line.
#
# Needs Node >= 18 and npm from the npm registry only. Where node is missing and we are root on
# Debian, installs Debian's nodejs + npm (bookworm: Node 18.20 + npm 9.2, which work; see README).
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
step() { printf '\n[%4ss] == %s\n' "$((SECONDS - t0))" "$*"; }
die() { echo "ci.sh: $*" >&2; exit 1; }

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    step "apt-get install nodejs npm (node or npm missing)"
    apt-get install -y --no-install-recommends nodejs npm \
      || { apt-get update && apt-get install -y --no-install-recommends nodejs npm; }
  else
    die "node and npm are needed (Node 18 or later; 20 recommended): apt-get install nodejs npm, or see https://nodejs.org"
  fi
fi
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || die "Node $(node --version) is too old: the test runner and vsce need Node 18 or later"
echo "node $(node --version), npm $(npm --version)"

export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

step "npm ci (no install scripts: nothing here needs one)"
rm -rf out
npm ci --ignore-scripts --no-audit --no-fund

step "generate the protocol's types (src/common/daemon.generated.ts from daemon/messages.py, lsp.generated.ts from lsp/messages.py)"
# The repository's Python (its virtualenv, else python3 with Troupe importable) writes them; without
# one (the extension alone), the committed files are used: tests/vscode/test_protocol_types.py keeps them current.
py=${TROUPE_PYTHON:-$PWD/../.venv/bin/python}
[ -x "$py" ] || py=python3
# TROUPE_EXTENSION_TYPES=check (scripts/test sets it) only checks them: a stale committed file then
# fails the build instead of being rewritten under the drift test running beside it.
mode=--${TROUPE_EXTENSION_TYPES:-write}
if (cd .. && "$py" -c "import daemon.api.typescript" 2>/dev/null); then
  (cd .. && "$py" -m daemon.api.typescript "$mode" && "$py" -m lsp.typescript "$mode")
else
  echo "no Python with Troupe's dependencies here: compiling the committed src/common/*.generated.ts"
fi

step "compile (tsc --strict: extension + webview script)"
npm run --silent compile

step "unit tests"
npm test

step "vsce package"
version=$(node -p 'require("./package.json").version')
vsix="$PWD/troupe-$version.vsix"
rm -f "$vsix"
node_modules/.bin/vsce package --allow-missing-repository --out "$vsix"

size=$(wc -c < "$vsix")
step "done in $((SECONDS - t0))s"
echo "VSIX $vsix $size bytes ($(( (size + 1023) / 1024 )) KiB)"
