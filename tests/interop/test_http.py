"""Interop tests: `orchestra serve --http` (Streamable HTTP on /mcp) driven by the official Python
MCP client (mcp 2.3.0), the way an application connects to a remote server:
`Client(streamable_http_client(url), mode=...)` from `mcp.client.streamable_http`.

- "legacy": the initialize handshake (2025-11-25) with an `Mcp-Session-Id`; the client opens the
  session's GET SSE stream after initialize, and `resources/subscribe` notifications arrive on it.
- "2026-07-28" (pinned, no probe) and "auto" (POSTs `server/discover`, then 2026-07-28):
  stateless POSTs, no session; `subscriptions/listen` is answered with an SSE response that stays
  open until the client closes it.

On a generated backlog of 2,600 documents (the generator of test_python_client.py): every page of
the listing, a byte-exact read sample, the not-found code of each era. Live updates: a separate
`orchestra import` process commits a change while the client is subscribed / listening.

The binary comes from $ORCHESTRA_BIN (default: target/release/orchestra in the repo).
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import BlobResourceContents, TextResourceContents

# The generator, import helper and small utilities of the stdio tests (same folder, on sys.path
# under pytest's default import mode). Only helpers are imported: no test functions, no fixtures.
from test_python_client import (
    BACKLOG_SIZE,
    EXPECTED_PROTOCOL,
    FIXTURE_PROJECT,
    NOT_FOUND_CODE,
    ORCHESTRA_BIN,
    Doc,
    content_bytes,
    BACKENDS,
    generate_backlog,
    list_all,
    new_db,
    run_import,
)

MODES = ["legacy", "auto", "2026-07-28"]
RPC_TIMEOUT = 30.0  # seconds per request
TEST_TIMEOUT = 120.0  # a whole test body
ARRIVES_WITHIN = 3.0  # a notification that must arrive does so within this many seconds
QUIET_FOR = 1.0  # how long to wait before concluding that a notification did not arrive
SETTLE = 0.3

UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
FEAT1 = "orchestra://features/FEAT-001"
FEAT2 = "orchestra://features/FEAT-002"
SERVING = re.compile(r"^orchestra: serving MCP on (http://\S+/mcp)$", re.M)


# --------------------------------------------------------------------------------------
# the server


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stderr_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@contextmanager
def serve_http(db: Path | str, *extra: str) -> Iterator[Server]:
    """`orchestra serve --db DB --http 127.0.0.1:0`; the URL from its start-up line on stderr."""
    assert ORCHESTRA_BIN.exists(), f"orchestra binary not found at {ORCHESTRA_BIN} (set ORCHESTRA_BIN)"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "serve.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [str(ORCHESTRA_BIN), "serve", "--db", str(db), "--http", "127.0.0.1:0", *extra],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            deadline = time.monotonic() + 15
            url = None
            while url is None:
                match = SERVING.search(log.read_text(errors="replace"))
                if match:
                    url = match.group(1)
                elif proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"orchestra serve --http did not print its address (exit {proc.poll()}); "
                        f"stderr:\n{log.read_text(errors='replace')}"
                    )
                else:
                    time.sleep(0.02)
            yield Server(url, proc, log)
        finally:
            proc.terminate()
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                pytest.fail("orchestra serve --http did not exit within 10 s of SIGTERM")
            assert code == 0, f"orchestra serve --http exited {code} on SIGTERM; stderr:\n{log.read_text()}"


@dataclass
class HttpLog:
    """(method, status, content type) of every HTTP exchange the client made."""

    exchanges: list[tuple[str, int, str]] = field(default_factory=list)

    async def hook(self, response: Any) -> None:
        ctype = response.headers.get("content-type", "").split(";")[0].strip()
        self.exchanges.append((response.request.method, response.status_code, ctype))

    def get_streams(self) -> list[tuple[str, int, str]]:
        return [e for e in self.exchanges if e[0] == "GET"]

    async def wait_get_stream(self, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while not any(s == 200 and c == "text/event-stream" for _, s, c in self.get_streams()):
                await anyio.sleep(0.01)


@asynccontextmanager
async def http_client(
    server: Server, mode: str, message_handler: Callable[[Any], Awaitable[None]] | None = None
) -> AsyncIterator[tuple[Client, HttpLog]]:
    """A Client in `mode` over Streamable HTTP, recording the HTTP exchanges."""
    log = HttpLog()
    try:
        async with create_mcp_http_client() as hc:
            hc.event_hooks = {"response": [log.hook]}
            async with Client(
                streamable_http_client(server.url, http_client=hc),
                mode=mode,
                read_timeout_seconds=RPC_TIMEOUT,
                message_handler=message_handler,
            ) as client:
                yield client, log
    except BaseException:
        sys.stderr.write(f"--- orchestra serve --http stderr (mode={mode}) ---\n{server.stderr_tail()}\n")
        sys.stderr.write(f"--- HTTP exchanges (mode={mode}) ---\n{log.exchanges}\n")
        raise


def run(body: Callable[[], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        with anyio.fail_after(TEST_TIMEOUT):
            return await body()

    return anyio.run(main)


def with_client(server: Server, mode: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with http_client(server, mode) as (client, _):
            return await body(client)

    return run(main)


# --------------------------------------------------------------------------------------
# the generated backlog, served once for the module


@dataclass(frozen=True)
class Backlog:
    docs: list[Doc]
    specials: list[Doc]
    non_utf8: Doc
    server: Server


@pytest.fixture(scope="module", params=BACKENDS)
def backlog(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Backlog]:
    base = tmp_path_factory.mktemp("http-backlog")
    docs, specials, non_utf8 = generate_backlog(base / "project")
    db = new_db(base, "http_backlog", request.param)
    run_import(base / "project", db)
    with serve_http(db) as server:
        yield Backlog(docs, specials, non_utf8, server)


@pytest.mark.parametrize("mode", MODES)
def test_http_negotiated_era(backlog: Backlog, mode: str) -> None:
    async def body() -> None:
        async with http_client(backlog.server, mode) as (client, log):
            assert client.protocol_version == EXPECTED_PROTOCOL[mode]
            await client.list_resources()
            posts = [e for e in log.exchanges if e[0] == "POST"]
            assert posts and all(s in (200, 202) for _, s, _ in posts), log.exchanges
            if mode == "legacy":
                # The session's notification stream, opened by the client after initialize.
                await log.wait_get_stream()
            else:
                # Stateless: no session, so the client opens no GET stream.
                assert not log.get_streams(), log.exchanges

    run(body)


@pytest.mark.parametrize("mode", MODES)
def test_http_list_all_pages(backlog: Backlog, mode: str) -> None:
    resources, pages = with_client(backlog.server, mode, list_all)
    uris = [r.uri for r in resources]
    expected = [d.uri for d in sorted(backlog.docs, key=lambda d: d.sort_key)]
    assert pages >= 2, f"{BACKLOG_SIZE} documents came back in {pages} page(s): no pagination"
    assert len(uris) == len(set(uris)), "some documents were listed more than once"
    missing = set(expected) - set(uris)
    unexpected = set(uris) - set(expected)
    assert not missing, f"{len(missing)} documents missing from the listing, e.g. {sorted(missing)[:5]}"
    assert not unexpected, f"{len(unexpected)} unexpected resources, e.g. {sorted(unexpected)[:5]}"
    if uris != expected:
        first = next(i for i, (a, b) in enumerate(zip(uris, expected)) if a != b)
        pytest.fail(f"listing not in (prefix, id) order at {first}: got {uris[first]!r}, expected {expected[first]!r}")
    assert len(uris) == BACKLOG_SIZE


@pytest.mark.parametrize("mode", MODES)
def test_http_read_sample_byte_exact(backlog: Backlog, mode: str) -> None:
    rng = random.Random(4242)
    ordinary = [d for d in backlog.docs if d not in backlog.specials]
    sample = backlog.specials + rng.sample(ordinary, 60 - len(backlog.specials))

    async def body(client: Client) -> list[tuple[Doc, Any]]:
        return [(doc, await client.read_resource(doc.uri)) for doc in sample]

    for doc, result in with_client(backlog.server, mode, body):
        assert len(result.contents) == 1, f"{doc.uri}: {len(result.contents)} contents"
        content = result.contents[0]
        assert content.uri == doc.uri
        assert content.mime_type == "text/markdown", f"{doc.uri}: mimeType {content.mime_type!r}"
        if doc is backlog.non_utf8:
            assert isinstance(content, BlobResourceContents), f"{doc.uri}: non-UTF-8 document not a blob"
        else:
            assert isinstance(content, TextResourceContents), f"{doc.uri}: UTF-8 document not text"
        assert content_bytes(content) == doc.path.read_bytes(), f"{doc.uri}: bytes differ from {doc.path}"


@pytest.mark.parametrize("mode", MODES)
def test_http_read_missing(backlog: Backlog, mode: str) -> None:
    missing = ["orchestra://features/FEAT-9999", "orchestra://notes/caf%C3%A9%20nope", "orchestra://docs/adr/9999"]

    async def body(client: Client) -> list[MCPError]:
        errors = []
        for uri in missing:
            with pytest.raises(MCPError) as info:
                await client.read_resource(uri)
            errors.append(info.value)
        ok = await client.read_resource(backlog.docs[0].uri)  # still usable after an error
        assert len(ok.contents) == 1
        return errors

    for uri, err in zip(missing, with_client(backlog.server, mode, body)):
        assert err.code == NOT_FOUND_CODE[mode], f"{uri}: error code {err.code} ({err.message!r})"
        assert isinstance(err.data, dict) and err.data.get("uri") == uri, f"{uri}: error data {err.data!r}"


# --------------------------------------------------------------------------------------
# live updates: a separate `orchestra import` process commits while the client listens


@dataclass(frozen=True)
class Note:
    method: str
    uri: str | None
    sub: Any

    def __str__(self) -> str:
        return f"{self.method} {self.uri or ''} [{self.sub}]"


class Recorder:
    def __init__(self) -> None:
        self.notes: list[Note] = []
        self.errors: list[Exception] = []

    async def handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.errors.append(message)
            return
        params = getattr(message, "params", None)
        meta = getattr(params, "meta", None) or {}
        self.notes.append(Note(message.method, getattr(params, "uri", None), meta.get(SUBSCRIPTION_ID)))

    def since(self, mark: int, method: str | None = None, uri: str | None = None) -> list[Note]:
        return [n for n in self.notes[mark:] if (method is None or n.method == method) and (uri is None or n.uri == uri)]

    async def wait_for(self, mark: int, method: str, uri: str | None = None) -> Note:
        with anyio.move_on_after(ARRIVES_WITHIN):
            while not self.since(mark, method, uri):
                await anyio.sleep(0.01)
        found = self.since(mark, method, uri)
        if not found:
            pytest.fail(
                f"no {method} {uri or ''} within {ARRIVES_WITHIN} s; received {[str(n) for n in self.notes[mark:]]}"
                + (f"; transport errors {self.errors!r}" if self.errors else "")
            )
        return found[0]


async def commit(project: Path, db: Path | str) -> None:
    """`orchestra import` as a separate process."""
    proc = await anyio.run_process([str(ORCHESTRA_BIN), "import", str(project), "--db", str(db)], check=False)
    assert proc.returncode == 0, f"orchestra import failed: {proc.stderr.decode(errors='replace')}"


def edit(path: Path, tag: str) -> bytes:
    data = path.read_bytes() + f"\n\nEdited over HTTP: {tag} {time.time_ns()}\n".encode()
    path.write_bytes(data)
    return data


async def read_bytes(client: Client, uri: str) -> bytes:
    result = await client.read_resource(uri)
    assert len(result.contents) == 1
    return content_bytes(result.contents[0])


@pytest.fixture(params=BACKENDS)
def live(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, Path | str, Server]]:
    """A fresh copy of fixtures/project, imported into a new store, and a server on it."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURE_PROJECT, project)
    db = new_db(tmp_path, "http_live_" + re.sub(r"[^a-z0-9]+", "_", tmp_path.name.lower()), request.param)
    run_import(project, db)
    with serve_http(db) as server:
        yield project, db, server


def test_http_legacy_subscribe(live: tuple[Path, Path | str, Server]) -> None:
    project, db, server = live
    feat1, feat2 = project / "features" / "FEAT-001.md", project / "features" / "FEAT-002.md"
    rec = Recorder()

    async def body() -> None:
        async with http_client(server, "legacy", rec.handler) as (client, log):
            assert client.protocol_version == "2025-11-25"
            caps = client.server_capabilities.resources
            assert caps is not None and caps.subscribe and caps.list_changed, caps
            # Notifications of a handshake session travel on its GET stream: wait until it is open
            # (the client opens it in the background after initialize).
            await log.wait_get_stream()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated as of 2026-07-28
                await client.subscribe_resource(FEAT1)

            mark = len(rec.notes)
            new = edit(feat1, "legacy")
            await commit(project, db)
            note = await rec.wait_for(mark, UPDATED, FEAT1)
            assert note.sub is None, note
            assert await read_bytes(client, FEAT1) == new
            await anyio.sleep(SETTLE)
            assert [str(n) for n in rec.since(mark)] == [str(note)], "expected exactly one notification"

            # An edit of an unsubscribed document brings nothing; a new one brings list_changed.
            mark = len(rec.notes)
            edit(feat2, "legacy")
            (project / "notes" / "over-http.md").write_text("# Over HTTP\n")
            await commit(project, db)
            await rec.wait_for(mark, LIST_CHANGED)
            await anyio.sleep(QUIET_FOR)
            assert [n.method for n in rec.since(mark)] == [LIST_CHANGED], [str(n) for n in rec.since(mark)]

            # After unsubscribe, nothing for FEAT-001.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.unsubscribe_resource(FEAT1)
            mark = len(rec.notes)
            edit(feat1, "after unsubscribe")
            await commit(project, db)
            await anyio.sleep(QUIET_FOR)
            assert not rec.since(mark), [str(n) for n in rec.since(mark)]
            assert not rec.errors, rec.errors
            # Every notification came on the one GET stream (the POSTs were answered with JSON).
            streams = [e for e in log.get_streams() if e[1] == 200]
            assert len(streams) == 1, log.exchanges
            assert all(c == "application/json" for m, s, c in log.exchanges if m == "POST" and s == 200), log.exchanges

    run(body)


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
def test_http_listen(live: tuple[Path, Path | str, Server], mode: str) -> None:
    project, db, server = live
    feat1, feat2 = project / "features" / "FEAT-001.md", project / "features" / "FEAT-002.md"
    rec = Recorder()

    async def next_event(sub: Any) -> Any:
        with anyio.fail_after(ARRIVES_WITHIN):
            return await anext(sub)

    async def body() -> None:
        async with http_client(server, mode, rec.handler) as (client, log):
            assert client.protocol_version == "2026-07-28"
            async with client.listen(resource_subscriptions=[FEAT1, FEAT2], resources_list_changed=True) as a:
                assert sorted(a.honored.resource_subscriptions or []) == [FEAT1, FEAT2], a.honored
                assert a.honored.resources_list_changed is True, a.honored
                # The listen is a POST answered with an SSE stream; no session, no GET stream.
                assert ("POST", 200, "text/event-stream") in log.exchanges, log.exchanges
                assert not log.get_streams(), log.exchanges

                mark = len(rec.notes)
                new = edit(feat1, mode)
                await commit(project, db)
                note = await rec.wait_for(mark, UPDATED, FEAT1)
                assert note.sub == a.subscription_id, note
                assert await next_event(a) == ResourceUpdated(uri=FEAT1)
                assert await read_bytes(client, FEAT1) == new
                await anyio.sleep(SETTLE)
                assert [str(n) for n in rec.since(mark)] == [str(note)], "expected exactly one notification"

                # A second listen beside the first: FEAT-002 only.
                async with client.listen(resource_subscriptions=[FEAT2]) as b:
                    assert b.subscription_id != a.subscription_id
                    mark = len(rec.notes)
                    edit(feat2, mode)
                    (project / "notes" / "over-http.md").write_text("# Over HTTP\n")
                    await commit(project, db)
                    await rec.wait_for(mark, UPDATED, FEAT2)
                    await rec.wait_for(mark, LIST_CHANGED)
                    await anyio.sleep(SETTLE)
                    got = sorted((n.method, n.uri or "", str(n.sub)) for n in rec.since(mark))
                    assert got == sorted(
                        [
                            (UPDATED, FEAT2, str(a.subscription_id)),
                            (UPDATED, FEAT2, str(b.subscription_id)),
                            (LIST_CHANGED, "", str(a.subscription_id)),
                        ]
                    ), got
                    assert await next_event(b) == ResourceUpdated(uri=FEAT2)
                    seen = {await next_event(a), await next_event(a)}
                    assert seen == {ResourceUpdated(uri=FEAT2), ResourcesListChanged()}, seen

                # B closed: A (still open) proves the next commit was seen; B hears nothing.
                await anyio.sleep(SETTLE)
                mark = len(rec.notes)
                edit(feat2, mode + " after b")
                await commit(project, db)
                await rec.wait_for(mark, UPDATED, FEAT2)
                await anyio.sleep(QUIET_FOR)
                assert [(n.uri, n.sub) for n in rec.since(mark)] == [(FEAT2, a.subscription_id)], [
                    str(n) for n in rec.since(mark)
                ]

            # Every listen closed: nothing at all.
            await anyio.sleep(SETTLE)
            mark = len(rec.notes)
            edit(feat1, mode + " after all")
            await commit(project, db)
            await anyio.sleep(QUIET_FOR)
            assert not rec.since(mark), [str(n) for n in rec.since(mark)]
            assert not rec.errors, rec.errors

    run(body)
