#!/usr/bin/env bash
# Runs Gatehouse's browser test: the real binary, driven in Debian's headless
# Chromium by playwright-core. Installs what it needs, idempotently:
# chromium (apt) when /usr/bin/chromium is missing, node_modules (npm ci).
# Needs go and node >= 20 on PATH. Exits non-zero on any failure.
#   GATEHOUSE_BIN=/path/to/gatehouse  use a built binary instead of go build
#   CHROMIUM=/path/to/chromium        another browser binary
set -euo pipefail
cd "$(dirname "$0")"

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

chromium="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  echo "run.sh: installing chromium (apt)" >&2
  as_root apt-get update -q
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends chromium
fi

. ../../scripts/lib/node.sh
need_node "playwright-core"
if [ -z "${GATEHOUSE_BIN:-}" ]; then
  command -v go >/dev/null || { echo "run.sh: go is missing (or set GATEHOUSE_BIN)" >&2; exit 1; }
fi

npm_ci_if_stale

exec node --test --test-reporter=spec web.test.mjs
