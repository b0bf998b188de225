#!/usr/bin/env bash
# The installed orchestra, as a new user gets it (README "Install"):
# `cargo install --locked --path . --root TMP`, the binary moved to another
# folder and run from there (import of the fixture project, then `serve`
# answers `initialize` and a read), its size, `--version` and the commit
# (build.rs, run on its own against throwaway repositories), the
# `.orchestra/.gitignore`, the shell completions (bash, fish) and the man
# page. Run by scripts/test.sh after the release build, whose artifacts
# `cargo install` reuses (same target folder, same profile).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "install: FAILED: $*" >&2; exit 1; }
passed=0
ok() { echo "install: ok: $*"; passed=$((passed + 1)); }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
command -v fish >/dev/null || missing+=(fish)
command -v man >/dev/null || missing+=(man-db)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "==> installing ${missing[*]} (for the completion and man page checks)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "==> cargo install --locked --path . --root $TMP/root"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}" \
  cargo install --locked --quiet --path "$ROOT" --root "$TMP/root"
mkdir -p "$TMP/elsewhere"
mv "$TMP/root/bin/orchestra" "$TMP/elsewhere/orchestra"
rm -rf "$TMP/root"
BIN="$TMP/elsewhere/orchestra"

size=$(stat -c %s "$BIN")
[ "$size" -lt $((20 * 1024 * 1024)) ] || fail "the installed binary is $size bytes, not under 20 MB"
ok "the installed binary is $((size / 1024)) KiB, under 20 MB"

# --version: the plain version and the commit this tree is at.
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n1)"
commit="$(git -C "$ROOT" rev-parse --short=12 HEAD)"
if [ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no)" ]; then commit="$commit-dirty"; fi
said="$("$BIN" --version)"
[ "$said" = "orchestra $version ($commit)" ] || fail "--version said '$said', not 'orchestra $version ($commit)'"
ok "--version: $said"

# build.rs alone, against repositories made here: a clean commit, an edit,
# a crate inside someone else's repository, and no git at all.
rustc --edition 2024 -O -o "$TMP/build-script" "$ROOT/build.rs" 2>/dev/null
describe() { CARGO_MANIFEST_DIR="$1" "$TMP/build-script" | sed -n 's/^cargo:rustc-env=ORCHESTRA_COMMIT=//p'; }
repo="$TMP/repo"
mkdir -p "$repo/crate"
git -C "$repo" init -q
echo one > "$repo/crate/file"
git -C "$repo" add crate/file
git -C "$repo" -c user.name=t -c user.email=t@t commit -qm one
[ "$(describe "$repo/crate")" = "unknown" ] || fail "a crate inside another repository is not 'unknown'"
mv "$repo/crate" "$TMP/crate" && git -C "$TMP/crate" init -q && git -C "$TMP/crate" add file \
  && git -C "$TMP/crate" -c user.name=t -c user.email=t@t commit -qm crate
clean="$(git -C "$TMP/crate" rev-parse --short=12 HEAD)"
[ "$(describe "$TMP/crate")" = "$clean" ] || fail "a clean tree is not '$clean': $(describe "$TMP/crate")"
echo two > "$TMP/crate/file"
[ "$(describe "$TMP/crate")" = "$clean-dirty" ] || fail "an edited tree is not '$clean-dirty'"
echo new > "$TMP/crate/untracked"
git -C "$TMP/crate" checkout -q -- file
[ "$(describe "$TMP/crate")" = "$clean" ] || fail "an untracked file made the tree dirty"
rm -rf "$TMP/crate/.git"
[ "$(describe "$TMP/crate")" = "unknown" ] || fail "a tree outside git is not 'unknown'"
ok "build.rs: the hash, -dirty after an edit, unknown outside git or in another repository"

# The moved binary, from the project folder: import, then serve.
cp -r "$ROOT/fixtures/project" "$TMP/project"
git -C "$TMP/project" init -q
(cd "$TMP/project" && "$BIN" import . >"$TMP/import.out") || fail "import: $(cat "$TMP/import.out")"
grep -q '^imported \.: ' "$TMP/import.out" || fail "import said: $(cat "$TMP/import.out")"
[ "$(grep -v '^#' "$TMP/project/.orchestra/.gitignore")" = "*" ] || fail ".orchestra/.gitignore is not '*'"
[ -z "$(git -C "$TMP/project" status --porcelain --ignored=no -- .orchestra)" ] || fail "git sees .orchestra/"
git -C "$TMP/project" check-ignore -q .orchestra/orchestra.db || fail "git does not ignore the database"
ok "import from another folder; .orchestra/ holds a .gitignore of '*' that git obeys"

python3 - "$BIN" "$TMP/project" "$version" "$said" <<'PY' || fail "serve"
import json, subprocess, sys
bin, project, version, said = sys.argv[1:]
proc = subprocess.Popen([bin, "serve"], cwd=project, stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
def ask(message):
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" in message:
        return json.loads(proc.stdout.readline())
init = ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "install-test", "version": "0"}}})
assert init["result"]["serverInfo"]["name"] == "orchestra", init
assert init["result"]["serverInfo"]["version"] == version, init
ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
read = ask({"jsonrpc": "2.0", "id": 2, "method": "resources/read",
            "params": {"uri": "orchestra://features/FEAT-001"}})
text = read["result"]["contents"][0]["text"]
with open(f"{project}/features/FEAT-001.md", encoding="utf-8") as f:
    assert text == f.read(), read
proc.stdin.close()
assert proc.wait(timeout=10) == 0
first = proc.stderr.read().splitlines()[0]
assert first == said, f"serve's first stderr line is {first!r}, not {said!r}"
PY
ok "serve from the project folder: initialize (serverInfo.version $version), a read byte-exact, '$said' first on stderr"

# Completions: bash parses and completes `orchestra se`; fish parses.
"$BIN" completions bash >"$TMP/orchestra.bash"
bash -n "$TMP/orchestra.bash" || fail "the bash completions do not parse"
completed="$(bash -c '
  source "$1"
  COMP_WORDS=(orchestra se); COMP_CWORD=1; COMP_LINE="orchestra se"; COMP_POINT=${#COMP_LINE}
  _orchestra orchestra se orchestra
  printf "%s\n" "${COMPREPLY[@]}" | sort | paste -sd " "' _ "$TMP/orchestra.bash")"
[ "$completed" = "search serve" ] || fail "bash completes 'orchestra se' to '$completed'"
ok "bash: the script parses, and 'orchestra se' completes to '$completed'"
"$BIN" completions fish >"$TMP/orchestra.fish"
fish --no-execute "$TMP/orchestra.fish" || fail "the fish completions do not parse"
ok "fish --no-execute"
for shell in zsh powershell elvish; do
  "$BIN" completions "$shell" | grep -q 'serve' || fail "no $shell completions"
done
ok "zsh, powershell and elvish scripts name the commands"

# The man page: every command, and groff finds nothing to warn about.
"$BIN" man >"$TMP/orchestra.1"
MANWIDTH=80 man --warnings -l "$TMP/orchestra.1" >"$TMP/man.txt" 2>"$TMP/man.err" || fail "man -l: $(cat "$TMP/man.err")"
[ ! -s "$TMP/man.err" ] || fail "man -l warned: $(cat "$TMP/man.err")"
for command in import serve search ls show log diff stats prune completions man; do
  grep -q "^   orchestra $command\$" "$TMP/man.txt" || fail "the man page has no section for orchestra $command"
done
ok "man -l renders without warnings, a section for each command"

echo "install: $passed passed, 0 failed"
