// The stores the TypeScript interop tests run on: every scenario once on a SQLite file and once on
// a PostgreSQL database, on the server the PG* variables name (pg_virtualenv, as scripts/test.sh
// runs `node --test`). Not a test file: node --test does not pick up this name.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

export const BACKENDS = ['sqlite', 'postgres'];

/**
 * A new store for `name`, as its --db: a SQLite file under `dir`, or a new PostgreSQL database.
 * The whole URL, password included: the SDKs' stdio transports start the server with a bare
 * environment (no PG*).
 */
export function newDb(dir, name, backend) {
  if (backend === 'sqlite') return join(dir, `${name}.db`);
  assert.equal(backend, 'postgres', `unknown backend ${backend}`);
  assert.ok(
    process.env.PGHOST,
    'the PostgreSQL runs need a server: run node --test through pg_virtualenv, as scripts/test.sh does',
  );
  const db = `interop_ts_${name}_${process.pid}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  for (const sql of [`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`, `CREATE DATABASE ${db}`]) {
    execFileSync('psql', ['-qc', sql], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  }
  const { PGHOST, PGPORT = '5432', PGUSER = 'postgres', PGPASSWORD = '' } = process.env;
  return `postgres://${encodeURIComponent(PGUSER)}:${encodeURIComponent(PGPASSWORD)}@${PGHOST}:${PGPORT}/${db}`;
}

export function isPostgres(db) {
  return db.startsWith('postgres:');
}
