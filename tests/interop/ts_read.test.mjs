// Interop tests: the `read`, `outline` and `list` tools of `orchestra serve`, through the official
// TypeScript MCP client (@modelcontextprotocol/sdk 1.x, handshake era, which validates each
// structuredContent against the tool's outputSchema), on a SQLite file and on a PostgreSQL
// database (backends.mjs).
//
// A generated document of about 600 KB (headings, CRLF lines, a line of 50,000 characters,
// multi-byte characters) read part by part under `maxChars: 8000` (Codex's limit) reassembles
// byte-exact; its outline names lines that hold its headings, and each section read whole equals
// the file's lines from its heading to the next heading of its level or higher; `list` pages
// through every document in key order.
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
const CAP = 8000;

function document() {
  const out = ['---\ntitle: Big\n---\n'];
  for (let part = 1; part <= 300; part++) {
    out.push(`# Part ${part}\n\n`);
    out.push(`## Notes ${part}\r\n\r\n`);
    for (let line = 0; line < 12; line++) out.push(`line ${line} of part ${part}: größe naïve 東京 🎻\n`);
    if (part === 7) out.push('ß'.repeat(25_000) + 'y'.repeat(25_000) + '\n');
    out.push(`### Detail ${part}\n\ntext\n\n`);
  }
  out.push('end without newline');
  return out.join('');
}

function textBlocks(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text);
}

async function readAll(call, args) {
  let whole = '';
  let parts = 0;
  for (let next = { ...args }; ; parts++) {
    const result = await call('read', next);
    assert.ok(!result.isError, JSON.stringify(result.content));
    const sc = result.structuredContent;
    const [text, notice] = textBlocks(result);
    assert.ok([...text].length <= (args.maxChars ?? 40_000), `part of ${[...text].length} characters`);
    whole += text;
    if (!sc.truncated) return { whole, parts: parts + 1 };
    assert.match(notice, /call read with/);
    next = { ...args, offset: sc.nextOffset, column: sc.nextColumn ?? 0 };
  }
}

for (const backend of BACKENDS) {
  test(`read, outline and list tools, @modelcontextprotocol/sdk 1.x [${backend}]`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'orchestra-ts-read-'));
    const text = document();
    mkdirSync(join(dir, 'project', 'docs'), { recursive: true });
    mkdirSync(join(dir, 'project', 'notes'), { recursive: true });
    writeFileSync(join(dir, 'project', 'docs', 'big.md'), text);
    for (let n = 1; n <= 9; n++) writeFileSync(join(dir, 'project', 'notes', `n${n}.md`), `# Note ${n}\n`);
    const db = newDb(dir, 'read', backend);
    execFileSync(ORCHESTRA_BIN, ['import', join(dir, 'project'), '--db', db], { stdio: 'pipe' });
    const client = new Client({ name: 'orchestra-interop-read', version: '1.0.0' });
    try {
      await client.connect(new StdioClientTransport({ command: ORCHESTRA_BIN, args: ['serve', '--db', db], stderr: 'inherit' }), TIMEOUT);
      const { tools } = await client.listTools(undefined, TIMEOUT);
      for (const name of ['read', 'outline', 'list']) {
        const tool = tools.find((t) => t.name === name);
        assert.ok(tool?.outputSchema && tool.annotations?.readOnlyHint === true, name);
      }
      const call = (name, args) => client.callTool({ name, arguments: args }, undefined, TIMEOUT);
      const uri = 'orchestra://docs/big';

      const { whole, parts } = await readAll(call, { uri, maxChars: CAP });
      assert.equal(whole, text);
      assert.ok(parts > text.length / CAP, `${parts} parts`);

      const lines = text.split(/(?<=\n)/);
      const outline = (await call('outline', { uri })).structuredContent;
      assert.equal(outline.totalLines, lines.length);
      assert.equal(outline.headings.length, 900);
      for (const h of outline.headings) {
        assert.ok(lines[h.line - 1].replace(/\r?\n$/, '') === `${'#'.repeat(h.level)} ${h.text}`, JSON.stringify(h));
      }
      for (const h of [outline.headings[0], outline.headings[19], outline.headings[899]]) {
        const { whole: section } = await readAll(call, { uri, section: h.path });
        assert.equal(section, lines.slice(h.line - 1, h.endLine).join(''), h.path);
      }

      const listed = [];
      for (let cursor; ; ) {
        const page = (await call('list', cursor ? { limit: 4, cursor } : { limit: 4 })).structuredContent;
        listed.push(...page.documents.map((d) => d.uri));
        cursor = page.nextCursor;
        if (!cursor) break;
      }
      assert.deepEqual(listed, [uri, ...Array.from({ length: 9 }, (_, i) => `orchestra://notes/n${i + 1}`)]);
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
