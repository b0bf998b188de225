// Interop over Streamable HTTP: `orchestra serve --http` driven by the official TypeScript
// client `@modelcontextprotocol/client` 2.x in its 2026-07-28 modes (pinned, and auto, which
// probes server/discover), which send the headers that revision requires (Mcp-Method,
// Mcp-Name, MCP-Protocol-Version) and read errors from HTTP 400/404 bodies.
//
// Each on a SQLite file and on a PostgreSQL database (backends.mjs: the PG* variables of
// pg_virtualenv, as scripts/test.sh runs it).
//
// Run with `node --test tests/interop/`. The binary comes from $ORCHESTRA_BIN
// (default: target/release/orchestra in the repository).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { BACKENDS, newDb } from './backends.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, '..', '..');
const FIXTURE_PROJECT = join(REPO_ROOT, 'fixtures', 'project');
const ORCHESTRA_BIN = resolve(REPO_ROOT, process.env.ORCHESTRA_BIN ?? join('target', 'release', 'orchestra'));
const TIMEOUT_MS = 20_000;

function countMarkdown(dir) {
  let n = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) n += countMarkdown(join(dir, entry.name));
    else if (entry.name.endsWith('.md')) n += 1;
  }
  return n;
}

/** Imports the fixture into a new store and starts `serve --http` on a free loopback port: its URL and a stop function. */
async function startServer(backend, name) {
  assert.ok(existsSync(ORCHESTRA_BIN), `orchestra binary not found at ${ORCHESTRA_BIN} (set ORCHESTRA_BIN)`);
  const dir = mkdtempSync(join(tmpdir(), 'orchestra-ts-http-'));
  let db;
  try {
    db = newDb(dir, name, backend);
    execFileSync(ORCHESTRA_BIN, ['import', FIXTURE_PROJECT, '--db', db], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const child = spawn(ORCHESTRA_BIN, ['serve', '--db', db, '--http', '127.0.0.1:0', '--page-size', '5'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // The server's log, kept whole: a failing test shows it.
  let seen = '';
  child.stderr.on('data', (chunk) => {
    seen += chunk.toString();
  });
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`no address in: ${seen}`)), TIMEOUT_MS);
    child.stderr.on('data', () => {
      // The whole line: stderr may arrive cut anywhere.
      const match = seen.match(/serving MCP on (http:\/\/\S+\/mcp)\n/);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    });
    child.on('exit', (code) => reject(new Error(`serve exited ${code}: ${seen}`)));
  });
  const stop = () => {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: new URL(url), stop, log: () => seen };
}

for (const backend of BACKENDS) {
  for (const [label, mode] of [
    ['pinned 2026-07-28', { pin: '2026-07-28' }],
    ['auto', 'auto'],
  ]) {
    test(`@modelcontextprotocol/client 2.x over Streamable HTTP, ${label} [${backend}]`, async () => {
      const { url, stop, log } = await startServer(backend, `http_${label}`);
      const client = new Client({ name: 'orchestra-interop-http', version: '2.0.0' }, { versionNegotiation: { mode } });
      try {
        await client.connect(new StreamableHTTPClientTransport(url), { timeout: TIMEOUT_MS });
        assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');

        // Every page of the listing (the client follows nextCursor itself).
        const { resources } = await client.listResources(undefined, { timeout: TIMEOUT_MS });
        const expected = ['docs', 'features', 'notes'].reduce((n, p) => n + countMarkdown(join(FIXTURE_PROJECT, p)), 0);
        assert.equal(resources.length, expected);
        for (const resource of resources) {
          assert.ok(resource.icons?.[0]?.src.startsWith('data:image/svg+xml,'), `icon of ${resource.uri}`);
        }

        // resources/read carries Mcp-Name; a non-ASCII id is percent-encoded in the URI.
        const cafe = resources.find((r) => r.uri.startsWith('orchestra://notes/caf'));
        const read = await client.readResource({ uri: cafe.uri }, { timeout: TIMEOUT_MS });
        assert.equal(read.contents[0].uri, cafe.uri);
        assert.match(read.contents[0].text, /Café|Lumière/);

        // tools/call carries Mcp-Name too.
        const { tools } = await client.listTools(undefined, { timeout: TIMEOUT_MS });
        assert.deepEqual(tools.map((t) => t.name), ['search', 'read', 'outline', 'list', 'links', 'history', 'diff']);
        const found = await client.callTool({ name: 'search', arguments: { query: 'offline', limit: 3 } }, { timeout: TIMEOUT_MS });
        assert.notEqual(found.isError, true);
        assert.ok(found.structuredContent.total >= 3, JSON.stringify(found.structuredContent));
        assert.equal(found.structuredContent.hits.length, 3);
        assert.equal(found.content[1].type, 'resource_link');

        // A missing document: HTTP 400 with the JSON-RPC error in the body, which the client reads.
        await assert.rejects(
          client.readResource({ uri: 'orchestra://features/FEAT-999' }, { timeout: TIMEOUT_MS }),
          (e) => String(e.code ?? e.message).includes('32602') || /not found/i.test(String(e.message)),
        );
      } catch (e) {
        e.message += `\n--- server stderr ---\n${log()}`;
        throw e;
      } finally {
        await client.close();
        stop();
      }
    });
  }
}
