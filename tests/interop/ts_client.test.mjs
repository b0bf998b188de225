// Interop tests: `orchestra serve` driven by the official TypeScript MCP clients over stdio.
//
// - @modelcontextprotocol/sdk 1.x: the handshake era (initialize).
// - @modelcontextprotocol/client 2.x: legacy, auto (server/discover probe on a sibling
//   process, then the stateless envelope) and pinned 2026-07-28.
//
// Each on a SQLite file and on a PostgreSQL database (backends.mjs: the PG* variables of
// pg_virtualenv, as scripts/test.sh runs it).
//
// Run with `node --test tests/interop/`. The binary comes from $ORCHESTRA_BIN
// (default: target/release/orchestra in the repository).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioClientTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2, ResourceNotFoundError } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientTransportV2 } from '@modelcontextprotocol/client/stdio';

import { BACKENDS, isPostgres, newDb } from './backends.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, '..', '..');
const FIXTURE_PROJECT = join(REPO_ROOT, 'fixtures', 'project');
const ORCHESTRA_BIN = resolve(REPO_ROOT, process.env.ORCHESTRA_BIN ?? join('target', 'release', 'orchestra'));
const PREFIXES = ['docs', 'features', 'notes']; // listing order of the prefixes
const PAGE_SIZE = 5; // small pages so the 17-document fixture needs several cursors
const REQUEST_TIMEOUT_MS = 20_000;

/** RFC 3986: percent-encode everything but unreserved characters (encodeURIComponent leaves !'()* too). */
function encodeSegment(segment) {
  return encodeURIComponent(segment).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

function docUri(prefix, id) {
  return `orchestra://${prefix}/` + id.split('/').map(encodeSegment).join('/');
}

function walkMarkdown(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...walkMarkdown(path));
    else if (entry.isFile() && entry.name.endsWith('.md')) out.push(path);
  }
  return out;
}

/** The documents of fixtures/project in listing order: (prefix, id), ids compared as UTF-8 bytes. */
function fixtureDocuments() {
  const docs = [];
  for (const prefix of PREFIXES) {
    for (const path of walkMarkdown(join(FIXTURE_PROJECT, prefix))) {
      const id = relative(join(FIXTURE_PROJECT, prefix), path).split(sep).join('/').replace(/\.md$/, '');
      docs.push({ prefix, id, path, uri: docUri(prefix, id) });
    }
  }
  docs.sort(
    (a, b) => PREFIXES.indexOf(a.prefix) - PREFIXES.indexOf(b.prefix) || Buffer.compare(Buffer.from(a.id), Buffer.from(b.id)),
  );
  return docs;
}

function importFixture(backend, name) {
  assert.ok(existsSync(ORCHESTRA_BIN), `orchestra binary not found at ${ORCHESTRA_BIN} (set ORCHESTRA_BIN)`);
  const dir = mkdtempSync(join(tmpdir(), 'orchestra-ts-'));
  try {
    const db = newDb(dir, name, backend);
    execFileSync(ORCHESTRA_BIN, ['import', FIXTURE_PROJECT, '--db', db], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    assert.ok(isPostgres(db) || existsSync(db), 'orchestra import exited 0 but created no database');
    return { dir, db };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

function serverParams(db) {
  return { command: ORCHESTRA_BIN, args: ['serve', '--db', db, '--page-size', String(PAGE_SIZE)], stderr: 'inherit' };
}

/**
 * Walk the listing page by page following nextCursor (sdk 1.x: every listResources call is one page).
 * The 2.x client's no-cursor call already walks every page itself and returns the aggregate
 * (`aggregates: true`); each further page it fetches is one request with the server's cursor.
 */
async function listAll(client, { aggregates = false } = {}) {
  if (aggregates) {
    const result = await client.listResources(undefined, { timeout: REQUEST_TIMEOUT_MS });
    assert.equal(result.nextCursor, undefined);
    return { resources: result.resources, pages: undefined };
  }
  const resources = [];
  const cursors = new Set();
  let cursor;
  let pages = 0;
  do {
    const result = await client.listResources(cursor === undefined ? {} : { cursor }, { timeout: REQUEST_TIMEOUT_MS });
    pages += 1;
    resources.push(...result.resources);
    cursor = result.nextCursor;
    if (cursor !== undefined) {
      assert.ok(!cursors.has(cursor), `cursor ${cursor} returned twice: the listing would never end`);
      cursors.add(cursor);
    }
    assert.ok(pages < 100, 'more than 100 pages for 17 documents');
  } while (cursor !== undefined);
  return { resources, pages };
}

/** The checks shared by every client and mode. */
/**
 * Record every JSON-RPC error response the client receives, as sent by the server (the 2.x client
 * rewrites a `-32002` carrying `data.uri` into a ResourceNotFoundError with code `-32602`, so the
 * wire code is only visible below it).
 */
function tapErrors(transport) {
  const errors = [];
  const inner = transport.onmessage;
  assert.equal(typeof inner, 'function', 'transport has no onmessage handler after connect');
  transport.onmessage = (message, ...rest) => {
    if (message && typeof message === 'object' && 'error' in message) errors.push(message);
    return inner.call(transport, message, ...rest);
  };
  return errors;
}

async function exerciseFixture(client, { notFoundCode, isProtocolError, aggregates = false, wireErrors }) {
  const expected = fixtureDocuments();
  assert.ok(expected.length >= 14, 'fixtures/project has fewer than 14 documents');

  // 1. the whole listing, following nextCursor
  const { resources, pages } = await listAll(client, { aggregates });
  if (!aggregates) {
    assert.ok(pages >= Math.ceil(expected.length / PAGE_SIZE), `only ${pages} page(s) with --page-size ${PAGE_SIZE}`);
  }
  assert.deepEqual(
    resources.map((r) => r.uri),
    expected.map((d) => d.uri),
  );
  assert.deepEqual(
    resources.map((r) => r.name),
    expected.map((d) => d.id),
  );
  for (const r of resources) assert.equal(r.mimeType, 'text/markdown', `${r.uri}: mimeType`);
  const feat1 = resources.find((r) => r.uri === 'orchestra://features/FEAT-001');
  assert.equal(feat1.title, 'Offline work orders');
  const cafe = resources.find((r) => r.uri === 'orchestra://notes/caf%C3%A9%20notes');
  assert.ok(cafe, 'café notes not listed under orchestra://notes/caf%C3%A9%20notes');
  assert.equal(cafe.name, 'café notes');

  // 2. two documents, byte-exact
  for (const uri of ['orchestra://features/FEAT-001', 'orchestra://notes/caf%C3%A9%20notes']) {
    const doc = expected.find((d) => d.uri === uri);
    const result = await client.readResource({ uri }, { timeout: REQUEST_TIMEOUT_MS });
    assert.equal(result.contents.length, 1);
    const [content] = result.contents;
    assert.equal(content.uri, uri);
    assert.equal(content.mimeType, 'text/markdown');
    assert.equal(typeof content.text, 'string', `${uri}: not returned as text`);
    assert.ok(Buffer.from(content.text, 'utf8').equals(readFileSync(doc.path)), `${uri}: bytes differ from ${doc.path}`);
  }

  // 3. a missing document
  const missing = 'orchestra://features/FEAT-999';
  await assert.rejects(
    client.readResource({ uri: missing }, { timeout: REQUEST_TIMEOUT_MS }),
    (err) => {
      assert.ok(isProtocolError(err), `expected a JSON-RPC error, got ${err}`);
      assert.equal(err.code, notFoundCode, `error code for ${missing}: ${err.code} (${err.message})`);
      assert.deepEqual(err.data, { uri: missing });
      return true;
    },
  );

  if (wireErrors) {
    assert.equal(wireErrors.length, 1, `expected exactly one error response, got ${JSON.stringify(wireErrors)}`);
    assert.equal(wireErrors[0].error.code, wireErrors.expectedCode, `wire error: ${JSON.stringify(wireErrors[0])}`);
    assert.deepEqual(wireErrors[0].error.data, { uri: missing });
  }

  // 4. the session survives the error
  const again = await client.readResource({ uri: expected[0].uri }, { timeout: REQUEST_TIMEOUT_MS });
  assert.equal(again.contents.length, 1);
}

for (const backend of BACKENDS) {
  test(`@modelcontextprotocol/sdk 1.x client, handshake era [${backend}]`, async () => {
    const { dir, db } = importFixture(backend, 'client_v1');
    const client = new ClientV1({ name: 'orchestra-interop-v1', version: '1.0.0' });
    try {
      await client.connect(new StdioClientTransportV1(serverParams(db)), { timeout: REQUEST_TIMEOUT_MS });
      assert.ok(client.getServerCapabilities()?.resources, 'no resources capability in the initialize result');
      await exerciseFixture(client, { notFoundCode: -32002, isProtocolError: (e) => e instanceof McpError });
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

// The 2.x client reports a missing resource as ResourceNotFoundError (code -32602) in every era;
// the code the server actually sent is checked on the wire: -32002 (handshake), -32602 (2026-07-28).
for (const backend of BACKENDS) {
  for (const [label, mode, era, wireCode] of [
    ['legacy', 'legacy', 'handshake', -32002],
    ['auto', 'auto', '2026-07-28', -32602],
    ['pinned 2026-07-28', { pin: '2026-07-28' }, '2026-07-28', -32602],
  ]) {
    test(`@modelcontextprotocol/client 2.x client, ${label} [${backend}]`, async () => {
      const { dir, db } = importFixture(backend, `client_v2_${label}`);
      const client = new ClientV2({ name: 'orchestra-interop-v2', version: '2.0.0' }, { versionNegotiation: { mode } });
      try {
        const transport = new StdioClientTransportV2(serverParams(db));
        await client.connect(transport, { timeout: REQUEST_TIMEOUT_MS });
        const wireErrors = tapErrors(transport);
        wireErrors.expectedCode = wireCode;
        const negotiated = client.getNegotiatedProtocolVersion();
        if (era === 'handshake') assert.notEqual(negotiated, '2026-07-28');
        else assert.equal(negotiated, era, `negotiated protocol version ${negotiated}`);
        await exerciseFixture(client, {
          notFoundCode: -32602,
          isProtocolError: (e) => ResourceNotFoundError.isInstance(e),
          wireErrors,
          aggregates: true,
        });
      } finally {
        await client.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
}
