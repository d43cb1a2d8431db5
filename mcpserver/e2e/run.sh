#!/usr/bin/env bash
# Runs the MCP server's end-to-end tests: the official TypeScript MCP client
# (@modelcontextprotocol/sdk) drives `gatehouse mcp` over stdio and POST /mcp
# over streamable HTTP, against the real binary. Installs node_modules from
# the lockfile (npm ci) when they are missing or stale. Needs node >= 20,
# and go unless GATEHOUSE_BIN names a built binary.
set -euo pipefail
cd "$(dirname "$0")"

. ../../scripts/lib/node.sh
need_node "the MCP client"
npm_ci_if_stale
exec node --test --test-reporter=spec mcp.test.mjs
