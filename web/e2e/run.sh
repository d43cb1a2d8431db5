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

command -v node >/dev/null || { echo "run.sh: node is missing (need node >= 20)" >&2; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "run.sh: node $(node --version) is too old: playwright-core needs node >= 20" >&2
  exit 1
fi
if [ -z "${GATEHOUSE_BIN:-}" ]; then
  command -v go >/dev/null || { echo "run.sh: go is missing (or set GATEHOUSE_BIN)" >&2; exit 1; }
fi

# npm ci installs exactly the lock; skip it when node_modules came from this lock.
lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat node_modules/.gatehouse-lock 2>/dev/null)" != "$lock_sum" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$lock_sum" > node_modules/.gatehouse-lock
fi

exec node --test --test-reporter=spec web.test.mjs
