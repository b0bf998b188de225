#!/usr/bin/env bash
# The project's one test command (CI runs it through .ci/run on a fresh machine):
# builds orchestra, installs it as a user would (tests/install/), runs every Rust test, then the interop tests against the official
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

echo "==> install: cargo install into a temporary root, the binary run from another folder"
"$ROOT/tests/install/run.sh"

echo "==> cargo test --locked (beside a throwaway PostgreSQL 15: pg_virtualenv)"
# Then the end-to-end tests again, every project's default database on
# PostgreSQL (tests/integration/support/mod.rs: on_postgres), less those whose
# subject is the SQLite file itself, each with its reason. (postgres::, the
# PostgreSQL store's own tests, run on it in the first run.)
PG_AGAIN="http:: serve:: import:: viewer:: concurrency:: search:: cli:: history_cli:: history:: faults:: links:: check:: write:: write_notify::"
SQLITE_ONLY=(
  # the default database: a file under the working folder
  import::db_flag_then_env_then_default_under_the_working_folder
  # serve with no flags: the default file, or none
  serve::serve_with_no_flags
  # a SQLite file from before search, upgraded by a SQLite migration
  search::a_database_from_before_search
  # the test's own check of a SQLite file's FTS5 indexes
  search::the_search_check_sees
  # a SQLite file whose history predates SQLite's migration 0011
  history_cli::a_history_written_before_versions_were_chained
  # ... and one whose past versions predate SQLite's migration 0012
  history_cli::a_history_written_before_versions_named_their_bodies
  # ... and one whose rows predate SQLite's migration 0013
  history_cli::a_history_written_before_versions_named_earlier_bodies
  # ... and one whose document rows predate SQLite's migration 0014
  history_cli::a_history_written_before_documents_held_their_newest_version
  # SIGKILL of an import into a SQLite file and its WAL (PostgreSQL's: postgres::)
  faults::sigkill_at_random_moments
  # a write past ulimit -f into a SQLite file
  faults::a_full_disk_fails
  # a SQLite file and folder without write permission
  faults::a_read_only_database_is_refused
  faults::serve_on_a_read_only_database
  # the SQLite file and its WAL deleted under a server (PostgreSQL's: postgres::)
  faults::a_database_deleted_under_a_running_server
  # a SQLite file inside the project folder it imports
  faults::a_project_that_holds_its_own_database
  faults::a_database_named_like_a_document
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
