"""The authorization server of the auth interop tests, from a Python test's side (auth_as.mjs is the
TypeScript twin): oidc-as.mjs (a real OpenID provider, oidc-provider 9.13.3, installed by `npm ci` in
this folder) started with `node` on a free loopback port, its client_credentials tokens fetched, a
restart on the same port (a key rotation), a stop. Not a test module: pytest does not collect it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "oidc-as.mjs"
READY_WITHIN = 15.0  # seconds


def free_port() -> int:
    """A port free on 127.0.0.1 now: bound on :0, read, closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class AuthServer:
    """oidc-as.mjs on `port` (0: a free one). `issuer` is what `--oauth-issuer` takes; clients
    `reader`, `searcher`, `writer`, `features` have the secret `<id>-secret`."""

    def __init__(self, port: int = 0) -> None:
        node = shutil.which("node")
        assert node, "the auth tests need node on PATH (and `npm ci` in tests/interop)"
        assert (HERE / "node_modules" / "oidc-provider").is_dir(), "run `npm ci` in tests/interop first"
        self._node = node
        self._dir = tempfile.TemporaryDirectory(prefix="orchestra-as-")
        self._log = Path(self._dir.name) / "as.log"
        self.issuer = self._launch(port)
        self.port = urllib.parse.urlsplit(self.issuer).port

    def _launch(self, port: int) -> str:
        out = Path(self._dir.name) / "as.out"
        with out.open("wb") as stdout, self._log.open("ab") as stderr:
            self._proc = subprocess.Popen(
                [self._node, str(SCRIPT)],
                env={**os.environ, "AS_PORT": str(port)},
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
            )
        deadline = time.monotonic() + READY_WITHIN
        while True:
            for line in out.read_text(errors="replace").splitlines(keepends=True):
                if line.startswith("AS ready ") and line.endswith("\n"):
                    return line.removeprefix("AS ready ").strip()
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._kill()
                raise AssertionError(f"the AS did not start (exit {self._proc.poll()}): {self.log()}")
            time.sleep(0.02)

    def log(self) -> str:
        return self._log.read_text(errors="replace")[-4000:]

    def _kill(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def token_response(self, client: str, scope: str, resource: str) -> tuple[int, dict[str, Any]]:
        """POST /token, grant_type=client_credentials, client_secret_basic: (status, JSON body)."""
        basic = base64.b64encode(f"{client}:{client}-secret".encode()).decode()
        data = urllib.parse.urlencode({"grant_type": "client_credentials", "scope": scope, "resource": resource})
        req = urllib.request.Request(
            f"{self.issuer}/token",
            data=data.encode(),
            headers={"Authorization": f"Basic {basic}", "Content-Type": "application/x-www-form-urlencoded"},
        )
        return _send(req)

    def token(self, client: str, scope: str, resource: str) -> str:
        status, body = self.token_response(client, scope, resource)
        assert status == 200, f"token for {client} ({scope}) at {resource}: {status} {body}"
        return body["access_token"]

    def mint(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        """`claims` signed with the AS's current key (POST /test/mint)."""
        req = urllib.request.Request(
            f"{self.issuer}/test/mint",
            data=json.dumps({"header": header or {}, "claims": claims}).encode(),
            headers={"Content-Type": "application/json"},
        )
        status, body = _send(req)
        assert status == 200, body
        return body["token"]

    def restart(self) -> None:
        """A new process on the same port: a new key and kid (a rotation); tokens in memory are gone."""
        self._kill()
        issuer = self._launch(self.port or 0)
        assert issuer == self.issuer, (issuer, self.issuer)

    def stop(self) -> None:
        self._kill()
        self._dir.cleanup()


def _send(req: urllib.request.Request) -> tuple[int, dict[str, Any]]:
    # No proxy: the AS is on loopback.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=20) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")
