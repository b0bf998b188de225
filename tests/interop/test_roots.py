"""Interop: `orchestra serve` with no flags, started where there is nothing to serve, and the
official Python client (mcp 2.3.0) offering roots (`list_roots_callback`).

The server asks `roots/list` after `notifications/initialized`, serves the first `file://` root
that holds a project (imported into that root's `.orchestra/`), and on
`notifications/roots/list_changed` asks again and switches, sending
`notifications/resources/list_changed`. A client without roots gets an empty server.

SQLite only: the roots are asked only when no database is named (a PostgreSQL one always is), and
a chosen root is imported into the SQLite file `.orchestra/orchestra.db` inside it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client, types

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURE_PROJECT = REPO_ROOT / "fixtures" / "project"
ORCHESTRA_BIN = (REPO_ROOT / os.environ.get("ORCHESTRA_BIN", "target/release/orchestra")).resolve()
RPC_TIMEOUT = 30.0


async def uris(client: Client) -> set[str]:
    result = await client.list_resources()
    return {str(r.uri) for r in result.resources}


async def wait_for(client: Client, predicate, what: str) -> set[str]:
    """Lists until `predicate(uris)` holds, for up to 15 s (the server imports in between)."""
    with anyio.fail_after(15):
        while True:
            seen = await uris(client)
            if predicate(seen):
                return seen
            await anyio.sleep(0.1)
    raise AssertionError(what)


def run_with_roots(cwd: Path, roots: list[str] | None, body, failing: bool = False) -> Any:
    """`orchestra serve` in `cwd`; the client offers `roots` (a mutable list) when not None."""
    params = StdioServerParameters(command=str(ORCHESTRA_BIN), args=["serve"], cwd=str(cwd))
    notifications: list[str] = []

    async def list_roots(_context) -> types.ListRootsResult | types.ErrorData:
        if failing:
            return types.ErrorData(code=-32603, message="roots are unavailable")
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in roots])

    async def on_message(message) -> None:
        if isinstance(message, types.ServerNotification):
            notifications.append(message.root.method if hasattr(message, "root") else message.method)

    async def main() -> Any:
        with tempfile.TemporaryFile(mode="w+") as errlog:
            try:
                async with Client(
                    stdio_client(params, errlog=errlog),
                    mode="legacy",
                    read_timeout_seconds=RPC_TIMEOUT,
                    list_roots_callback=list_roots if roots is not None else None,
                    message_handler=on_message,
                ) as client:
                    with anyio.fail_after(60):
                        return await body(client, notifications)
            except BaseException:
                errlog.seek(0)
                sys.stderr.write(f"--- orchestra serve stderr ---\n{errlog.read()[-4000:]}\n")
                raise

    return anyio.run(main)


def test_the_first_root_with_a_project_is_served_and_a_change_switches(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    first = tmp_path / "first"
    shutil.copytree(FIXTURE_PROJECT, first)
    second = tmp_path / "second"
    (second / "notes").mkdir(parents=True)
    (second / "notes" / "only.md").write_text("# Only note\n")
    plain = tmp_path / "plain"  # a folder that holds no project
    plain.mkdir()
    # (The Python client accepts only file:// roots; other schemes are skipped by a unit test.)
    roots = [plain.as_uri(), (tmp_path / "missing").as_uri(), first.as_uri()]

    async def body(client: Client, notifications: list[str]) -> None:
        served = await wait_for(client, lambda s: len(s) == 17, "the fixture's 17 documents")
        assert "orchestra://features/FEAT-001" in served
        assert (first / ".orchestra" / "orchestra.db").is_file()
        # The roots change: the server asks again, switches, and says the list changed.
        roots[:] = [second.as_uri(), first.as_uri()]
        await client.send_roots_list_changed()
        served = await wait_for(client, lambda s: s == {"orchestra://notes/only"}, "the second project")
        assert served == {"orchestra://notes/only"}
        with anyio.fail_after(5):
            while "notifications/resources/list_changed" not in notifications:
                await anyio.sleep(0.05)

    run_with_roots(empty, roots, body)


def test_without_roots_the_server_serves_nothing(tmp_path: Path) -> None:
    async def body(client: Client, _notifications: list[str]) -> None:
        await anyio.sleep(0.5)
        assert await uris(client) == set()
        try:
            await client.read_resource("orchestra://features/FEAT-001")
        except Exception as e:  # the client raises the server's -32002
            assert "not found" in str(e).lower() or "-32002" in str(e), e
        else:
            raise AssertionError("a read succeeded with no project")

    run_with_roots(tmp_path, None, body)


def test_roots_without_a_project_leave_the_server_empty(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()

    async def body(client: Client, _notifications: list[str]) -> None:
        await anyio.sleep(1.0)
        assert await uris(client) == set()

    run_with_roots(tmp_path, [plain.as_uri()], body)


def test_a_client_that_answers_roots_list_with_an_error_leaves_the_server_as_it_was(tmp_path: Path) -> None:
    async def body(client: Client, _notifications: list[str]) -> None:
        await anyio.sleep(1.0)
        assert await uris(client) == set()
        assert (await client.list_resource_templates()).resource_templates, "still serving"

    run_with_roots(tmp_path, [], body, failing=True)
