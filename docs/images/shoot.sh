#!/usr/bin/env bash
# Takes the card before/after screenshots in docs/images/: the web page's
# pending queue and a request's page, at phone width (390×844), on the real
# binary. "before" is the binary from before the risk-first redesign
# (5a6f81c^1, built in a temporary git worktree that is removed afterwards),
# "after" is the binary of this working tree. Both get the same two requests:
# a ¥40,000 payment and a `curl … | sh` shell call.
#
# Needs go, git, node >= 20 and Debian's chromium (installed with apt-get when
# /usr/bin/chromium is missing); playwright-core comes from web/e2e (npm ci).
#   CHROMIUM=path  another Chromium
set -euo pipefail
cd "$(dirname "$0")/../.."
repo="$(pwd)"

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
  as_root apt-get update -q
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends chromium
fi
. scripts/lib/node.sh
need_node "playwright-core"
(cd web/e2e && npm_ci_if_stale)

work="$(mktemp -d)"
before_tree="$work/before-tree"
cleanup() {
  git -C "$repo" worktree remove --force "$before_tree" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "shoot.sh: building today's binary" >&2
go build -o "$work/gatehouse-after" ./cmd/gatehouse
echo "shoot.sh: building the binary from before the redesign (5a6f81c^1)" >&2
git worktree add --quiet --detach "$before_tree" '5a6f81c^1'
(cd "$before_tree" && go build -o "$work/gatehouse-before" ./cmd/gatehouse)
git worktree remove --force "$before_tree"

node docs/images/shoot.mjs "$work" before "$work/gatehouse-before"
node docs/images/shoot.mjs "$work" after "$work/gatehouse-after"
ls -l docs/images/*.png >&2
