// Interop tests: the `search` tool of `orchestra serve`, called through the official TypeScript
// MCP clients over stdio, against a small generated backlog with planted words.
//
// - @modelcontextprotocol/sdk 1.x: the handshake era (initialize), `callTool` page by page.
// - @modelcontextprotocol/client 2.x pinned to 2026-07-28: the same searches, stateless.
//
// The expected hits come from a brute-force reference in this file: the words of what orchestra
// indexes (key `prefix/id`, title, frontmatter description, body after the frontmatter; the body
// of UTF-8 documents only), as FTS5's `unicode61 remove_diacritics 2` tokenizer splits them:
// runs of letters and digits, case and accents folded.
//
// Each on a SQLite file and on a PostgreSQL database (backends.mjs: the PG* variables of
// pg_virtualenv, as scripts/test.sh runs it): the same hits, pages and titles; PostgreSQL ranks
// by ts_rank, so the scores are only checked never to rise.
//
// Run with `node --test tests/interop/`. The binary comes from $ORCHESTRA_BIN
// (default: target/release/orchestra in the repository).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioClientTransportV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioClientTransportV2 } from '@modelcontextprotocol/client/stdio';

import { BACKENDS, newDb } from './backends.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, '..', '..');
const ORCHESTRA_BIN = resolve(REPO_ROOT, process.env.ORCHESTRA_BIN ?? join('target', 'release', 'orchestra'));
const REQUEST_TIMEOUT_MS = 20_000;
const LIMIT = 4; // hits per page: every planted word needs several pages
const MAX_SNIPPET = 220;

/** RFC 3986: percent-encode everything but unreserved characters (encodeURIComponent leaves !'()* too). */
function encodeSegment(segment) {
  return encodeURIComponent(segment).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}

function docUri(prefix, id) {
  return `orchestra://${prefix}/` + id.split('/').map(encodeSegment).join('/');
}

// ---------------------------------------------------------------------------------------
// the reference

function fold(word) {
  return word.toLowerCase().normalize('NFD').replace(/\p{M}/gu, '').normalize('NFC');
}

/** unicode61: runs of L*, N* and Co characters are words; everything else separates them. */
function words(text) {
  return (text.match(/[\p{L}\p{N}\p{Co}]+/gu) ?? []).map(fold);
}

/** The words of `phrase` in sequence inside one field. */
function phraseIn(field, phrase) {
  for (let i = 0; i + phrase.length <= field.length; i++) {
    if (phrase.every((w, j) => field[i + j] === w)) return true;
  }
  return false;
}

function reference(docs, query) {
  const phrase = words(query);
  assert.ok(phrase.length > 0);
  return new Set(
    docs
      .filter((d) => [d.key, d.title, d.description ?? '', d.text ? d.body : ''].some((f) => phraseIn(words(f), phrase)))
      .map((d) => d.uri),
  );
}

// ---------------------------------------------------------------------------------------
// the backlog

/** mulberry32: a small seeded generator, so the backlog is the same on every run. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FILLER = 'sync offline queue photo dispatch signature depot valve retry schema ledger harbor copper'.split(' ');
const PLANTED = [
  { query: 'quillfeather', spellings: ['quillfeather', 'Quillfeather', 'QUILLFEATHER', '(quillfeather)'], decoys: ['quillfeathers', 'quill-feather'] },
  { query: 'zurichsee', spellings: ['Zürichsee', 'ZÜRICHSEE', 'zurichsee.'], decoys: ['Zuerichsee', 'Zürichseen'] },
];

function generateBacklog(root) {
  const random = rng(20261201);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const paragraph = () => Array.from({ length: 6 + Math.floor(random() * 30) }, () => pick(FILLER)).join(' ') + '.';
  const ids = [
    ...Array.from({ length: 30 }, (_, i) => ['features', `FEAT-${String(i + 1).padStart(3, '0')}`]),
    ...Array.from({ length: 12 }, (_, i) => ['notes', `note-${String(i + 1).padStart(2, '0')}`]),
    ...Array.from({ length: 8 }, (_, i) => ['notes', `meetings/2026/${String(i + 1).padStart(2, '0')}`]),
    ...Array.from({ length: 15 }, (_, i) => ['docs', `adr/${String(i + 1).padStart(4, '0')}`]),
    ['notes', 'trips/quillfeather-day'], // the word in the id only
  ];
  const docs = ids.map(([prefix, id], n) => {
    const frontmatter = n % 5 !== 4; // most documents have frontmatter
    return {
      prefix,
      id,
      key: `${prefix}/${id}`,
      uri: docUri(prefix, id),
      title: frontmatter ? `${prefix} ${id} ${pick(FILLER)}` : id,
      description: frontmatter && random() < 0.5 ? `About ${pick(FILLER)}` : undefined,
      owner: undefined,
      frontmatter,
      paragraphs: Array.from({ length: 1 + Math.floor(random() * 3) }, paragraph),
      text: true,
    };
  });
  const insert = (doc, text) => {
    const i = Math.floor(random() * doc.paragraphs.length);
    const ws = doc.paragraphs[i].split(' ');
    ws.splice(Math.floor(random() * (ws.length + 1)), 0, text);
    doc.paragraphs[i] = ws.join(' ');
  };
  const candidates = docs.filter((d) => d.id !== 'trips/quillfeather-day');
  for (const word of PLANTED) {
    for (let k = 0; k < 14; k++) {
      const doc = pick(candidates);
      const spelling = pick(word.spellings);
      const place = pick(['body', 'body', 'title', 'description', 'hidden']);
      if (place === 'title' && doc.frontmatter) doc.title += ` ${spelling}`;
      else if (place === 'description' && doc.frontmatter) doc.description = `${doc.description ?? 'Described'} ${spelling}`;
      else if (place === 'hidden' && doc.frontmatter) doc.owner = word.query; // not indexed
      else insert(doc, spelling);
    }
    for (const decoy of word.decoys) for (let k = 0; k < 3; k++) insert(pick(candidates), decoy);
  }
  for (const doc of docs) {
    let fm = '';
    if (doc.frontmatter) {
      fm = `---\ntitle: ${JSON.stringify(doc.title)}\n`;
      if (doc.description !== undefined) fm += `description: ${JSON.stringify(doc.description)}\n`;
      if (doc.owner !== undefined) fm += `owner: ${doc.owner}\n`;
      fm += 'status: open\ntags: [sync]\n---\n\n';
    }
    doc.body = doc.paragraphs.join('\n\n') + '\n';
    doc.bytes = Buffer.from(fm + doc.body, 'utf8');
  }
  // Not UTF-8 (Latin-1): the planted words in its bytes are not indexed, its key and title (the id) are.
  docs.push({
    prefix: 'notes',
    id: 'legacy/export',
    key: 'notes/legacy/export',
    uri: docUri('notes', 'legacy/export'),
    title: 'legacy/export',
    text: false,
    bytes: Buffer.from('# quillfeather Z\xfcrichsee caf\xe9\n', 'latin1'),
  });
  for (const doc of docs) {
    const path = join(root, doc.prefix, doc.id + '.md');
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, doc.bytes);
  }
  return docs;
}

function importBacklog(backend, name) {
  assert.ok(existsSync(ORCHESTRA_BIN), `orchestra binary not found at ${ORCHESTRA_BIN} (set ORCHESTRA_BIN)`);
  const dir = mkdtempSync(join(tmpdir(), 'orchestra-ts-search-'));
  try {
    const docs = generateBacklog(join(dir, 'project'));
    const db = newDb(dir, name, backend);
    execFileSync(ORCHESTRA_BIN, ['import', join(dir, 'project'), '--db', db], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    for (const word of PLANTED) {
      const size = reference(docs, word.query).size;
      assert.ok(size > 2 * LIMIT && size < docs.length, `generator: ${word.query} is in ${size} documents`);
    }
    return { dir, db, docs };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
}

function serverParams(db) {
  return { command: ORCHESTRA_BIN, args: ['serve', '--db', db], stderr: 'inherit' };
}

// ---------------------------------------------------------------------------------------
// the checks

/** Every page of one search, following nextCursor; `call(args)` is one tools/call. */
async function searchAll(call, query) {
  const pages = [];
  const cursors = new Set();
  let cursor;
  do {
    const result = await call({ query, limit: LIMIT, ...(cursor === undefined ? {} : { cursor }) });
    assert.notEqual(result.isError, true, `${query}: isError on page ${pages.length + 1}: ${JSON.stringify(result.content)}`);
    assert.equal(typeof result.structuredContent, 'object', `${query}: no structuredContent`);
    pages.push(result);
    cursor = result.structuredContent.nextCursor;
    if (cursor !== undefined) {
      assert.ok(!cursors.has(cursor), `${query}: cursor ${cursor} returned twice`);
      cursors.add(cursor);
    }
    assert.ok(pages.length < 100, `${query}: more than 100 pages`);
  } while (cursor !== undefined);
  return pages;
}

function checkPages(docs, query, pages) {
  const expected = reference(docs, query);
  const byUri = new Map(docs.map((d) => [d.uri, d]));
  const uris = [];
  let lastScore = Infinity;
  for (const [n, page] of pages.entries()) {
    const { hits, total } = page.structuredContent;
    assert.equal(total, expected.size, `${query}: total on page ${n + 1}`);
    if (n < pages.length - 1) assert.equal(hits.length, LIMIT, `${query}: page ${n + 1} is not full`);
    assert.equal(page.content[0].type, 'text');
    const links = page.content.slice(1);
    assert.deepEqual(
      links.map((b) => [b.type, b.uri]),
      hits.map((h) => ['resource_link', h.uri]),
      `${query}: page ${n + 1}: one resource_link per hit, in order`,
    );
    for (const hit of hits) {
      uris.push(hit.uri);
      assert.ok(hit.score <= lastScore, `${query}: score rises at ${hit.uri}`);
      lastScore = hit.score;
      assert.ok(hit.snippet.length <= MAX_SNIPPET, `${query}: ${hit.uri}: snippet of ${hit.snippet.length} chars`);
      const doc = byUri.get(hit.uri);
      if (doc) assert.equal(hit.title, doc.title, `${query}: ${hit.uri}: title`);
    }
  }
  assert.equal(new Set(uris).size, uris.length, `${query}: a hit repeated across pages`);
  assert.deepEqual(new Set(uris), expected, `${query}: hits differ from the documents that hold the word`);
  assert.equal(pages.length, Math.max(1, Math.ceil(expected.size / LIMIT)), `${query}: number of pages`);
  const binary = docs.find((d) => !d.text);
  assert.ok(!uris.includes(binary.uri), `${query}: found the non-UTF-8 document by its bytes`);
}

// ---------------------------------------------------------------------------------------
// the tests

for (const backend of BACKENDS) {
  test(`search tool, @modelcontextprotocol/sdk 1.x client, handshake era [${backend}]`, async () => {
    const { dir, db, docs } = importBacklog(backend, 'search_v1');
    const client = new ClientV1({ name: 'orchestra-interop-search-v1', version: '1.0.0' });
    try {
      await client.connect(new StdioClientTransportV1(serverParams(db)), { timeout: REQUEST_TIMEOUT_MS });
      assert.ok(client.getServerCapabilities()?.tools, 'no tools capability in the initialize result');
      const { tools } = await client.listTools(undefined, { timeout: REQUEST_TIMEOUT_MS });
      assert.deepEqual(tools.map((t) => t.name), ['search', 'read', 'outline', 'list', 'links', 'history', 'diff']);
      assert.ok(tools[0].outputSchema, 'the search tool has no outputSchema');
      // listTools primed the client's outputSchema validation: callTool checks structuredContent.
      const call = (args) => client.callTool({ name: 'search', arguments: args }, undefined, { timeout: REQUEST_TIMEOUT_MS });
      for (const { query } of PLANTED) checkPages(docs, query, await searchAll(call, query));
      checkPages(docs, 'Zürichsee', await searchAll(call, 'Zürichsee'));
      await assert.rejects(
        client.callTool({ name: 'find', arguments: { query: 'x' } }, undefined, { timeout: REQUEST_TIMEOUT_MS }),
        (err) => err instanceof McpError && err.code === -32602,
      );
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`search tool, @modelcontextprotocol/client 2.x pinned 2026-07-28 [${backend}]`, async () => {
    const { dir, db, docs } = importBacklog(backend, 'search_v2');
    const client = new ClientV2(
      { name: 'orchestra-interop-search-v2', version: '2.0.0' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    try {
      await client.connect(new StdioClientTransportV2(serverParams(db)), { timeout: REQUEST_TIMEOUT_MS });
      assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
      const { tools } = await client.listTools(undefined, { timeout: REQUEST_TIMEOUT_MS });
      assert.deepEqual(tools.map((t) => t.name), ['search', 'read', 'outline', 'list', 'links', 'history', 'diff']);
      const call = (args) => client.callTool({ name: 'search', arguments: args }, { timeout: REQUEST_TIMEOUT_MS });
      checkPages(docs, 'quillfeather', await searchAll(call, 'quillfeather'));
    } finally {
      await client.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
