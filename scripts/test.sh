#!/usr/bin/env bash
# The project's one test command (CI runs it through .ci/run on a fresh machine):
# builds orchestra, runs every Rust test, then the interop tests against the official
# MCP clients (Python `mcp`, TypeScript `@modelcontextprotocol/sdk` and `/client`) and the official
# conformance suite (`@modelcontextprotocol/conformance`, tests/conformance/) against `serve --http`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT="$(pwd)"
INTEROP="$ROOT/tests/interop"

# The viewer's browser tests drive Debian's Chromium through its ChromeDriver.
if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
  echo "==> installing chromium and chromium-driver (for the browser tests)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi

# The PostgreSQL store's tests run against a throwaway PostgreSQL 15 cluster
# that pg_virtualenv (Debian's postgresql-common) starts in a temporary folder
# on a free port for the duration of `cargo test`, and removes after.
if ! command -v pg_virtualenv >/dev/null || [ ! -x /usr/lib/postgresql/15/bin/initdb ]; then
  echo "==> installing postgresql-15 and postgresql-common (for the PostgreSQL store's tests)"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-common >/dev/null
fi

echo "==> cargo build --release --locked"
cargo build --release --locked

echo "==> cargo test --locked (beside a throwaway PostgreSQL 15: pg_virtualenv)"
# Then the end-to-end tests of the protocol, the HTTP transport, import,
# search and the viewer again, every project's default database on
# PostgreSQL (tests/integration/support.rs: on_postgres). Skipped there: the
# tests whose subject is the SQLite file itself (the default path under the
# working folder, a dry run that leaves the file untouched, the index check
# and write lock of a SQLite file).
PG_AGAIN="http:: serve:: import:: viewer:: concurrency:: search::"
SQLITE_ONLY=(
  import::db_flag_then_env_then_default_under_the_working_folder
  import::dry_run_lists_exactly_the_changes_and_writes_nothing
  import::dry_run_on_a_fresh_folder_creates_no_database
  import::fixture_report_as_json
  serve::serve_with_no_flags
  search::a_database_from_before_search
  search::search_reads_while_an_import_holds_the_write_lock
  search::the_search_check_sees
)
SKIPS="$(printf -- '--skip %s ' "${SQLITE_ONLY[@]}")"
pg_virtualenv -t -v 15 bash -c \
  "cargo test --locked && ORCHESTRA_IT_BACKEND=postgres cargo test --locked --test integration -- $PG_AGAIN $SKIPS"

echo "==> interop: Python client (mcp)"
if [ ! -x "$INTEROP/.venv/bin/python" ]; then
  python3 -m venv "$INTEROP/.venv"
fi
"$INTEROP/.venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$INTEROP/requirements.txt" -c "$INTEROP/constraints.txt"

echo "==> interop: TypeScript clients (npm ci)"
(cd "$INTEROP" && npm ci --silent --no-audit --no-fund)

export ORCHESTRA_BIN="$ROOT/target/release/orchestra"

echo "==> interop: pytest (on SQLite and on a throwaway PostgreSQL 15)"
pg_virtualenv -t -v 15 "$INTEROP/.venv/bin/python" -m pytest -q -p no:cacheprovider "$INTEROP"

echo "==> conformance: @modelcontextprotocol/conformance against serve --http"
"$ROOT/tests/conformance/run.sh"
echo "==> conformance: the same on PostgreSQL"
pg_virtualenv -t -v 15 bash -c \
  'createdb conformance && ORCHESTRA_CONFORMANCE_DB=postgres:///conformance "$0"' \
  "$ROOT/tests/conformance/run.sh"

echo "==> interop: node --test (on SQLite and on a throwaway PostgreSQL 15)"
pg_virtualenv -t -v 15 node --test "$INTEROP/"
