#!/usr/bin/env bash
# Runs the Python SDK's tests (unittest) against the real gatehouse binary,
# and mypy --strict when mypy is installed (Debian: apt-get install mypy).
# Needs python3 >= 3.9, and go unless GATEHOUSE_BIN names a built binary.
#   PYTHON=python3.9 ./run.sh   another interpreter
set -euo pipefail
cd "$(dirname "$0")"
py="${PYTHON:-python3}"
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || { echo "run.sh: $("$py" --version) is too old: need >= 3.9" >&2; exit 1; }
if command -v mypy >/dev/null; then
  mypy --strict --python-version 3.9 gatehouse tests
fi
exec "$py" -m unittest discover -v -s tests -t .
