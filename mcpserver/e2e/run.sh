#!/usr/bin/env bash
# Runs the MCP server's end-to-end tests: the official TypeScript MCP client
# (@modelcontextprotocol/sdk) drives `gatehouse mcp` over stdio and POST /mcp
# over streamable HTTP, against the real binary. Installs node_modules from
# the lockfile (npm ci) when they are missing or stale. Needs node >= 20,
# and go unless GATEHOUSE_BIN names a built binary.
set -euo pipefail
cd "$(dirname "$0")"

command -v node >/dev/null || { echo "run.sh: node is missing (need node >= 20)" >&2; exit 1; }
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
  echo "run.sh: node $(node --version) is too old: need node >= 20" >&2
  exit 1
fi
lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat node_modules/.gatehouse-lock 2>/dev/null)" != "$lock_sum" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.gatehouse-lock
fi
exec node --test --test-reporter=spec mcp.test.mjs
