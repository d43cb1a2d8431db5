# Sourced by the run.sh of every Node.js test suite (web/e2e, sdk/typescript,
# mcpserver/e2e), from the suite's own folder.

# need_node exits unless node >= 20 is on PATH; $1 says who needs it.
need_node() {
  command -v node >/dev/null || { echo "run.sh: node is missing (need node >= 20)" >&2; exit 1; }
  if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 20 ]; then
    echo "run.sh: node $(node --version) is too old: ${1:-this suite} needs node >= 20" >&2
    exit 1
  fi
}

# npm_ci_if_stale installs exactly the lock (npm ci), unless node_modules
# came from this very lock.
npm_ci_if_stale() {
  local lock_sum
  lock_sum="$(sha256sum package-lock.json | cut -d' ' -f1)"
  if [ "$(cat node_modules/.gatehouse-lock 2>/dev/null)" != "$lock_sum" ]; then
    npm ci --no-audit --no-fund --loglevel=error
    echo "$lock_sum" > node_modules/.gatehouse-lock
  fi
}
