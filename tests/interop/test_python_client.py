"""Interop tests: `orchestra serve` driven by the official Python MCP client (mcp 2.3.0).

The client is used the way an application would use it: `mcp.Client` over a stdio
subprocess, in each of its three connection modes:

- "legacy": the initialize handshake (protocol 2025-11-25);
- "auto": probes `server/discover` and, since orchestra answers it, uses 2026-07-28;
- "2026-07-28": pinned to the stateless era, no probe.

The binary comes from $ORCHESTRA_BIN (default: target/release/orchestra in the repo).
"""

from __future__ import annotations

import base64
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client, types
from mcp.types import BlobResourceContents, ResourceTemplateReference, TextResourceContents

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_PROJECT = REPO_ROOT / "fixtures" / "project"
# A relative $ORCHESTRA_BIN is taken relative to the repository root (an absolute one is used as is).
ORCHESTRA_BIN = (REPO_ROOT / os.environ.get("ORCHESTRA_BIN", "target/release/orchestra")).resolve()

MODES = ["legacy", "auto", "2026-07-28"]
PREFIX_ORDER = {"docs": 0, "features": 1, "notes": 2}
BACKLOG_SIZE = 2600
RPC_TIMEOUT = 30.0  # seconds per request: a hung server fails the test instead of blocking CI

# Expected "resource not found" code per mode (auto resolves to 2026-07-28 against orchestra).
NOT_FOUND_CODE = {"legacy": -32002, "auto": -32602, "2026-07-28": -32602}
EXPECTED_PROTOCOL = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}


# --------------------------------------------------------------------------------------
# helpers


def doc_uri(prefix: str, doc_id: str) -> str:
    """orchestra://PREFIX/ID, each '/'-separated segment percent-encoded except unreserved chars."""
    return f"orchestra://{prefix}/" + "/".join(quote(seg, safe="") for seg in doc_id.split("/"))


@dataclass(frozen=True)
class Doc:
    prefix: str
    id: str
    path: Path
    title: str
    description: str | None

    @property
    def uri(self) -> str:
        return doc_uri(self.prefix, self.id)

    @property
    def sort_key(self) -> tuple[int, str]:
        return (PREFIX_ORDER[self.prefix], self.id)


@dataclass(frozen=True)
class Project:
    root: Path
    db: Path
    docs: list[Doc]
    specials: list[Doc]  # documents with awkward ids or bytes, always part of the read sample
    non_utf8: Doc

    def by_uri(self) -> dict[str, Doc]:
        return {d.uri: d for d in self.docs}


# Every test of the backlog runs against both stores: a SQLite file and a PostgreSQL database.
BACKENDS = ["sqlite", "postgres"]


def new_db(base: Path, name: str, backend: str) -> Path | str:
    """A new store for `name`: a SQLite file under `base`, or a PostgreSQL database on the server
    the PG* variables name (pg_virtualenv, as scripts/test.sh runs pytest), as its --db."""
    if backend == "sqlite":
        return base / f"{name}.db"
    assert os.environ.get("PGHOST"), (
        "the PostgreSQL runs need a server: run pytest through pg_virtualenv, as scripts/test.sh does"
    )
    dbname = f"interop_{name}_{os.getpid()}".replace("-", "_")
    for sql in (f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)", f"CREATE DATABASE {dbname}"):
        subprocess.run(["psql", "-qc", sql], check=True, capture_output=True, timeout=60)
    # The whole URL: the SDK's stdio client starts the server with a bare environment (no PG*).
    env = os.environ
    user, password = env.get("PGUSER", "postgres"), env.get("PGPASSWORD", "")
    return f"postgres://{user}:{password}@{env['PGHOST']}:{env.get('PGPORT', '5432')}/{dbname}"


def is_postgres(db: Path | str) -> bool:
    return str(db).startswith("postgres:")


def run_import(project_dir: Path, db: Path) -> None:
    assert ORCHESTRA_BIN.exists(), f"orchestra binary not found at {ORCHESTRA_BIN} (set ORCHESTRA_BIN)"
    proc = subprocess.run(
        [str(ORCHESTRA_BIN), "import", str(project_dir), "--db", str(db)],
        capture_output=True,
        timeout=180,
    )
    assert proc.returncode == 0, (
        f"orchestra import failed with exit code {proc.returncode}\n"
        f"stdout: {proc.stdout.decode(errors='replace')}\nstderr: {proc.stderr.decode(errors='replace')}"
    )
    assert is_postgres(db) or Path(db).exists(), "orchestra import exited 0 but created no database"


def with_client(db: Path, mode: str, body: Callable[[Client], Awaitable[Any]], *extra_args: str) -> Any:
    """Start `orchestra serve --db DB` as a stdio subprocess, connect a Client in `mode`, run body."""
    params = StdioServerParameters(command=str(ORCHESTRA_BIN), args=["serve", "--db", str(db), *extra_args])

    async def main() -> Any:
        with tempfile.TemporaryFile(mode="w+") as errlog:
            try:
                async with Client(
                    stdio_client(params, errlog=errlog),
                    mode=mode,
                    read_timeout_seconds=RPC_TIMEOUT,
                ) as client:
                    with anyio.fail_after(120):
                        return await body(client)
            except BaseException:
                errlog.seek(0)
                tail = errlog.read()[-4000:]
                if tail:
                    sys.stderr.write(f"--- orchestra serve stderr (mode={mode}) ---\n{tail}\n")
                raise

    return anyio.run(main)


async def list_all(client: Client) -> tuple[list[Any], int]:
    """Follow nextCursor to the end; return (resources, number of pages)."""
    resources: list[Any] = []
    cursor: str | None = None
    pages = 0
    seen_cursors: set[str] = set()
    while True:
        result = await client.list_resources(cursor=cursor)
        pages += 1
        resources.extend(result.resources)
        cursor = result.next_cursor
        if cursor is None:
            return resources, pages
        assert cursor not in seen_cursors, f"server returned cursor {cursor!r} twice: the listing would never end"
        seen_cursors.add(cursor)
        assert pages < 1000, "more than 1000 pages: the listing does not end"


def content_bytes(content: TextResourceContents | BlobResourceContents) -> bytes:
    if isinstance(content, TextResourceContents):
        return content.text.encode("utf-8")
    return base64.b64decode(content.blob, validate=True)


# --------------------------------------------------------------------------------------
# the generated backlog (2,600 documents)


def _write(root: Path, prefix: str, doc_id: str, data: bytes) -> Path:
    path = root / prefix / (doc_id + ".md")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _body(rng: random.Random, doc_id: str) -> str:
    words = ["sync", "offline", "queue", "photo", "dispatch", "signature", "depot", "valve", "retry", "schema"]
    paragraphs = []
    for _ in range(rng.randint(1, 4)):
        paragraphs.append(" ".join(rng.choice(words) for _ in range(rng.randint(8, 60))) + ".")
    if rng.random() < 0.3:
        paragraphs.append("- first item\n- second item\n- third item")
    if rng.random() < 0.2:
        paragraphs.append("```sh\ncargo run -- " + doc_id.replace("/", "-") + "\n```")
    return "\n\n".join(paragraphs) + "\n"


def generate_backlog(root: Path) -> tuple[list[Doc], list[Doc], Doc]:
    rng = random.Random(20260728)
    docs: list[Doc] = []
    specials: list[Doc] = []

    def add(prefix: str, doc_id: str, style: str, special: bool = False, text: str | None = None) -> Doc:
        body = text if text is not None else _body(rng, doc_id)
        if style == "frontmatter":
            title = f"{prefix.capitalize()} {doc_id} title"
            description = f"Description of {doc_id}: {rng.randint(0, 10**6)}"
            data = (
                f'---\ntitle: "{title}"\ndescription: "{description}"\nstatus: open\ntags: [generated, {prefix}]\n---\n\n'
                f"# Heading that is not the title\n\n{body}"
            )
        elif style == "heading":
            title = f"Heading of {doc_id}"
            description = None
            data = f"# {title}\n\n{body}"
        else:  # bare: no frontmatter, no heading -> title is the id
            title = doc_id
            description = None
            data = body
        doc = Doc(prefix, doc_id, _write(root, prefix, doc_id, data.encode("utf-8")), title, description)
        docs.append(doc)
        if special:
            specials.append(doc)
        return doc

    def style() -> str:
        r = rng.random()
        return "frontmatter" if r < 0.7 else ("heading" if r < 0.9 else "bare")

    # features: 1,200 (FEAT-0001 .. FEAT-1200)
    for n in range(1, 1201):
        add("features", f"FEAT-{n:04d}", style())

    # notes: 600, some with spaces and non-ASCII ids, one non-UTF-8 file
    odd_notes = [
        "café notes",
        "naïve ideas",
        "Überblick 2026",
        "議事録-03",
        "meeting 2026-03-02",
        "a b  c",
        "emoji 🚀 launch",
        "plus+and&percent%",
        "tilde~under_score.dots",
    ]
    for name in odd_notes:
        add("notes", name, "frontmatter", special=True)
    crlf = "line one\r\nline two\r\n\r\n- item\r\n"
    add("notes", "crlf-endings", "heading", special=True, text=crlf)
    # A UTF-8 byte-order mark: still UTF-8, so `text`, byte-exact (title not checked).
    bom = Doc("notes", "with-bom", _write(root, "notes", "with-bom", "\ufeff# BOM first\n\nbody\n".encode("utf-8")),
              title="", description=None)
    docs.append(bom)
    specials.append(bom)
    non_utf8 = Doc(
        "notes",
        "legacy-latin1",
        _write(root, "notes", "legacy-latin1", b"# Caf\xe9 r\xe9sum\xe9\n\nOld export in ISO-8859-1: \xe0 bient\xf4t \xa9\n"),
        title="",  # not checked: title extraction from non-UTF-8 bytes is not part of the contract
        description=None,
    )
    docs.append(non_utf8)
    specials.append(non_utf8)
    n = 0
    while sum(1 for d in docs if d.prefix == "notes") < 600:
        n += 1
        add("notes", f"note-{n:04d}", style())

    # docs: 800, nested
    for n in range(1, 301):
        add("docs", f"adr/{n:04d}", style())
    add("docs", "guides/deep/nested/very deep/page", "heading", special=True)
    add("docs", "guides/ünïcode dir/ärger", "frontmatter", special=True)
    areas = ["sync", "mobile", "web", "ops"]
    n = 0
    while sum(1 for d in docs if d.prefix == "docs") < 800:
        n += 1
        add("docs", f"guides/{areas[n % 4]}/page-{n:04d}", style())

    assert len(docs) == BACKLOG_SIZE
    return docs, specials, non_utf8


@pytest.fixture(scope="session", params=BACKENDS)
def backlog(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Project:
    base = tmp_path_factory.mktemp("backlog")
    root = base / "project"
    docs, specials, non_utf8 = generate_backlog(root)
    # Files that must be ignored by the import.
    (root / "README.md").write_text("# not a document\n")
    (root / "features" / "FEAT-9000.txt").write_text("not markdown\n")
    (root / "other").mkdir()
    (root / "other" / "stray.md").write_text("# outside the imported folders\n")
    db = new_db(base, "backlog", request.param)
    run_import(root, db)
    return Project(root, db, docs, specials, non_utf8)


@pytest.fixture(scope="session", params=BACKENDS)
def fixture_project(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    db = new_db(tmp_path_factory.mktemp("fixture"), "fixture", request.param)
    run_import(FIXTURE_PROJECT, db)
    return db


# --------------------------------------------------------------------------------------
# the backlog, in every client mode


@pytest.mark.parametrize("mode", MODES)
def test_negotiated_era(backlog: Project, mode: str) -> None:
    async def body(client: Client) -> None:
        assert client.protocol_version == EXPECTED_PROTOCOL[mode]
        if mode == "2026-07-28":
            # Pinned: the client adopted a synthesized discover result without asking the server,
            # so ask explicitly (a stateless server answers server/discover at any time).
            raw = await client.session.send_discover("2026-07-28")
            assert "2026-07-28" in raw["supportedVersions"], raw
            assert raw.get("resultType") == "complete", raw
            assert isinstance(raw.get("ttlMs"), int) and raw["cacheScope"] in ("public", "private"), raw
            caps = types.ServerCapabilities.model_validate(raw["capabilities"])
        else:
            caps = client.server_capabilities
        assert caps.resources is not None, "server does not advertise the resources capability"
        assert caps.completions is not None, "server does not advertise the completions capability"

    with_client(backlog.db, mode, body)


@pytest.mark.parametrize("mode", MODES)
def test_list_all_pages(backlog: Project, mode: str) -> None:
    resources, pages = with_client(backlog.db, mode, list_all)

    uris = [r.uri for r in resources]
    expected = sorted(backlog.docs, key=lambda d: d.sort_key)
    expected_uris = [d.uri for d in expected]

    assert pages >= 2, f"2,600 documents came back in {pages} page(s): no pagination (default page size is 500)"
    assert len(uris) == len(set(uris)), "some documents were listed more than once"
    missing = set(expected_uris) - set(uris)
    unexpected = set(uris) - set(expected_uris)
    assert not missing, f"{len(missing)} documents missing from the listing, e.g. {sorted(missing)[:5]}"
    assert not unexpected, f"{len(unexpected)} unexpected resources listed, e.g. {sorted(unexpected)[:5]}"
    assert len(uris) == BACKLOG_SIZE
    if uris != expected_uris:
        first = next(i for i, (a, b) in enumerate(zip(uris, expected_uris)) if a != b)
        pytest.fail(f"listing not in (prefix, id) order at position {first}: got {uris[first]!r}, expected {expected_uris[first]!r}")


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
def test_stateless_cache_fields(backlog: Project, mode: str) -> None:
    """2026-07-28: list/read/templates results carry resultType, ttlMs and cacheScope on the wire,
    and every page of one listing has the same cacheScope."""

    async def body(client: Client) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        cursor = None
        while True:
            page = await client.list_resources(cursor=cursor)
            out.append((f"resources/list cursor={cursor!r}", page))
            cursor = page.next_cursor
            if cursor is None:
                break
        out.append(("resources/read", await client.read_resource(backlog.docs[0].uri)))
        out.append(("resources/templates/list", await client.list_resource_templates()))
        return out

    results = with_client(backlog.db, mode, body)
    for label, result in results:
        for field in ("result_type", "ttl_ms", "cache_scope"):
            assert field in result.model_fields_set, f"{label}: no {field} in the result"
        assert result.result_type == "complete", label
    scopes = {r.cache_scope for label, r in results if label.startswith("resources/list")}
    assert len(scopes) == 1, f"pages of one listing have different cacheScope: {scopes}"


@pytest.mark.parametrize("mode", MODES)
def test_list_metadata(backlog: Project, mode: str) -> None:
    resources, _ = with_client(backlog.db, mode, list_all)
    by_uri = backlog.by_uri()
    problems: list[str] = []
    for r in resources:
        doc = by_uri.get(r.uri)
        if doc is None:
            continue  # reported by test_list_all_pages
        size = doc.path.stat().st_size
        if r.name != doc.id:
            problems.append(f"{r.uri}: name {r.name!r} != id {doc.id!r}")
        if r.mime_type != "text/markdown":
            problems.append(f"{r.uri}: mimeType {r.mime_type!r}")
        if r.size != size:
            problems.append(f"{r.uri}: size {r.size!r} != {size}")
        if r.annotations is None or not r.annotations.last_modified:
            problems.append(f"{r.uri}: no annotations.lastModified")
        if doc.title:  # "" = not checked (non-UTF-8 bytes, byte-order mark)
            if r.title != doc.title:
                problems.append(f"{r.uri}: title {r.title!r} != {doc.title!r}")
            if r.description != doc.description:
                problems.append(f"{r.uri}: description {r.description!r} != {doc.description!r}")
    assert not problems, f"{len(problems)} metadata mismatches, first ones:\n" + "\n".join(problems[:15])


@pytest.mark.parametrize("mode", MODES)
def test_read_sample_byte_exact(backlog: Project, mode: str) -> None:
    rng = random.Random(42)
    ordinary = [d for d in backlog.docs if d not in backlog.specials]
    sample = backlog.specials + rng.sample(ordinary, 50 - len(backlog.specials))

    async def body(client: Client) -> list[tuple[Doc, Any]]:
        return [(doc, await client.read_resource(doc.uri)) for doc in sample]

    results = with_client(backlog.db, mode, body)
    for doc, result in results:
        assert len(result.contents) == 1, f"{doc.uri}: {len(result.contents)} contents"
        content = result.contents[0]
        assert content.uri == doc.uri
        assert content.mime_type == "text/markdown", f"{doc.uri}: mimeType {content.mime_type!r}"
        on_disk = doc.path.read_bytes()
        if doc is backlog.non_utf8:
            assert isinstance(content, BlobResourceContents), f"{doc.uri}: non-UTF-8 document not returned as blob"
        else:
            assert isinstance(content, TextResourceContents), f"{doc.uri}: UTF-8 document not returned as text"
        assert content_bytes(content) == on_disk, f"{doc.uri}: bytes differ from {doc.path}"


@pytest.mark.parametrize("mode", MODES)
def test_read_missing(backlog: Project, mode: str) -> None:
    missing = ["orchestra://features/FEAT-9999", "orchestra://notes/caf%C3%A9%20nope", "orchestra://docs/adr/9999"]

    async def body(client: Client) -> list[MCPError]:
        errors = []
        for uri in missing:
            with pytest.raises(MCPError) as info:
                await client.read_resource(uri)
            errors.append(info.value)
        # The session is still usable after an error.
        ok = await client.read_resource(backlog.docs[0].uri)
        assert len(ok.contents) == 1
        return errors

    errors = with_client(backlog.db, mode, body)
    for uri, err in zip(missing, errors):
        assert err.code == NOT_FOUND_CODE[mode], f"{uri}: error code {err.code} ({err.message!r})"
        assert isinstance(err.data, dict) and err.data.get("uri") == uri, f"{uri}: error data {err.data!r}"


@pytest.mark.parametrize("mode", MODES)
def test_templates(backlog: Project, mode: str) -> None:
    async def body(client: Client) -> list[Any]:
        templates = []
        cursor = None
        while True:
            result = await client.list_resource_templates(cursor=cursor)
            templates.extend(result.resource_templates)
            cursor = result.next_cursor
            if cursor is None:
                return templates

    templates = with_client(backlog.db, mode, body)
    got = sorted((t.name, t.uri_template) for t in templates)
    assert got == [
        ("docs", "orchestra://docs/{+id}{?version}"),
        ("features", "orchestra://features/{+id}{?version}"),
        ("notes", "orchestra://notes/{+id}{?version}"),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_complete_ids(backlog: Project, mode: str) -> None:
    ref = ResourceTemplateReference(uri="orchestra://features/{+id}{?version}")

    async def body(client: Client) -> tuple[Any, Any, Any]:
        narrow = await client.complete(ref, {"name": "id", "value": "FEAT-012"})
        wide = await client.complete(ref, {"name": "id", "value": "FEAT-0"})
        none = await client.complete(ref, {"name": "id", "value": "NOPE-"})
        return narrow.completion, wide.completion, none.completion

    narrow, wide, none = with_client(backlog.db, mode, body)

    # FEAT-0120 .. FEAT-0129
    assert sorted(narrow.values) == [f"FEAT-{n:04d}" for n in range(120, 130)]
    assert narrow.total == 10
    assert not narrow.has_more

    # FEAT-0001 .. FEAT-0999: 999 matches, at most 100 returned
    features = {d.id for d in backlog.docs if d.prefix == "features"}
    assert len(wide.values) == 100, f"expected 100 values (the cap), got {len(wide.values)}"
    assert len(set(wide.values)) == 100
    assert all(v.startswith("FEAT-0") and v in features for v in wide.values), wide.values[:10]
    assert wide.total == 999
    assert wide.has_more is True

    assert none.values == []
    assert not none.has_more


# --------------------------------------------------------------------------------------
# the shipped fixture project


FIXTURE_EXPECTED = {
    "orchestra://features/FEAT-001": ("Offline work orders",
                                      "Technicians can open, edit and close work orders with no network, "
                                      "and changes sync when the device reconnects."),
    "orchestra://docs/adr/0003": ("ADR 0003: Sync with an operation log and server-assigned sequence numbers",
                                  "Devices send operations; the server orders them and every device replays the same log."),
    "orchestra://notes/caf%C3%A9%20notes": ("Café Lumière offsite notes",
                                            "Loose notes from the product offsite at Café Lumière — "
                                            "priorities for the next two quarters."),
    # no frontmatter: title from the first "# " heading, no description
    "orchestra://notes/retro-sprint-14": ("Retro: sprint 14", None),
}


def fixture_documents() -> list[tuple[str, str, Path]]:
    out = []
    for prefix in ("docs", "features", "notes"):
        for path in (FIXTURE_PROJECT / prefix).rglob("*.md"):
            out.append((prefix, path.relative_to(FIXTURE_PROJECT / prefix).with_suffix("").as_posix(), path))
    return sorted(out, key=lambda t: (PREFIX_ORDER[t[0]], t[1]))


@pytest.mark.parametrize("mode", MODES)
def test_fixture_project(fixture_project: Path, mode: str) -> None:
    expected_docs = fixture_documents()
    assert len(expected_docs) >= 14

    async def body(client: Client) -> tuple[list[Any], Any]:
        resources, _ = await list_all(client)
        cafe = await client.read_resource("orchestra://notes/caf%C3%A9%20notes")
        return resources, cafe

    resources, cafe = with_client(fixture_project, mode, body)
    assert [r.uri for r in resources] == [doc_uri(p, i) for p, i, _ in expected_docs]
    assert [r.name for r in resources] == [i for _, i, _ in expected_docs]
    assert not any("README" in r.uri or "sync_prototype" in r.uri for r in resources)

    by_uri = {r.uri: r for r in resources}
    for uri, (title, description) in FIXTURE_EXPECTED.items():
        assert uri in by_uri, f"{uri} not listed"
        assert by_uri[uri].title == title, f"{uri}: title {by_uri[uri].title!r}"
        assert by_uri[uri].description == description, f"{uri}: description {by_uri[uri].description!r}"
        assert by_uri[uri].mime_type == "text/markdown"

    assert by_uri["orchestra://notes/caf%C3%A9%20notes"].name == "café notes"
    content = cafe.contents[0]
    assert isinstance(content, TextResourceContents)
    assert content.text.encode("utf-8") == (FIXTURE_PROJECT / "notes" / "café notes.md").read_bytes()
