// Interop test: the write tools of `orchestra serve`, through the official TypeScript MCP client
// (@modelcontextprotocol/sdk 1.x, handshake era, which validates each structuredContent against
// the tool's outputSchema), on a SQLite file and on a PostgreSQL database (backends.mjs).
//
// Once: `create` a document with a BOM, CRLF lines and no final newline; `edit` it with the version
// `resources/read` gave (a replace whose new text has a bare \n, and an append); read it back. The
// file's bytes and the text `resources/read` returns equal the bytes written out below; a stale
// `ifVersion` writes nothing; `orchestra import` then finds nothing to do.
//
// Run with `node --test tests/interop/`. The binary comes from $ORCHESTRA_BIN.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BACKENDS, newDb } from './backends.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, '..', '..');
const ORCHESTRA_BIN = resolve(REPO_ROOT, process.env.ORCHESTRA_BIN ?? join('target', 'release', 'orchestra'));
const TIMEOUT = { timeout: 20_000 };

const URI = 'orchestra://notes/ts/sync';
const CREATED = '\ufeff---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\nold plan';
// The replace's new text has a bare \n, written as \r\n; the final newline stays absent.
const EDITED = '\ufeff---\r\ntitle: Sync\r\nstatus: open # triage\r\n---\r\n# Sync\r\n\r\nnew plan\r\nsecond\r\nmore';

for (const backend of BACKENDS) {
  test(`write tools, @modelcontextprotocol/sdk 1.x [${backend}]`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orchestra-ts-write-'));
    const project = join(dir, 'project');
    mkdirSync(join(project, 'notes'), { recursive: true });
    writeFileSync(join(project, 'notes', 'other.md'), '# Other\n');
    const db = newDb(dir, 'write', backend);
    execFileSync(ORCHESTRA_BIN, ['import', project, '--db', db], { stdio: 'pipe' });
    const file = join(project, 'notes', 'ts', 'sync.md');
    const client = new Client({ name: 'orchestra-interop-write', version: '1.0.0' });
    try {
      await client.connect(
        new StdioClientTransport({ command: ORCHESTRA_BIN, args: ['serve', '--db', db, '--project', project], stderr: 'inherit' }),
        TIMEOUT,
      );
      const { tools } = await client.listTools(undefined, TIMEOUT);
      const edit = tools.find((t) => t.name === 'edit');
      assert.ok(edit?.outputSchema && edit.annotations?.destructiveHint === true, JSON.stringify(edit));
      const call = (name, args) => client.callTool({ name, arguments: args }, undefined, TIMEOUT);
      const read = async () => {
        const [content] = (await client.readResource({ uri: URI }, TIMEOUT)).contents;
        return { text: content.text, version: content._meta['orchestra/version'], hash: content._meta['orchestra/hash'] };
      };

      const created = await call('create', { uri: URI, content: CREATED });
      assert.ok(!created.isError, JSON.stringify(created.content));
      assert.equal(created.structuredContent.uri, URI);
      assert.deepEqual(readFileSync(file), Buffer.from(CREATED, 'utf8'));
      const before = await read();
      assert.equal(before.text, CREATED);
      assert.equal(before.version, created.structuredContent.version);

      const edited = await call('edit', {
        uri: URI,
        edits: [{ replace: 'old plan', with: 'new plan\nsecond' }, { append: 'more' }],
        ifVersion: before.version,
      });
      assert.ok(!edited.isError, JSON.stringify(edited.content));
      const sc = edited.structuredContent;
      assert.equal(sc.version, before.version + 1);
      assert.equal(sc.size, Buffer.byteLength(EDITED, 'utf8'));
      assert.ok(edited.content.some((c) => c.type === 'resource_link' && c.uri === URI), JSON.stringify(edited.content));
      assert.deepEqual(readFileSync(file), Buffer.from(EDITED, 'utf8'));
      assert.deepEqual(await read(), { text: EDITED, version: sc.version, hash: sc.hash });

      // The version read before the edit is stale now: nothing is written.
      const stale = await call('edit', { uri: URI, edits: [{ append: 'lost' }], ifVersion: before.version });
      assert.ok(stale.isError);
      assert.match(stale.content[0].text, new RegExp(`changed since version ${before.version}: now version ${sc.version}`));
      assert.deepEqual(readFileSync(file), Buffer.from(EDITED, 'utf8'));
    } finally {
      await client.close();
    }
    try {
      const report = JSON.parse(execFileSync(ORCHESTRA_BIN, ['import', project, '--db', db, '--json'], { stdio: 'pipe' }));
      assert.deepEqual([report.new, report.updated, report.removed], [0, 0, 0], JSON.stringify(report));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
