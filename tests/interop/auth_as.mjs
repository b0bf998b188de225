// The authorization server of the auth interop tests, from a test's side: oidc-as.mjs (a real
// OpenID provider, oidc-provider 9.13.3) started on a free loopback port, its tokens fetched the
// way a client_credentials client fetches them, a restart on the same port (a key rotation), a
// stop. Not a test file: node --test does not pick up this name.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const SCRIPT = join(HERE, 'oidc-as.mjs');
const READY_WITHIN_MS = 15_000;

/** A port free on 127.0.0.1 now: bound on :0, read, closed (another process may take it meanwhile; unlikely). */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Starts oidc-as.mjs on `port` (0: any); resolves once it printed `AS ready <issuer>`. */
async function launch(port) {
  const child = spawn(process.execPath, [SCRIPT], {
    env: { ...process.env, AS_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk) => {
    err += chunk;
  });
  const issuer = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the AS did not start within ${READY_WITHIN_MS} ms: ${out}${err}`)), READY_WITHIN_MS);
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const match = out.match(/^AS ready (http:\/\/\S+)\r?\n/m); // the whole line: stdout may arrive in pieces
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the AS exited ${code} before it was ready: ${out}${err}`));
    });
  });
  return { child, issuer, log: () => out + err };
}

async function kill(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/**
 * The authorization server, started on a free port.
 *
 * - `issuer`: `http://127.0.0.1:PORT`, what orchestra's `--oauth-issuer` takes.
 * - `token(client, scope, resource)`: a client_credentials access token (client_secret_basic with
 *   the secret `<client>-secret`); `tokenResponse` gives the whole answer, errors included.
 * - `mint(claims, header)`: `claims` signed with the AS's current key (`POST /test/mint`).
 * - `publicJwk()`: the current public key, as /jwks publishes it.
 * - `restart()`: a new process on the same port, hence a new key and kid (a rotation).
 * - `stop()`.
 */
export async function startAs() {
  let as = await launch(0);
  const issuer = as.issuer;
  const port = Number(new URL(issuer).port);
  const post = async (path, init) => {
    const res = await fetch(`${issuer}${path}`, { method: 'POST', ...init });
    return { status: res.status, body: await res.json() };
  };
  const tokenResponse = (client, scope, resource) =>
    post('/token', {
      headers: {
        authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }).toString(),
    });
  return {
    issuer,
    port,
    tokenResponse,
    async token(client, scope, resource) {
      const { status, body } = await tokenResponse(client, scope, resource);
      assert.equal(status, 200, `token for ${client} (${scope}) at ${resource}: ${JSON.stringify(body)}`);
      return body.access_token;
    },
    async mint(claims, header = {}) {
      const { status, body } = await post('/test/mint', {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ header, claims }),
      });
      assert.equal(status, 200, JSON.stringify(body));
      return body.token;
    },
    async publicJwk() {
      return (await fetch(`${issuer}/test/key`)).json();
    },
    async restart() {
      await kill(as.child);
      as = await launch(port);
      assert.equal(as.issuer, issuer);
    },
    stop: () => kill(as.child),
    log: () => as.log(),
  };
}
