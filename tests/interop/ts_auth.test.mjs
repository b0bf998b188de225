// Interop test: who may do what over `orchestra serve --http` (issue 36), against a real OpenID
// provider (oidc-as.mjs: oidc-provider 9.13.3 on a free loopback port, started by auth_as.mjs).
//
// - API keys (`orchestra token create`, `serve --api-keys`): 401 and 403 challenges, a per-prefix
//   write, a key in the query string refused, and a revoked key refused by a second server of the
//   same database within 5 s.
// - OAuth (`--public-url`, `--oauth-issuer`), raw HTTP with fetch, one rule at a time: the
//   Protected Resource Metadata (RFC 9728), whose `resource` is the configured URL whatever the
//   Host header says; 401 and 403 `WWW-Authenticate` challenges parsed as the TypeScript SDK
//   parses them; reader, searcher, writer and features-only tokens; tokens with a genuine signature
//   but expired, not yet valid, for another audience or from another issuer; `alg: none`; HS256
//   keyed with the public key's PEM (algorithm confusion); a token in the query string; opaque
//   tokens checked by introspection (RFC 7662) on a second server whose public URL is
//   http://localhost:PORT/mcp; a key rotation (the AS restarted: the new kid is fetched, the old
//   one's tokens are refused).
// - The official clients walking 401 → PRM → AS metadata → token by themselves, with the SDKs'
//   client_credentials providers: @modelcontextprotocol/sdk 1.x (handshake era) as reader, and
//   @modelcontextprotocol/client 2.x (2026-07-28) as the features-only client, whose search sees
//   only features.
//
// Each on a SQLite file and on a PostgreSQL database (backends.mjs). Run with
// `node --test tests/interop/`. The binary comes from $ORCHESTRA_BIN.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { createHmac, createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ClientCredentialsProvider as ClientCredentialsV1 } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import {
  Client as ClientV2,
  ClientCredentialsProvider as ClientCredentialsV2,
  StreamableHTTPClientTransport as TransportV2,
} from '@modelcontextprotocol/client';

import { startAs, freePort } from './auth_as.mjs';
import { BACKENDS, newDb } from './backends.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, '..', '..');
const ORCHESTRA_BIN = resolve(REPO_ROOT, process.env.ORCHESTRA_BIN ?? join('target', 'release', 'orchestra'));
const TIMEOUT_MS = 20_000;
const REVOKED_WITHIN_MS = 5_000;
const ROTATED_WITHIN_MS = 45_000; // a server re-fetches the JWKS on an unknown kid at most every 30 s

const SCOPES_SUPPORTED = ['orchestra:read', 'orchestra:search', 'orchestra:write', 'orchestra:admin'];
const WORD = 'quillfeather';
const DOCS = {
  'features/FEAT-001.md': `# Quill one\n\nThe ${WORD} plan for features.\n`,
  'features/FEAT-002.md': `# Quill two\n\nMore ${WORD} here.\n`,
  'features/FEAT-003.md': '# Harbor\n\nNothing planted.\n',
  'notes/plan.md': `# Plan\n\nA ${WORD} note.\n`,
  'notes/retro.md': '# Retro\n\nWent well.\n',
  'docs/adr/0001.md': `# ADR one\n\nWe chose ${WORD}.\n`,
};

// ---------------------------------------------------------------------------------------
// the project and the servers

/** A temporary folder with a small project imported into a new store of `backend`. */
function newProject(backend, name) {
  assert.ok(existsSync(ORCHESTRA_BIN), `orchestra binary not found at ${ORCHESTRA_BIN} (set ORCHESTRA_BIN)`);
  const dir = mkdtempSync(join(tmpdir(), 'orchestra-ts-auth-'));
  const project = join(dir, 'project');
  for (const [path, text] of Object.entries(DOCS)) {
    mkdirSync(dirname(join(project, path)), { recursive: true });
    writeFileSync(join(project, path), text);
  }
  const db = newDb(dir, name, backend);
  orchestra('import', project, '--db', db);
  return { dir, project, db, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

function orchestra(...args) {
  return execFileSync(ORCHESTRA_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 }).toString();
}

/**
 * `orchestra serve --http ADDR …`; resolves once it printed its address. `url` is the /mcp URL on
 * 127.0.0.1 whatever its public URL; `log()` its stderr so far; `stop()` ends it.
 */
async function serve(args) {
  const child = spawn(ORCHESTRA_BIN, ['serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let seen = '';
  child.stderr.on('data', (chunk) => {
    seen += chunk;
  });
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`no address in: ${seen}`)), TIMEOUT_MS);
    child.stderr.on('data', () => {
      const match = seen.match(/serving MCP on (http:\/\/\S+)\r?\n/); // the whole line: stderr may arrive in pieces
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve ${args.join(' ')} exited ${code}: ${seen}`));
    });
  });
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  return { url: url.replace('localhost', '127.0.0.1'), origin: new URL(url).origin, log: () => seen, stop };
}

/** A server with OAuth on a port picked first: its public URL must be known before it starts. */
async function serveOAuth(p, as, { host = '127.0.0.1', extra = [] } = {}) {
  const port = await freePort();
  const publicUrl = `http://${host}:${port}/mcp`;
  const server = await serve([
    '--db', p.db, '--project', p.project, '--http', `127.0.0.1:${port}`,
    '--public-url', publicUrl, '--oauth-issuer', as.issuer, ...extra,
  ]);
  return {
    ...server,
    publicUrl,
    url: `http://127.0.0.1:${port}/mcp`,
    origin: `http://127.0.0.1:${port}`,
    metadata: `${new URL(publicUrl).origin}/.well-known/oauth-protected-resource/mcp`,
  };
}

// ---------------------------------------------------------------------------------------
// raw MCP over HTTP (2026-07-28: stateless POSTs, the envelope in _meta)

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'orchestra-interop-auth', version: '1' },
};
let nextId = 1;

/** One JSON-RPC request; `bearer` goes in the Authorization header, `query` after /mcp. */
async function rpc(url, method, params, { bearer, name, query = '' } = {}) {
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-method': method,
    'mcp-protocol-version': '2026-07-28',
  };
  if (name !== undefined) headers['mcp-name'] = name;
  if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`;
  const res = await fetch(url + query, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: META } }),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  const text = await res.text();
  let body;
  if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const data = text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
    body = data.length ? JSON.parse(data.at(-1)) : undefined;
  } else {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: res.status, headers: res.headers, body, res };
}

const list = (url, bearer, opts) => rpc(url, 'resources/list', {}, { bearer, ...opts });
const read = (url, bearer, uri) => rpc(url, 'resources/read', { uri }, { bearer, name: uri });
const tool = (url, bearer, name, args) => rpc(url, 'tools/call', { name, arguments: args }, { bearer, name });
const search = (url, bearer, query = WORD) => tool(url, bearer, 'search', { query, limit: 50 });

/**
 * A `WWW-Authenticate` challenge as the TypeScript SDK reads it: the scheme, then every
 * `name="value"` pair (each value quoted). Cross-checked with the SDK's own
 * `extractWWWAuthenticateParams`.
 */
function challenge(r) {
  const header = r.headers.get('www-authenticate');
  assert.ok(header, `no WWW-Authenticate on ${r.status}: ${JSON.stringify(r.body)}`);
  const [scheme, ...rest] = header.split(' ');
  const params = {};
  let tail = rest.join(' ').trim();
  while (tail) {
    const match = tail.match(/^([A-Za-z_]+)="([^"]*)"\s*,?\s*/);
    assert.ok(match, `not a name="value" list: ${header}`);
    assert.ok(!(match[1] in params), `${match[1]} twice in ${header}`);
    params[match[1]] = match[2];
    tail = tail.slice(match[0].length);
  }
  const sdk = extractWWWAuthenticateParams(r.res);
  assert.equal(sdk.scope, params.scope, header);
  assert.equal(sdk.error, params.error, header);
  assert.equal(sdk.resourceMetadataUrl?.href, params.resource_metadata, header);
  return { scheme, params };
}

/** 401 with the challenge a client needs: where the metadata is, the scope to ask for, and invalid_token when one was sent. */
function assertUnauthorized(r, { metadata, sent }) {
  assert.equal(r.status, 401, JSON.stringify(r.body));
  const { scheme, params } = challenge(r);
  assert.equal(scheme, 'Bearer');
  assert.equal(params.resource_metadata, metadata);
  assert.equal(params.scope, 'orchestra:read');
  assert.equal(params.error, sent ? 'invalid_token' : undefined, JSON.stringify(params));
  assert.equal(r.body.error, sent ? 'invalid_token' : 'unauthorized', JSON.stringify(r.body));
}

/** 403 insufficient_scope naming every scope the operation needs. */
function assertForbidden(r, scope, metadata) {
  assert.equal(r.status, 403, JSON.stringify(r.body));
  const { scheme, params } = challenge(r);
  assert.equal(scheme, 'Bearer');
  assert.deepEqual(params, { ...(metadata ? { resource_metadata: metadata } : {}), scope, error: 'insufficient_scope' });
  assert.equal(r.body.error, 'insufficient_scope');
}

function assertOk(r) {
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.ok(r.body.result, JSON.stringify(r.body));
  assert.notEqual(r.body.result.isError, true, JSON.stringify(r.body.result));
  return r.body.result;
}

const uris = (r) => assertOk(r).resources.map((x) => x.uri).sort();
const hitUris = (r) => assertOk(r).structuredContent.hits.map((h) => h.uri).sort();

/** The answer to reading `uri`, with `uri` written as URI: two answers that differ only in the URI compare equal. */
function asMissing(r, uri) {
  const body = JSON.parse(JSON.stringify(r.body).replaceAll(uri, 'URI'));
  if (body && typeof body === 'object') delete body.id;
  return { status: r.status, contentType: r.headers.get('content-type'), body };
}

// ---------------------------------------------------------------------------------------
// tokens made by hand

const b64url = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
const parts = (jwt) => jwt.split('.').map((p, i) => (i < 2 ? JSON.parse(Buffer.from(p, 'base64url')) : p));

/** A real token's claims under `header` with no signature (RFC 7519 unsecured JWT). */
function unsigned(jwt, header) {
  const [, claims] = parts(jwt);
  return `${b64url(header)}.${b64url(claims)}.`;
}

/** HS256 over the claims, keyed with the AS public key's PEM: the classic algorithm confusion. */
function hs256WithPublicPem(jwk, header, claims) {
  const pem = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
  const input = `${b64url(header)}.${b64url(claims)}`;
  return `${input}.${createHmac('sha256', pem).update(input).digest('base64url')}`;
}

/** GET with a Host header of our choosing (fetch does not let one set Host). */
function getWithHost(url, headers) {
  return new Promise((resolveGet, reject) => {
    const req = httpRequest(url, { headers, timeout: TIMEOUT_MS }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolveGet({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function until(what, withinMs, probe) {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const last = await probe();
    if (last.done) return last;
    assert.ok(Date.now() < deadline, `${what} not within ${withinMs} ms: ${JSON.stringify(last.detail)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

// ---------------------------------------------------------------------------------------
// the tests

for (const backend of BACKENDS) {
  test(`API keys over HTTP: scopes, challenges, revocation seen by a second server [${backend}]`, async () => {
    const p = newProject(backend, 'auth_keys');
    const key = (name, ...scopes) => {
      const out = orchestra('token', 'create', '--name', name, ...scopes.flatMap((s) => ['--scope', s]), '--db', p.db).trim();
      assert.match(out, /^orc_[A-Za-z0-9_-]{43}$/);
      return out;
    };
    const reader = key('reader', 'orchestra:read');
    const notes = key('notes', 'orchestra:write:notes');
    const ci = key('ci', 'orchestra:read', 'orchestra:search');
    const expiring = orchestra('token', 'create', '--name', 'later', '--scope', 'orchestra:read', '--expires', '30d', '--db', p.db).trim();
    const first = await serve(['--db', p.db, '--project', p.project, '--http', '127.0.0.1:0', '--api-keys']);
    let second;
    try {
      second = await serve(['--db', p.db, '--http', '127.0.0.1:0', '--api-keys']);
      const url = first.url;

      // No credential, a wrong key, a key in the query string: 401 with the scope to ask for.
      // No OAuth: no metadata to point at, and none served.
      assertUnauthorized(await list(url), { metadata: undefined, sent: false });
      assertUnauthorized(await list(url, `orc_${'A'.repeat(43)}`), { metadata: undefined, sent: true });
      assertUnauthorized(await list(url, undefined, { query: `?access_token=${reader}&token=${reader}` }), { metadata: undefined, sent: false });
      assert.notEqual((await fetch(`${first.origin}/.well-known/oauth-protected-resource/mcp`)).status, 200);

      // Read: lists and reads; search and writes are refused with one challenge each.
      assert.equal(uris(await list(url, reader)).length, Object.keys(DOCS).length);
      assertOk(await read(url, reader, 'orchestra://features/FEAT-001'));
      assertForbidden(await search(url, reader), 'orchestra:read orchestra:search');
      assertForbidden(await tool(url, reader, 'create', { uri: 'orchestra://notes/by-reader', content: 'x\n' }), 'orchestra:write');
      assertOk(await read(url, expiring, 'orchestra://notes/plan'));

      // Write on notes: writes a note, not a feature.
      assertOk(await tool(url, notes, 'create', { uri: 'orchestra://notes/by-key', content: '# By a key\n' }));
      assert.equal(readFileSync(join(p.project, 'notes', 'by-key.md'), 'utf8'), '# By a key\n');
      assertForbidden(
        await tool(url, notes, 'create', { uri: 'orchestra://features/FEAT-900', content: 'x\n' }),
        'orchestra:write:features',
      );
      assert.ok(!existsSync(join(p.project, 'features', 'FEAT-900.md')));

      // Revoked: both servers of the database refuse it within 5 s; other keys keep working.
      assert.deepEqual(hitUris(await search(second.url, ci)), hitUris(await search(url, ci)));
      orchestra('token', 'revoke', 'ci', '--db', p.db);
      const revokedAt = Date.now();
      for (const server of [first, second]) {
        await until('the revoked key refused', REVOKED_WITHIN_MS - (Date.now() - revokedAt), async () => {
          const r = await list(server.url, ci);
          assert.ok(r.status === 200 || r.status === 401, `${r.status} ${JSON.stringify(r.body)}`);
          return { done: r.status === 401, detail: r.status };
        });
        assertUnauthorized(await list(server.url, ci), { metadata: undefined, sent: true });
      }
      assertOk(await list(second.url, reader));

      for (const k of [reader, notes, ci, expiring]) {
        for (const log of [first.log(), second.log()]) assert.ok(!log.includes(k.slice(4)), 'a key in the log');
      }
    } catch (e) {
      e.message += `\n--- first server ---\n${first.log()}\n--- second server ---\n${second?.log()}`;
      throw e;
    } finally {
      await first.stop();
      await second?.stop();
      p.cleanup();
    }
  });

  test(`OAuth over HTTP: metadata, challenges, JWT and opaque tokens, rotation, the SDKs' own flow [${backend}]`, async (t) => {
    const as = await startAs();
    const p = newProject(backend, 'auth_oauth');
    const servers = [];
    try {
      const server = await serveOAuth(p, as);
      servers.push(server);
      const { url, publicUrl, origin, metadata } = server;
      // A subtest's failure shows the servers' and the AS's logs.
      const step = (name, options, body = options) =>
        t.test(name, body === options ? {} : options, async () => {
          try {
            await body();
          } catch (e) {
            e.message += servers.map((s, i) => `\n--- server ${i} ---\n${s.log()}`).join('') + `\n--- AS ---\n${as.log()}`;
            throw e;
          }
        });
      const token = (client, scope, resource = publicUrl) => as.token(client, scope, resource);
      const reader = await token('reader', 'orchestra:read');

      await step('Protected Resource Metadata: the configured URL, whatever the request says', async () => {
        const expected = {
          resource: publicUrl,
          authorization_servers: [as.issuer],
          scopes_supported: SCOPES_SUPPORTED,
          bearer_methods_supported: ['header'],
          resource_name: 'orchestra',
        };
        for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
          const res = await fetch(`${origin}${path}`);
          assert.equal(res.status, 200, path);
          assert.match(res.headers.get('content-type'), /^application\/json/);
          const doc = await res.json();
          assert.deepEqual({ ...doc, scopes_supported: [...doc.scopes_supported].sort() }, { ...expected, scopes_supported: [...SCOPES_SUPPORTED].sort() }, path);
          const other = await getWithHost(`${origin}${path}`, {
            host: `localhost:${new URL(origin).port}`,
            'x-forwarded-host': 'evil.example',
            'x-forwarded-proto': 'https',
            forwarded: 'host=evil.example;proto=https',
          });
          assert.equal(other.status, 200, `${path} with another Host: ${other.body}`);
          assert.equal(JSON.parse(other.body).resource, publicUrl, `${path} with another Host`);
        }
      });

      await step('401 without a token or with a bad one: where the metadata is, and the scope to ask for', async () => {
        assertUnauthorized(await list(url), { metadata, sent: false });
        assertUnauthorized(await list(url, 'not-a-token'), { metadata, sent: true });
        assertUnauthorized(await list(url, `${reader}x`), { metadata, sent: true });
      });

      await step('a reader reads; search and writes are refused with a step-up challenge', async () => {
        assert.deepEqual(uris(await list(url, reader)), Object.keys(DOCS).map((f) => `orchestra://${f.replace(/\.md$/, '')}`).sort());
        const read1 = assertOk(await read(url, reader, 'orchestra://features/FEAT-001'));
        assert.equal(read1.contents[0].text, DOCS['features/FEAT-001.md']);
        assertForbidden(await search(url, reader), 'orchestra:read orchestra:search', metadata);
        assertForbidden(await tool(url, reader, 'create', { uri: 'orchestra://notes/by-reader', content: 'x\n' }), 'orchestra:write', metadata);
        assert.ok(!existsSync(join(p.project, 'notes', 'by-reader.md')));
        const searcher = await token('searcher', 'orchestra:read orchestra:search');
        assert.equal(hitUris(await search(url, searcher)).length, 4);
      });

      await step('a writer writes; a per-prefix writer writes only there', async () => {
        const writer = await token('writer', 'orchestra:write');
        assertOk(await tool(url, writer, 'create', { uri: 'orchestra://notes/by-writer', content: '# Written\n' }));
        assert.equal(readFileSync(join(p.project, 'notes', 'by-writer.md'), 'utf8'), '# Written\n');
        const notes = await token('writer', 'orchestra:read orchestra:write:notes');
        assertOk(await tool(url, notes, 'create', { uri: 'orchestra://notes/by-notes', content: 'n\n' }));
        assertForbidden(
          await tool(url, notes, 'create', { uri: 'orchestra://features/FEAT-901', content: 'x\n' }),
          'orchestra:write:features',
          metadata,
        );
        assert.ok(!existsSync(join(p.project, 'features', 'FEAT-901.md')));
      });

      await step('a features-only token: the rest is as if it did not exist', async () => {
        const features = await token('features', 'orchestra:read:features orchestra:search');
        assert.deepEqual(uris(await list(url, features)), ['orchestra://features/FEAT-001', 'orchestra://features/FEAT-002', 'orchestra://features/FEAT-003']);
        assert.deepEqual(hitUris(await search(url, features)), ['orchestra://features/FEAT-001', 'orchestra://features/FEAT-002']);
        const hidden = await read(url, features, 'orchestra://notes/plan');
        const missing = await read(url, features, 'orchestra://notes/no-such-note');
        assert.notEqual(hidden.status, 200);
        assert.deepEqual(asMissing(hidden, 'orchestra://notes/plan'), asMissing(missing, 'orchestra://notes/no-such-note'));
      });

      await step('tokens with a genuine signature but not for this server, or not now', async () => {
        const now = Math.floor(Date.now() / 1000);
        const claims = {
          iss: as.issuer, sub: 'minted', client_id: 'minted', aud: publicUrl, scope: 'orchestra:read',
          iat: now, exp: now + 300, jti: `j-${now}`,
        };
        const header = { typ: 'at+jwt' };
        // The control: minted as the AS mints, it is let in.
        assertOk(await list(url, await as.mint(claims, header)));
        const cases = {
          'expired two minutes ago': { ...claims, iat: now - 600, exp: now - 120 },
          'valid two minutes from now': { ...claims, nbf: now + 120 },
          'for another audience': { ...claims, aud: 'http://127.0.0.1:1/mcp' },
          'for another audience too (an array)': { ...claims, aud: ['http://127.0.0.1:1/mcp', 'https://other.example/mcp'] },
          'from another issuer': { ...claims, iss: 'http://127.0.0.1:1' },
          'with no expiry': (({ exp, ...rest }) => rest)(claims),
        };
        for (const [what, bad] of Object.entries(cases)) {
          const r = await list(url, await as.mint(bad, header));
          assert.equal(r.status, 401, `${what}: ${r.status} ${JSON.stringify(r.body)}`);
          assertUnauthorized(r, { metadata, sent: true });
        }
        const [realHeader] = parts(reader);
        const none = unsigned(reader, { ...realHeader, alg: 'none' });
        assertUnauthorized(await list(url, none), { metadata, sent: true });
        const hs = hs256WithPublicPem(await as.publicJwk(), { ...realHeader, alg: 'HS256' }, parts(reader)[1]);
        assertUnauthorized(await list(url, hs), { metadata, sent: true });
        // The real token with its signature altered.
        const [h, c, s] = reader.split('.');
        assertUnauthorized(await list(url, `${h}.${c}.${s.slice(0, -4)}AAAA`), { metadata, sent: true });
      });

      await step('a token in the query string is no credential', async () => {
        assertUnauthorized(await list(url, undefined, { query: `?access_token=${reader}` }), { metadata, sent: false });
      });

      await step('opaque tokens, by introspection, on a server named http://localhost:PORT/mcp', async () => {
        const secret = join(p.dir, 'introspection-client-secret');
        writeFileSync(secret, 'rs-secret\n');
        const opaque = await serveOAuth(p, as, {
          host: 'localhost',
          extra: [
            '--oauth-introspection-url', `${as.issuer}/token/introspection`,
            '--oauth-client-id', 'orchestra-rs', '--oauth-client-secret-file', secret,
          ],
        });
        servers.push(opaque);
        const meta = opaque.metadata;
        const prm = await (await fetch(`${opaque.origin}/.well-known/oauth-protected-resource/mcp`)).json();
        assert.equal(prm.resource, opaque.publicUrl);
        const readerOpaque = await token('reader', 'orchestra:read', opaque.publicUrl);
        assert.doesNotMatch(readerOpaque, /\./, 'an opaque token, not a JWT');
        assert.equal(uris(await list(opaque.url, readerOpaque)).length >= Object.keys(DOCS).length, true);
        assertForbidden(await search(opaque.url, readerOpaque), 'orchestra:read orchestra:search', meta);
        const searcherOpaque = await token('searcher', 'orchestra:read orchestra:search', opaque.publicUrl);
        assert.equal(hitUris(await search(opaque.url, searcherOpaque)).length, 4);
        // Issued for another resource: introspection says so (aud), and it is refused.
        const elsewhere = await token('reader', 'orchestra:read', `http://localhost:${await freePort()}/mcp`);
        assertUnauthorized(await list(opaque.url, elsewhere), { metadata: meta, sent: true });
        // A JWT for the first server is not for this one; an opaque token not for the first either.
        assertUnauthorized(await list(opaque.url, reader), { metadata: meta, sent: true });
        assertUnauthorized(await list(url, readerOpaque), { metadata, sent: true });
        assertUnauthorized(await list(opaque.url, 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), { metadata: meta, sent: true });
      });

      await step('@modelcontextprotocol/sdk 1.x: ClientCredentialsProvider walks 401 → PRM → AS → token', async () => {
        const authProvider = new ClientCredentialsV1({
          clientId: 'reader', clientSecret: 'reader-secret', scope: 'orchestra:read', expectedIssuer: as.issuer,
        });
        const client = new ClientV1({ name: 'orchestra-interop-auth', version: '1.0.0' });
        try {
          await client.connect(new TransportV1(new URL(publicUrl), { authProvider }), { timeout: TIMEOUT_MS });
          assert.ok(authProvider.tokens()?.access_token, 'the provider fetched a token');
          const { resources } = await client.listResources(undefined, { timeout: TIMEOUT_MS });
          assert.ok(resources.length >= Object.keys(DOCS).length);
          const { contents } = await client.readResource({ uri: 'orchestra://notes/plan' }, { timeout: TIMEOUT_MS });
          assert.equal(contents[0].text, DOCS['notes/plan.md']);
          // Search needs a scope this client may not have: the SDK tries one step-up, then gives up.
          await assert.rejects(client.callTool({ name: 'search', arguments: { query: WORD } }, undefined, { timeout: TIMEOUT_MS }));
        } finally {
          await client.close();
        }
      });

      await step('@modelcontextprotocol/client 2.x, 2026-07-28: a features-only client searches features only', async () => {
        // The 2.x provider asks for the scope the 401 challenge names (orchestra:read), which this
        // client may not have (the AS answers invalid_scope); its own grant is what it must ask for.
        // prepareTokenRequest(scope) is the provider's hook for that; the SDK still walks the rest.
        const authProvider = new (class extends ClientCredentialsV2 {
          prepareTokenRequest() {
            return super.prepareTokenRequest(this.clientMetadata.scope);
          }
        })({
          clientId: 'features', clientSecret: 'features-secret', scope: 'orchestra:read:features orchestra:search',
          expectedIssuer: as.issuer,
        });
        const client = new ClientV2({ name: 'orchestra-interop-auth', version: '2.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
        try {
          await client.connect(new TransportV2(new URL(publicUrl), { authProvider }), { timeout: TIMEOUT_MS });
          const { resources } = await client.listResources(undefined, { timeout: TIMEOUT_MS });
          assert.deepEqual(resources.map((r) => r.uri).sort(), ['orchestra://features/FEAT-001', 'orchestra://features/FEAT-002', 'orchestra://features/FEAT-003']);
          const found = await client.callTool({ name: 'search', arguments: { query: WORD, limit: 50 } }, { timeout: TIMEOUT_MS });
          assert.notEqual(found.isError, true, JSON.stringify(found.content));
          assert.deepEqual(found.structuredContent.hits.map((h) => h.uri).sort(), ['orchestra://features/FEAT-001', 'orchestra://features/FEAT-002']);
          assert.equal(found.structuredContent.total, 2);
          await assert.rejects(client.readResource({ uri: 'orchestra://notes/plan' }, { timeout: TIMEOUT_MS }), (e) =>
            String(e.code ?? e.message).includes('32602') || /not found/i.test(String(e.message)),
          );
        } finally {
          await client.close();
        }
      });

      // Once, on SQLite: the keys are no store's business, and the wait is the server's 30 s
      // between two fetches of the key set.
      await step('key rotation: the AS restarted with a new key; new tokens work, the old ones do not', { skip: backend !== 'sqlite' && 'the store plays no part; once is enough' }, async () => {
        const oldKid = parts(reader)[0].kid;
        assertOk(await list(url, reader));
        await as.restart();
        const fresh = await token('reader', 'orchestra:read');
        assert.notEqual(parts(fresh)[0].kid, oldKid);
        await until('a token signed with the new key accepted', ROTATED_WITHIN_MS, async () => {
          const r = await list(url, fresh);
          return { done: r.status === 200, detail: [r.status, r.body] };
        });
        assertUnauthorized(await list(url, reader), { metadata, sent: true });
      });

      for (const s of servers) {
        for (const secretish of [reader.split('.')[2], 'rs-secret']) assert.ok(!s.log().includes(secretish), 'a credential in the log');
      }
    } catch (e) {
      e.message += servers.map((s, i) => `\n--- server ${i} ---\n${s.log()}`).join('') + `\n--- AS ---\n${as.log()}`;
      throw e;
    } finally {
      for (const s of servers) await s.stop();
      await as.stop();
      p.cleanup();
    }
  });
}
