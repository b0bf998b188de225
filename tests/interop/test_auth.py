"""Interop tests: OAuth access to `orchestra serve --http` (issue 36) through the official Python MCP
client (mcp 2.3.0), in the handshake era (`mode="legacy"`) and pinned to 2026-07-28, on a SQLite
file and on a PostgreSQL database (as the other interop tests).

The authorization server is a real OpenID provider on loopback (oidc-as.mjs, oidc-provider 9.13.3,
started by auth_as.py). Two ways a client gets its token:

- the SDK's own `ClientCredentialsOAuthProvider` (mcp.client.auth.extensions), which walks
  401 → Protected Resource Metadata → AS metadata → token by itself, asks for the scope the
  challenge names, and steps up on a 403 `insufficient_scope` (SEP-2350): the reader reads, the
  writer steps up from read to write and writes;
- a fixed token fetched beforehand (an `httpx2.Auth` that sets the header), for the clients whose
  grant the challenge's scope would exceed: the reader refused search and writes (the client
  surfaces the 403 as an error, and the 403's challenge names the scopes), and the features-only
  client (`orchestra:read:features orchestra:search`).

The features-only client sees exactly what a client of a server holding only the features sees
(the same listing, the same search hits, the same error for a note): with only features granted,
notes and docs are as absent as if their folders were empty.

One orchestra server per store for the module (plus the reference server of the features test).
The binary comes from $ORCHESTRA_BIN; `node` and `npm ci` in tests/interop are needed for the AS.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from auth_as import AuthServer, free_port
from test_python_client import BACKENDS, ORCHESTRA_BIN, list_all, new_db, run_import

MODES = ["legacy", "2026-07-28"]
RPC_TIMEOUT = 30.0
TEST_TIMEOUT = 120.0
WORD = "quillfeather"
DOCS = {
    "features/FEAT-001.md": f"# Quill one\n\nThe {WORD} plan for features.\n",
    "features/FEAT-002.md": f"# Quill two\n\nMore {WORD} here.\n",
    "features/FEAT-003.md": "# Harbor\n\nNothing planted.\n",
    "notes/plan.md": f"# Plan\n\nA {WORD} note.\n",
    "notes/retro.md": "# Retro\n\nWent well.\n",
    "docs/adr/0001.md": f"# ADR one\n\nWe chose {WORD}.\n",
}
ALL_URIS = sorted(f"orchestra://{path.removesuffix('.md')}" for path in DOCS)
MTIME = 1_790_000_000
SERVING = re.compile(r"^orchestra: serving MCP on (http://\S+/mcp)$", re.M)


# --------------------------------------------------------------------------------------
# the servers


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def stderr_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@contextmanager
def serve(db: Path | str, addr: str, *extra: str) -> Iterator[Server]:
    """`orchestra serve --db DB --http ADDR …`, once it printed its address."""
    assert ORCHESTRA_BIN.exists(), f"orchestra binary not found at {ORCHESTRA_BIN} (set ORCHESTRA_BIN)"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "serve.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(
                [str(ORCHESTRA_BIN), "serve", "--db", str(db), "--http", addr, *extra],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        try:
            deadline = time.monotonic() + 15
            while not (match := SERVING.search(log.read_text(errors="replace"))):
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"orchestra serve did not start (exit {proc.poll()}):\n{log.read_text(errors='replace')}")
                time.sleep(0.02)
            yield Server(match.group(1), proc, log)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def write_project(root: Path, only: str | None = None) -> None:
    for path, text in DOCS.items():
        if only is None or path.startswith(f"{only}/"):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(text.encode())
            os.utime(root / path, (MTIME, MTIME))  # the same in both projects: nothing differs but the grant


@dataclass
class Env:
    auth: AuthServer
    project: Path
    server: Server  # OAuth on, public URL http://127.0.0.1:PORT/mcp
    public_url: str
    reference: Server  # no auth, a project that holds only the features

    def token(self, client: str, scope: str) -> str:
        return self.auth.token(client, scope, self.public_url)


@pytest.fixture(scope="module", params=BACKENDS)
def env(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Generator[Env]:
    base = tmp_path_factory.mktemp("auth")
    project, only_features = base / "project", base / "only-features"
    write_project(project)
    write_project(only_features, only="features")
    db, reference_db = new_db(base, "auth", request.param), new_db(base, "auth_reference", request.param)
    run_import(project, db)
    run_import(only_features, reference_db)
    auth = AuthServer()
    try:
        port = free_port()
        public_url = f"http://127.0.0.1:{port}/mcp"
        with (
            serve(db, f"127.0.0.1:{port}", "--project", str(project), "--public-url", public_url, "--oauth-issuer", auth.issuer) as server,
            serve(reference_db, "127.0.0.1:0") as reference,
        ):
            assert server.url == public_url, server.url
            yield Env(auth, project, server, public_url, reference)
    finally:
        auth.stop()


# --------------------------------------------------------------------------------------
# the clients


class MemoryStorage:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class FixedToken(httpx2.Auth):
    """`Authorization: Bearer TOKEN` on every request: a token fetched beforehand."""

    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


def sdk_provider(env: Env, client: str, scope: str | None = None) -> ClientCredentialsOAuthProvider:
    return ClientCredentialsOAuthProvider(
        server_url=env.public_url,
        storage=MemoryStorage(),
        client_id=client,
        client_secret=f"{client}-secret",
        scope=scope,
        issuer=env.auth.issuer,
    )


@dataclass
class HttpLog:
    """(method, path, status, WWW-Authenticate) of every HTTP exchange, the auth flow's included."""

    exchanges: list[tuple[str, str, int, str | None]] = field(default_factory=list)

    async def hook(self, response: Any) -> None:
        req = response.request
        self.exchanges.append((req.method, req.url.path, response.status_code, response.headers.get("www-authenticate")))


@asynccontextmanager
async def connect(url: str, mode: str, auth: httpx2.Auth | None) -> AsyncIterator[tuple[Client, HttpLog]]:
    log = HttpLog()
    async with create_mcp_http_client(auth=auth) as hc:
        hc.event_hooks = {"response": [log.hook]}
        try:
            async with Client(streamable_http_client(url, http_client=hc), mode=mode, read_timeout_seconds=RPC_TIMEOUT) as client:
                yield client, log
        except BaseException:
            sys.stderr.write(f"--- HTTP exchanges (mode={mode}) ---\n{log.exchanges}\n")
            raise


def run(env: Env, body: Callable[[], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        with anyio.fail_after(TEST_TIMEOUT):
            return await body()

    try:
        return anyio.run(main)
    except BaseException:
        sys.stderr.write(f"--- orchestra serve stderr ---\n{env.server.stderr_tail()}\n--- AS ---\n{env.auth.log()}\n")
        raise


def challenge(header: str | None) -> tuple[str, dict[str, str]]:
    """A `WWW-Authenticate` value as the SDKs read it: the scheme, then `name="value"` pairs."""
    assert header, "no WWW-Authenticate"
    scheme, _, rest = header.partition(" ")
    params = dict(re.findall(r'([A-Za-z_]+)="([^"]*)"', rest))
    return scheme, params


# --------------------------------------------------------------------------------------
# the tests


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_fetches_a_reader_token_and_reads(env: Env, mode: str) -> None:
    async def body() -> None:
        async with connect(env.public_url, mode, sdk_provider(env, "reader")) as (client, log):
            resources, _ = await list_all(client)
            assert sorted(r.uri for r in resources) == ALL_URIS
            result = await client.read_resource("orchestra://features/FEAT-001")
            assert result.contents[0].text == DOCS["features/FEAT-001.md"]
            # The SDK walked it: 401, the metadata the challenge names, the AS, then 200s.
            first = log.exchanges[0]
            assert first[0] == "POST" and first[2] == 401, log.exchanges
            scheme, params = challenge(first[3])
            assert scheme == "Bearer" and params["scope"] == "orchestra:read", first
            prm = f"{env.public_url.removesuffix('/mcp')}/.well-known/oauth-protected-resource/mcp"
            assert params["resource_metadata"] == prm, first
            paths = [path for _, path, _, _ in log.exchanges]
            assert "/.well-known/oauth-protected-resource/mcp" in paths, paths
            assert "/token" in paths, paths
            after = [s for _, path, s, _ in log.exchanges[paths.index("/token") :] if path == "/mcp"]
            assert after and all(s in (200, 202, 204) for s in after), log.exchanges

    run(env, body)


@pytest.mark.parametrize("mode", MODES)
def test_a_reader_is_refused_search_and_writes(env: Env, mode: str) -> None:
    token = env.token("reader", "orchestra:read")

    async def body() -> None:
        async with connect(env.public_url, mode, FixedToken(token)) as (client, log):
            await client.read_resource("orchestra://notes/plan")
            for name, args, scope in [
                ("search", {"query": WORD}, "orchestra:read orchestra:search"),
                ("create", {"uri": f"orchestra://notes/by-reader-{mode}", "content": "x\n"}, "orchestra:write"),
            ]:
                before = len(log.exchanges)
                with pytest.raises(MCPError):
                    await client.call_tool(name, args)
                refused = [e for e in log.exchanges[before:] if e[2] == 403]
                assert len(refused) == 1, log.exchanges[before:]
                scheme, params = challenge(refused[0][3])
                assert scheme == "Bearer", refused
                assert params["error"] == "insufficient_scope", params
                assert params["scope"] == scope, params
            assert not (env.project / "notes" / f"by-reader-{mode}.md").exists()

    run(env, body)


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_steps_up_from_read_to_write_and_writes(env: Env, mode: str) -> None:
    uri = f"orchestra://notes/by-writer-{mode}"

    async def body() -> None:
        # No scope configured: the SDK asks for what each challenge names, read first, then write.
        async with connect(env.public_url, mode, sdk_provider(env, "writer")) as (client, log):
            resources, _ = await list_all(client)
            assert len(resources) >= len(DOCS)
            before = len(log.exchanges)
            result = await client.call_tool("create", {"uri": uri, "content": "# Written by the writer\n"})
            assert not result.is_error, result.content
            steps = [(m, p, s) for m, p, s, _ in log.exchanges[before:]]
            assert ("POST", "/mcp", 403) in steps and ("POST", "/token", 200) in steps, steps
            assert steps[-1] == ("POST", "/mcp", 200), steps

    run(env, body)
    assert (env.project / "notes" / f"by-writer-{mode}.md").read_text() == "# Written by the writer\n"


@pytest.mark.parametrize("mode", MODES)
def test_a_features_only_client_sees_what_a_server_of_only_features_shows(env: Env, mode: str) -> None:
    token = env.token("features", "orchestra:read:features orchestra:search")

    async def observe(url: str, auth: httpx2.Auth | None) -> dict[str, Any]:
        async with connect(url, mode, auth) as (client, _):
            resources, _ = await list_all(client)
            found = await client.call_tool("search", {"query": WORD, "limit": 50})
            assert not found.is_error, found.content
            errors = {}
            for uri in ["orchestra://notes/plan", "orchestra://docs/adr/0001", "orchestra://notes/no-such-note"]:
                with pytest.raises(MCPError) as err:
                    await client.read_resource(uri)
                errors[uri] = (err.value.code, err.value.message, err.value.data)
            return {
                "resources": sorted((r.model_dump(mode="json", exclude_none=True) for r in resources), key=lambda r: r["uri"]),
                "search": found.structured_content,
                "errors": errors,
            }

    async def body() -> None:
        seen = await observe(env.public_url, FixedToken(token))
        expected = await observe(env.reference.url, None)
        assert [r["uri"] for r in seen["resources"]] == ["orchestra://features/FEAT-001", "orchestra://features/FEAT-002", "orchestra://features/FEAT-003"]
        assert sorted(h["uri"] for h in seen["search"]["hits"]) == ["orchestra://features/FEAT-001", "orchestra://features/FEAT-002"]
        assert seen == expected

    run(env, body)
