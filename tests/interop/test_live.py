"""Interop tests: live change notifications from `orchestra serve`, driven by the official Python
MCP client (mcp 2.3.0), the way an application would receive them.

- Two processes: `orchestra serve --db DB` holds a client session while a separate
  `orchestra import DIR --db DB` commits; the server notices the commit (it polls every 100 ms)
  and notifies its subscribers.
- Handshake era ("legacy"): `resources/subscribe` / `unsubscribe`, then
  `notifications/resources/updated {uri}` and `notifications/resources/list_changed`.
- 2026-07-28 (pinned, and "auto", which selects it against orchestra): `subscriptions/listen`,
  an acknowledgement naming what is honoured, then notifications tagged with
  `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen request id, until the client
  cancels it.
- `serve --watch DIR`: the server imports by itself when the files change.
- A 10,000-document change: one import, one notification per subscribed URI, nothing else.

Every notification the client session surfaces is recorded (method, uri, subscription id,
arrival time) through `Client(message_handler=...)`, so the tests assert both on what must
arrive and on what must not. Each test works in a fresh copy of fixtures/project, once on a SQLite
file and once on a PostgreSQL database (where a commit reaches the server by LISTEN/NOTIFY).

The binary comes from $ORCHESTRA_BIN (default: target/release/orchestra in the repo).
"""

from __future__ import annotations

import base64
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client
from mcp.client.subscriptions import ResourcesListChanged, ResourceUpdated, Subscription
from mcp.types import BlobResourceContents, TextResourceContents

# The store helpers of the stdio tests (same folder, on sys.path under pytest's default import
# mode): a SQLite file or a PostgreSQL database per test, and the synchronous import.
from test_python_client import BACKENDS, FIXTURE_PROJECT, ORCHESTRA_BIN, new_db
from test_python_client import run_import as run_import_sync

RPC_TIMEOUT = 30.0  # seconds per request: a hung server fails the test instead of blocking CI
ARRIVES_WITHIN = 3.0  # a notification that must arrive does so within this many seconds
QUIET_FOR = 1.0  # how long to wait before concluding that a notification did not arrive
SETTLE = 0.3  # after the last expected notification of a commit: time for stragglers (duplicates)
TEST_TIMEOUT = 90.0  # a whole test body

UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

FEAT1 = "orchestra://features/FEAT-001"
FEAT2 = "orchestra://features/FEAT-002"
FEAT3 = "orchestra://features/FEAT-003"
CAFE = "orchestra://notes/caf%C3%A9%20notes"  # notes/café notes.md

ANY = object()  # "any subscription id, or none" in Recorder filters


# --------------------------------------------------------------------------------------
# helpers


@dataclass(frozen=True)
class Note:
    """One notification the client surfaced."""

    at: float  # time.monotonic() on arrival
    method: str
    uri: str | None
    sub: Any  # _meta subscriptionId, None when untagged

    def __str__(self) -> str:
        tag = f" [{self.sub}]" if self.sub is not None else ""
        uri = f" {self.uri}" if self.uri is not None else ""
        return f"{self.method}{uri}{tag}"


class Recorder:
    """The client's message_handler: records every server notification, in arrival order."""

    def __init__(self) -> None:
        self.notes: list[Note] = []
        self.errors: list[Exception] = []
        self._arrived = anyio.Event()

    async def handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.errors.append(message)
        else:
            params = getattr(message, "params", None)
            meta = getattr(params, "meta", None) or {}
            self.notes.append(
                Note(time.monotonic(), message.method, getattr(params, "uri", None), meta.get(SUBSCRIPTION_ID))
            )
        self._arrived.set()
        self._arrived = anyio.Event()

    def mark(self) -> int:
        return len(self.notes)

    def since(self, mark: int, method: str | None = None, uri: str | None = None, sub: Any = ANY) -> list[Note]:
        return [
            n
            for n in self.notes[mark:]
            if (method is None or n.method == method)
            and (uri is None or n.uri == uri)
            and (sub is ANY or n.sub == sub)
        ]

    def describe(self, mark: int = 0) -> str:
        got = [str(n) for n in self.notes[mark:]]
        errors = f"; transport errors: {self.errors!r}" if self.errors else ""
        return f"notifications received since the mark: {got}{errors}"

    async def wait_for(
        self, mark: int, method: str, uri: str | None = None, sub: Any = ANY, timeout: float = ARRIVES_WITHIN
    ) -> Note:
        """The first matching notification after `mark`; fails when none arrives within `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.since(mark, method, uri, sub)
            if found:
                return found[0]
            left = deadline - time.monotonic()
            if left <= 0:
                what = f"{method}" + (f" {uri}" if uri else "") + (f" [{sub}]" if sub is not ANY else "")
                pytest.fail(f"no {what} within {timeout} s; {self.describe(mark)}")
            with anyio.move_on_after(left):
                await self._arrived.wait()


async def run_import(project: Path, db: Path | str) -> float:
    """`orchestra import` as a separate process; returns time.monotonic() at its exit."""
    proc = await anyio.run_process(
        [str(ORCHESTRA_BIN), "import", str(project), "--db", str(db)], check=False
    )
    exited = time.monotonic()
    assert proc.returncode == 0, (
        f"orchestra import failed with exit code {proc.returncode}\n"
        f"stdout: {proc.stdout.decode(errors='replace')}\nstderr: {proc.stderr.decode(errors='replace')}"
    )
    return exited


@asynccontextmanager
async def connect(db: Path | str, mode: str, rec: Recorder, *extra_args: str) -> AsyncIterator[Client]:
    """`orchestra serve --db DB [extra]` as a stdio subprocess, a Client in `mode` recording into rec."""
    assert ORCHESTRA_BIN.exists(), f"orchestra binary not found at {ORCHESTRA_BIN} (set ORCHESTRA_BIN)"
    params = StdioServerParameters(command=str(ORCHESTRA_BIN), args=["serve", "--db", str(db), *extra_args])
    with tempfile.TemporaryFile(mode="w+") as errlog:
        try:
            async with Client(
                stdio_client(params, errlog=errlog),
                mode=mode,
                read_timeout_seconds=RPC_TIMEOUT,
                message_handler=rec.handler,
            ) as client:
                yield client
        except BaseException:
            errlog.seek(0)
            tail = errlog.read()[-4000:]
            if tail:
                sys.stderr.write(f"--- orchestra serve stderr (mode={mode}) ---\n{tail}\n")
            sys.stderr.write(f"--- notifications (mode={mode}) ---\n" + "\n".join(map(str, rec.notes)) + "\n")
            raise


def run(body: Any) -> Any:
    async def main() -> Any:
        with anyio.fail_after(TEST_TIMEOUT):
            return await body()

    return anyio.run(main)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def fresh_project(tmp_path: Path, backend: str) -> tuple[Path, Path | str]:
    """A copy of fixtures/project and a new store outside it (not yet imported): a SQLite file
    beside the copy, or an empty PostgreSQL database named after the test's folder."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURE_PROJECT, project)
    return project, new_db(tmp_path, "live_" + re.sub(r"[^a-z0-9]+", "_", tmp_path.name.lower()), backend)


def edit(path: Path, tag: str) -> bytes:
    """Rewrites a document with new bytes (a different size, so the import cannot miss it)."""
    data = path.read_bytes() + f"\n\nEdited: {tag} {time.time_ns()}\n".encode()
    path.write_bytes(data)
    return data


async def subscribe(client: Client, uri: str) -> None:
    with warnings.catch_warnings():  # deprecated as of 2026-07-28, still the handshake era's way
        warnings.simplefilter("ignore")
        await client.subscribe_resource(uri)


async def unsubscribe(client: Client, uri: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        await client.unsubscribe_resource(uri)


async def read_bytes(client: Client, uri: str) -> bytes:
    result = await client.read_resource(uri)
    assert len(result.contents) == 1, f"{uri}: {len(result.contents)} contents"
    content = result.contents[0]
    if isinstance(content, TextResourceContents):
        return content.text.encode("utf-8")
    assert isinstance(content, BlobResourceContents)
    return base64.b64decode(content.blob)


async def next_event(sub: Subscription, timeout: float = ARRIVES_WITHIN) -> Any:
    with anyio.fail_after(timeout):
        return await anext(sub)


def assert_once(rec: Recorder, mark: int, method: str, uri: str | None = None, sub: Any = ANY) -> None:
    got = rec.since(mark, method, uri, sub)
    assert len(got) == 1, f"expected exactly one {method} {uri or ''} [{sub}], got {len(got)}; {rec.describe(mark)}"


def assert_none(rec: Recorder, mark: int, method: str | None = None, uri: str | None = None, sub: Any = ANY) -> None:
    got = rec.since(mark, method, uri, sub)
    assert not got, f"unexpected {[str(n) for n in got]}; {rec.describe(mark)}"


# --------------------------------------------------------------------------------------
# 1. two processes, handshake era


def test_legacy_subscribe_two_processes(tmp_path: Path, backend: str) -> None:
    project, db = fresh_project(tmp_path, backend)
    run_import_sync(project, db)
    feat1 = project / "features" / "FEAT-001.md"
    feat2 = project / "features" / "FEAT-002.md"
    rec = Recorder()

    async def body() -> None:
        async with connect(db, "legacy", rec) as client:
            assert client.protocol_version == "2025-11-25"
            caps = client.server_capabilities.resources
            assert caps is not None and caps.subscribe and caps.list_changed, caps
            assert await read_bytes(client, FEAT1) == feat1.read_bytes()
            await subscribe(client, FEAT1)
            await subscribe(client, FEAT2)
            await subscribe(client, CAFE)

            # An edit: `updated` for that URI only, no list change; the read shows the new bytes.
            mark = rec.mark()
            new = edit(feat1, "one")
            exited = await run_import(project, db)
            note = await rec.wait_for(mark, UPDATED, FEAT1)
            print(f"\nlegacy: updated {note.at - exited:.3f} s after the import exited")
            assert await read_bytes(client, FEAT1) == new
            await anyio.sleep(SETTLE)
            assert_once(rec, mark, UPDATED, FEAT1)
            assert len(rec.since(mark)) == 1, rec.describe(mark)

            # A non-ASCII id: the notification names the URI as the client spelled it.
            mark = rec.mark()
            cafe_new = edit(project / "notes" / "café notes.md", "café")
            await run_import(project, db)
            await rec.wait_for(mark, UPDATED, CAFE)
            assert await read_bytes(client, CAFE) == cafe_new
            await anyio.sleep(SETTLE)
            assert_once(rec, mark, UPDATED, CAFE)
            assert_none(rec, mark, LIST_CHANGED)
            assert_none(rec, mark, UPDATED, FEAT2)
            assert all(n.sub is None for n in rec.since(mark)), rec.describe(mark)

            # A new note: `list_changed`, and no `updated` (nothing subscribed changed).
            mark = rec.mark()
            (project / "notes" / "brand-new.md").write_text("# Brand new\n\nhello\n")
            await run_import(project, db)
            await rec.wait_for(mark, LIST_CHANGED)
            await anyio.sleep(SETTLE)
            assert_once(rec, mark, LIST_CHANGED)
            assert_none(rec, mark, UPDATED)
            assert await read_bytes(client, "orchestra://notes/brand-new") == b"# Brand new\n\nhello\n"

            # Deleting the subscribed file: `updated` for it and `list_changed`; it is gone.
            mark = rec.mark()
            feat1.unlink()
            await run_import(project, db)
            await rec.wait_for(mark, UPDATED, FEAT1)
            await rec.wait_for(mark, LIST_CHANGED)
            await anyio.sleep(SETTLE)
            assert_once(rec, mark, UPDATED, FEAT1)
            assert_once(rec, mark, LIST_CHANGED)
            assert_none(rec, mark, UPDATED, FEAT2)
            with pytest.raises(MCPError) as info:
                await client.read_resource(FEAT1)
            assert info.value.code == -32002, info.value

            # Re-creating it is an update too (it is still subscribed) and a list change.
            mark = rec.mark()
            feat1.write_bytes(new)
            await run_import(project, db)
            await rec.wait_for(mark, UPDATED, FEAT1)
            await rec.wait_for(mark, LIST_CHANGED)
            assert await read_bytes(client, FEAT1) == new

            # After unsubscribe: editing both, FEAT-002 (still subscribed) proves the commit was
            # seen, and nothing comes for FEAT-001.
            await unsubscribe(client, FEAT1)
            await anyio.sleep(SETTLE)
            mark = rec.mark()
            edit(feat1, "two")
            new2 = edit(feat2, "two")
            await run_import(project, db)
            await rec.wait_for(mark, UPDATED, FEAT2)
            await anyio.sleep(QUIET_FOR)
            assert_none(rec, mark, UPDATED, FEAT1)
            assert_once(rec, mark, UPDATED, FEAT2)
            assert_none(rec, mark, LIST_CHANGED)
            assert await read_bytes(client, FEAT2) == new2

            # And with nothing subscribed any more, an edit brings nothing at all.
            await unsubscribe(client, FEAT2)
            mark = rec.mark()
            edit(feat1, "three")
            edit(feat2, "three")
            await run_import(project, db)
            await anyio.sleep(QUIET_FOR)
            assert_none(rec, mark)
            assert not rec.errors, rec.errors

    run(body)


# --------------------------------------------------------------------------------------
# 2. two processes, 2026-07-28 (pinned, and auto)


@pytest.mark.parametrize("mode", ["2026-07-28", "auto"])
def test_listen_two_processes(tmp_path: Path, backend: str, mode: str) -> None:
    project, db = fresh_project(tmp_path, backend)
    run_import_sync(project, db)
    feat1 = project / "features" / "FEAT-001.md"
    feat2 = project / "features" / "FEAT-002.md"
    rec = Recorder()

    async def body() -> None:
        async with connect(db, mode, rec) as client:
            assert client.protocol_version == "2026-07-28"
            assert await read_bytes(client, FEAT1) == feat1.read_bytes()

            # Listen A: two documents (plus a URI that names no document) and list changes.
            # Listen B, open at the same time: FEAT-002 only, no list changes.
            a_cm = client.listen(
                resource_subscriptions=[FEAT1, FEAT2, "https://example.com/not-orchestra"],
                resources_list_changed=True,
            )
            a = await a_cm.__aenter__()
            b_cm = client.listen(resource_subscriptions=[FEAT2])
            b = await b_cm.__aenter__()
            a_open = b_open = True
            try:
                assert a.subscription_id != b.subscription_id
                assert sorted(a.honored.resource_subscriptions or []) == [FEAT1, FEAT2], a.honored
                assert a.honored.resources_list_changed is True, a.honored
                assert (b.honored.resource_subscriptions or []) == [FEAT2], b.honored
                assert not b.honored.resources_list_changed, b.honored
                # The acknowledgements were consumed by the listens, not surfaced as notifications.
                assert_none(rec, 0)

                # Edit FEAT-001: A hears it, tagged with its id; B does not.
                mark = rec.mark()
                new1 = edit(feat1, "one")
                exited = await run_import(project, db)
                note = await rec.wait_for(mark, UPDATED, FEAT1, sub=a.subscription_id)
                print(f"\n{mode}: updated {note.at - exited:.3f} s after the import exited")
                assert await next_event(a) == ResourceUpdated(uri=FEAT1)
                assert await read_bytes(client, FEAT1) == new1
                await anyio.sleep(SETTLE)
                assert_once(rec, mark, UPDATED, FEAT1)
                assert_none(rec, mark, LIST_CHANGED)
                assert_none(rec, mark, sub=b.subscription_id)
                assert_none(rec, mark, sub=None)

                # Edit FEAT-002: both hear it, each tagged with its own id, once.
                mark = rec.mark()
                edit(feat2, "one")
                await run_import(project, db)
                await rec.wait_for(mark, UPDATED, FEAT2, sub=a.subscription_id)
                await rec.wait_for(mark, UPDATED, FEAT2, sub=b.subscription_id)
                assert await next_event(a) == ResourceUpdated(uri=FEAT2)
                assert await next_event(b) == ResourceUpdated(uri=FEAT2)
                await anyio.sleep(SETTLE)
                assert_once(rec, mark, UPDATED, FEAT2, sub=a.subscription_id)
                assert_once(rec, mark, UPDATED, FEAT2, sub=b.subscription_id)
                assert len(rec.since(mark)) == 2, rec.describe(mark)

                # A new note: list_changed for A only (B did not ask), no updated.
                mark = rec.mark()
                (project / "notes" / "brand-new.md").write_text("# Brand new\n")
                await run_import(project, db)
                await rec.wait_for(mark, LIST_CHANGED, sub=a.subscription_id)
                assert await next_event(a) == ResourcesListChanged()
                await anyio.sleep(SETTLE)
                assert_once(rec, mark, LIST_CHANGED)
                assert_none(rec, mark, UPDATED)

                # Deleting FEAT-001: updated + list_changed for A; nothing for B.
                mark = rec.mark()
                feat1.unlink()
                await run_import(project, db)
                await rec.wait_for(mark, UPDATED, FEAT1, sub=a.subscription_id)
                await rec.wait_for(mark, LIST_CHANGED, sub=a.subscription_id)
                await anyio.sleep(SETTLE)
                assert_once(rec, mark, UPDATED, FEAT1)
                assert_once(rec, mark, LIST_CHANGED)
                assert_none(rec, mark, sub=b.subscription_id)
                with pytest.raises(MCPError) as info:
                    await client.read_resource(FEAT1)
                assert info.value.code == -32602, info.value
                # Drain A's iterator (the client coalesces pending events, so no count here).
                seen = {await next_event(a), await next_event(a)}
                assert seen == {ResourceUpdated(uri=FEAT1), ResourcesListChanged()}, seen

                # Cancel A. B (still open) proves the next commit was seen; A hears nothing more.
                await a_cm.__aexit__(None, None, None)
                a_open = False
                await anyio.sleep(SETTLE)
                mark = rec.mark()
                feat1.write_bytes(new1)  # re-created: an update of A's URI and a list change
                edit(feat2, "two")
                await run_import(project, db)
                await rec.wait_for(mark, UPDATED, FEAT2, sub=b.subscription_id)
                await anyio.sleep(QUIET_FOR)
                assert_none(rec, mark, sub=a.subscription_id)
                assert_none(rec, mark, LIST_CHANGED)
                assert_once(rec, mark, UPDATED, FEAT2, sub=b.subscription_id)
                assert len(rec.since(mark)) == 1, rec.describe(mark)

                # Open C on FEAT-002, cancel B: C hears the next edit, B nothing.
                async with client.listen(resource_subscriptions=[FEAT2]) as c:
                    assert c.subscription_id not in (a.subscription_id, b.subscription_id)
                    await b_cm.__aexit__(None, None, None)
                    b_open = False
                    await anyio.sleep(SETTLE)
                    mark = rec.mark()
                    edit(feat2, "three")
                    await run_import(project, db)
                    await rec.wait_for(mark, UPDATED, FEAT2, sub=c.subscription_id)
                    assert await next_event(c) == ResourceUpdated(uri=FEAT2)
                    await anyio.sleep(QUIET_FOR)
                    assert_none(rec, mark, sub=b.subscription_id)
                    assert len(rec.since(mark)) == 1, rec.describe(mark)

                # Every listen cancelled: an edit and an addition bring nothing at all.
                await anyio.sleep(SETTLE)
                mark = rec.mark()
                edit(feat1, "four")
                edit(feat2, "four")
                (project / "notes" / "another.md").write_text("# Another\n")
                await run_import(project, db)
                await anyio.sleep(QUIET_FOR)
                assert_none(rec, mark)
                assert not rec.errors, rec.errors
            finally:
                if b_open:
                    await b_cm.__aexit__(None, None, None)
                if a_open:
                    await a_cm.__aexit__(None, None, None)

    run(body)


# --------------------------------------------------------------------------------------
# 3. serve --watch DIR: the server imports by itself


def test_watch_legacy(tmp_path: Path, backend: str) -> None:
    project, db = fresh_project(tmp_path, backend)  # no import: `serve --watch` runs the first one
    feat1 = project / "features" / "FEAT-001.md"
    feat3 = project / "features" / "FEAT-003.md"
    rec = Recorder()

    async def body() -> None:
        async with connect(db, "legacy", rec, "--watch", str(project)) as client:
            assert await read_bytes(client, FEAT1) == feat1.read_bytes()
            await subscribe(client, FEAT1)
            await subscribe(client, FEAT3)
            await subscribe(client, "orchestra://notes/from-the-watch")  # does not exist yet

            # Edit a subscribed file.
            mark = rec.mark()
            t0 = time.monotonic()
            new = edit(feat1, "watch")
            note = await rec.wait_for(mark, UPDATED, FEAT1)
            print(f"\nwatch (legacy): updated {note.at - t0:.3f} s after the edit")
            assert await read_bytes(client, FEAT1) == new
            await anyio.sleep(SETTLE)
            assert_once(rec, mark, UPDATED, FEAT1)
            assert_none(rec, mark, LIST_CHANGED)
            assert_none(rec, mark, UPDATED, FEAT3)

            # Add a file (one that was subscribed to before it existed).
            mark = rec.mark()
            (project / "notes" / "from-the-watch.md").write_text("# From the watch\n\nadded\n")
            await rec.wait_for(mark, LIST_CHANGED)
            await rec.wait_for(mark, UPDATED, "orchestra://notes/from-the-watch")
            assert await read_bytes(client, "orchestra://notes/from-the-watch") == b"# From the watch\n\nadded\n"
            await anyio.sleep(SETTLE)
            assert_once(rec, mark, LIST_CHANGED)
            assert_none(rec, mark, UPDATED, FEAT1)

            # Remove a file.
            mark = rec.mark()
            feat3.unlink()
            await rec.wait_for(mark, UPDATED, FEAT3)
            await rec.wait_for(mark, LIST_CHANGED)
            await anyio.sleep(SETTLE)
            assert_once(rec, mark, UPDATED, FEAT3)
            assert_once(rec, mark, LIST_CHANGED)
            with pytest.raises(MCPError) as info:
                await client.read_resource(FEAT3)
            assert info.value.code == -32002, info.value
            assert not rec.errors, rec.errors

    run(body)


def test_watch_listen(tmp_path: Path, backend: str) -> None:
    project, db = fresh_project(tmp_path, backend)
    run_import_sync(project, db)
    feat1 = project / "features" / "FEAT-001.md"
    rec = Recorder()

    async def body() -> None:
        async with connect(db, "2026-07-28", rec, "--watch", str(project)) as client:
            async with client.listen(resource_subscriptions=[FEAT1], resources_list_changed=True) as sub:
                sid = sub.subscription_id
                mark = rec.mark()
                new = edit(feat1, "watch")
                await rec.wait_for(mark, UPDATED, FEAT1, sub=sid)
                assert await next_event(sub) == ResourceUpdated(uri=FEAT1)
                assert await read_bytes(client, FEAT1) == new

                mark = rec.mark()
                (project / "docs" / "guides" / "watched.md").write_text("# Watched\n")
                await rec.wait_for(mark, LIST_CHANGED, sub=sid)
                assert await next_event(sub) == ResourcesListChanged()

                mark = rec.mark()
                feat1.unlink()
                await rec.wait_for(mark, UPDATED, FEAT1, sub=sid)
                await rec.wait_for(mark, LIST_CHANGED, sub=sid)
                await anyio.sleep(SETTLE)
                assert_once(rec, mark, UPDATED, FEAT1)
                assert_once(rec, mark, LIST_CHANGED)
                assert_none(rec, mark, sub=None)
            assert not rec.errors, rec.errors

    run(body)


# --------------------------------------------------------------------------------------
# 4. a 10,000-document change, one import


BULK = 10_000


def bulk_path(project: Path, n: int) -> Path:
    return project / "features" / "bulk" / f"B-{n:05d}.md"


def write_bulk(project: Path, round_: int) -> None:
    for n in range(BULK):
        bulk_path(project, n).write_text(f"# Bulk {n}\n\nround {round_}\n")


def test_ten_thousand_changes(tmp_path: Path, backend: str) -> None:
    project, db = fresh_project(tmp_path, backend)
    (project / "features" / "bulk").mkdir()
    write_bulk(project, 1)
    run_import_sync(project, db)
    watched = list(range(0, BULK, BULK // 20))  # 20 documents spread over the range
    uris = [f"orchestra://features/bulk/B-{n:05d}" for n in watched]
    rec = Recorder()

    async def body() -> None:
        async with connect(db, "legacy", rec) as client:
            for uri in uris:
                await subscribe(client, uri)
            await anyio.sleep(SETTLE)
            mark = rec.mark()
            write_bulk(project, 22)  # every file rewritten, new bytes (and size)
            exited = await run_import(project, db)
            deadline = exited + 10.0
            while len({n.uri for n in rec.since(mark, UPDATED)}) < len(uris) and time.monotonic() < deadline:
                await anyio.sleep(0.02)
            got = rec.since(mark, UPDATED)
            assert len({n.uri for n in got}) == len(uris), (
                f"{len({n.uri for n in got})} of {len(uris)} subscribed URIs notified within 10 s; {rec.describe(mark)}"
            )
            last = max(n.at for n in got)
            print(f"\n10k change: last of {len(uris)} updated {last - exited:.3f} s after the import exited")
            await anyio.sleep(QUIET_FOR)
            got = rec.since(mark, UPDATED)
            assert sorted(n.uri for n in got) == sorted(uris), rec.describe(mark)  # each exactly once
            assert_none(rec, mark, LIST_CHANGED)
            assert len(rec.since(mark)) == len(uris), rec.describe(mark)
            assert last - exited < ARRIVES_WITHIN, f"last notification {last - exited:.3f} s after the import"
            assert await read_bytes(client, uris[7]) == f"# Bulk {watched[7]}\n\nround 22\n".encode()
            assert not rec.errors, rec.errors

    run(body)
