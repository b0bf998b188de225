// Interop test: the `links` tool of `orchestra serve`, through the official TypeScript MCP client
// (@modelcontextprotocol/sdk 1.x, handshake era, which validates each structuredContent against
// the tool's outputSchema), on a SQLite file and on a PostgreSQL database (backends.mjs).
//
// A project of five documents written here, with links of each kind (a relative link with a
// fragment, an autolink, an orchestra:// link, a link from the root, a bare id, a link to a
// missing document) and the same spellings in the frontmatter, code spans and fenced code, where
// they do not count. Each document's links and backlinks are asserted as written below, one of
// them paged by `limit: 3` across the boundary between its links and its backlinks.
//
// Run with `node --test tests/interop/`. The binary comes from $ORCHESTRA_BIN.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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

const FILES = {
  'features/FEAT-001.md': [
    '---',
    'title: One',
    'depends: FEAT-002',
    '---',
    '# FEAT-001',
    '',
    'See [the guide](../docs/guide.md#setup) and FEAT-002.',
    'Also <orchestra://notes/sync> and [gone](FEAT-404.md).',
    '`FEAT-003` and `[x](FEAT-003.md)` are code.',
    '',
    '```',
    '[y](/features/FEAT-003.md) FEAT-003',
    '```',
  ],
  'features/FEAT-002.md': ['# Two', '', 'Blocked by [one](/features/FEAT-001.md).'],
  'features/FEAT-003.md': ['# Three', '', 'Nothing links here but code.'],
  'docs/guide.md': ['# Guide', '', 'Start with FEAT-001, then [sync](../notes/sync.md).'],
  'notes/sync.md': ['# Sync', '', 'See [FEAT-002](orchestra://features/FEAT-002).'],
};

const link = (line, target, text, { exists = true, mention = false } = {}) => ({ line, target, exists, mention, text });
const back = (source, line, text, context, mention = false) => ({ source, line, mention, text, context });

const GUIDE_LINE = 'Start with FEAT-001, then [sync](../notes/sync.md).';
const FEAT1_SEE = 'See [the guide](../docs/guide.md#setup) and FEAT-002.';
const FEAT1_ALSO = 'Also <orchestra://notes/sync> and [gone](FEAT-404.md).';

// What the tool should answer for each document: its links, then its backlinks (sources in key
// order: docs, features, notes).
const EXPECTED = {
  'orchestra://features/FEAT-001': {
    links: [
      link(7, 'orchestra://docs/guide', 'the guide'),
      link(7, 'orchestra://features/FEAT-002', 'FEAT-002', { mention: true }),
      link(8, 'orchestra://notes/sync', 'orchestra://notes/sync'),
      link(8, 'orchestra://features/FEAT-404', 'gone', { exists: false }),
    ],
    backlinks: [
      back('orchestra://docs/guide', 3, 'FEAT-001', GUIDE_LINE, true),
      back('orchestra://features/FEAT-002', 3, 'one', 'Blocked by [one](/features/FEAT-001.md).'),
    ],
  },
  'orchestra://features/FEAT-002': {
    links: [link(3, 'orchestra://features/FEAT-001', 'one')],
    backlinks: [
      back('orchestra://features/FEAT-001', 7, 'FEAT-002', FEAT1_SEE, true),
      back('orchestra://notes/sync', 3, 'FEAT-002', 'See [FEAT-002](orchestra://features/FEAT-002).'),
    ],
  },
  'orchestra://features/FEAT-003': { links: [], backlinks: [] },
  'orchestra://docs/guide': {
    links: [
      link(3, 'orchestra://features/FEAT-001', 'FEAT-001', { mention: true }),
      link(3, 'orchestra://notes/sync', 'sync'),
    ],
    backlinks: [back('orchestra://features/FEAT-001', 7, 'the guide', FEAT1_SEE)],
  },
  'orchestra://notes/sync': {
    links: [link(3, 'orchestra://features/FEAT-002', 'FEAT-002')],
    backlinks: [
      back('orchestra://docs/guide', 3, 'sync', GUIDE_LINE),
      back('orchestra://features/FEAT-001', 8, 'orchestra://notes/sync', FEAT1_ALSO),
    ],
  },
};

for (const backend of BACKENDS) {
  test(`links tool, @modelcontextprotocol/sdk 1.x [${backend}]`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orchestra-ts-links-'));
    for (const [path, lines] of Object.entries(FILES)) {
      mkdirSync(dirname(join(dir, 'project', path)), { recursive: true });
      writeFileSync(join(dir, 'project', path), lines.join('\n') + '\n');
    }
    const db = newDb(dir, 'links', backend);
    execFileSync(ORCHESTRA_BIN, ['import', join(dir, 'project'), '--db', db], { stdio: 'pipe' });
    const client = new Client({ name: 'orchestra-interop-links', version: '1.0.0' });
    try {
      await client.connect(new StdioClientTransport({ command: ORCHESTRA_BIN, args: ['serve', '--db', db], stderr: 'inherit' }), TIMEOUT);
      const { tools } = await client.listTools(undefined, TIMEOUT);
      const tool = tools.find((t) => t.name === 'links');
      assert.ok(tool?.outputSchema && tool.annotations?.readOnlyHint === true, JSON.stringify(tool));
      const call = (args) => client.callTool({ name: 'links', arguments: args }, undefined, TIMEOUT);

      for (const [uri, expected] of Object.entries(EXPECTED)) {
        const result = await call({ uri });
        assert.ok(!result.isError, JSON.stringify(result.content));
        assert.deepEqual(result.structuredContent, { uri, ...expected }, uri);
      }

      // Three per page: the second page holds FEAT-001's last link and its two backlinks.
      const uri = 'orchestra://features/FEAT-001';
      const first = (await call({ uri, limit: 3 })).structuredContent;
      assert.deepEqual(first.links, EXPECTED[uri].links.slice(0, 3));
      assert.deepEqual(first.backlinks, []);
      assert.equal(typeof first.nextCursor, 'string');
      const second = (await call({ uri, limit: 3, cursor: first.nextCursor })).structuredContent;
      assert.deepEqual(second, { uri, links: EXPECTED[uri].links.slice(3), backlinks: EXPECTED[uri].backlinks });

      const incoming = (await call({ uri, direction: 'in' })).structuredContent;
      assert.deepEqual(incoming, { uri, links: [], backlinks: EXPECTED[uri].backlinks });
      const outgoing = (await call({ uri, direction: 'out', limit: 2 })).structuredContent;
      assert.deepEqual(outgoing.links, EXPECTED[uri].links.slice(0, 2));
      assert.deepEqual(outgoing.backlinks, []);

      const missing = await call({ uri: 'orchestra://features/FEAT-404' });
      assert.ok(missing.isError);
      assert.match(missing.content[0].text, /no such document: orchestra:\/\/features\/FEAT-404/);
      const bad = await call({ uri, cursor: 'nope' });
      assert.ok(bad.isError);
      assert.match(bad.content[0].text, /invalid cursor/);
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
