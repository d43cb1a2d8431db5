#!/usr/bin/env bash
# Runs the TypeScript SDK's tests: builds the SDK with tsc, type-checks it
# against the real `ai` and `@openai/agents` types, and runs node's test
# runner against the real gatehouse binary. Installs node_modules from the
# lockfile (npm ci) when they are missing or stale. Needs node >= 20, and go
# unless GATEHOUSE_BIN names a built binary.
set -euo pipefail
cd "$(dirname "$0")"

. ../../scripts/lib/node.sh
need_node "the SDK"
npm_ci_if_stale
npm run --silent build
npm run --silent typecheck
exec node --test --test-reporter=spec test/*.test.mjs
