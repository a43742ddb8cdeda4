// What the audit log suites share (not a test file): requests with a chosen client address and
// User-Agent, the audit log read through GET /api/admin/audit as an admin, the shape every record
// has, and the digest a failed sign-in for an unknown email keeps.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from '../helpers/app.ts';
import { waitUntil } from '../helpers/mail.ts';

/** What `at` looks like: an ISO 8601 time in UTC with milliseconds, as toISOString writes it. */
export const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

export const RECORD_KEYS = ['actorId', 'address', 'at', 'details', 'id', 'type', 'userAgent', 'userId'];
export const ACTIVITY_KEYS = ['address', 'at', 'by', 'details', 'id', 'type', 'userAgent'];

/** A record of GET /api/admin/audit (ids are small enough to be exact JSON numbers here). */
export interface AuditRecord {
  id: number;
  at: string;
  type: string;
  actorId: number | null;
  userId: number | null;
  address: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
}

export interface ActivityItem {
  id: number;
  at: string;
  type: string;
  by: 'you' | 'staff' | 'unknown';
  address: string | null;
  userAgent: string | null;
  details: Record<string, unknown>;
}

/** What a failed sign-in for an email with no account keeps: SHA-256 (hex) of the trimmed, lower-cased email. */
export const emailDigest = (email: string) =>
  createHash('sha256').update(email.trim().toLowerCase()).digest('hex');

let addresses = 0;
/** A client address no other request of this process came from (so throttle counts never meet). */
export function freshAddress(prefix = '10.61'): string {
  addresses += 1;
  return `${prefix}.${(addresses >> 8) & 255}.${addresses & 255}`;
}

let agents = 0;
/** A User-Agent no other request of this process sent, so a record is traced to its request. */
export function freshAgent(what: string): string {
  agents += 1;
  return `UsherAuditTest/${agents}.${process.pid} (${what})`;
}

export interface Sent {
  token?: string | undefined;
  body?: unknown;
  address?: string | undefined;
  userAgent?: string | undefined;
  headers?: Record<string, string>;
}

/** A request with a Bearer session, a JSON body, a client address and a User-Agent, each when given. */
export function send(
  t: TestApp,
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  url: string,
  { token, body, address, userAgent, headers = {} }: Sent = {},
): Promise<LightMyRequestResponse> {
  return t.inject({
    method,
    url,
    ...(address === undefined ? {} : { remoteAddress: address }),
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(userAgent === undefined ? {} : { 'user-agent': userAgent }),
      ...headers,
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
}

/** GET /api/admin/audit?query as `token` (support or admin): the records, which must be a 200. */
export async function auditLog(t: TestApp, token: string, query = ''): Promise<AuditRecord[]> {
  const res = await send(t, 'GET', `/api/admin/audit?size=100${query === '' ? '' : `&${query}`}`, { token });
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`);
  return res.json() as AuditRecord[];
}

/** The records about `userId` of exactly `type` (newest first). */
export async function recordsOf(
  t: TestApp,
  token: string,
  userId: bigint | number,
  type: string,
): Promise<AuditRecord[]> {
  const records = await auditLog(t, token, `userId=${userId}&type=${type}`);
  return records.filter((r) => r.type === type);
}

/** The one record about `userId` of exactly `type`. */
export async function onlyRecord(
  t: TestApp,
  token: string,
  userId: bigint | number,
  type: string,
): Promise<AuditRecord> {
  const records = await recordsOf(t, token, userId, type);
  assert.equal(records.length, 1, `one ${type} about user ${userId}: ${JSON.stringify(records)}`);
  return records[0]!;
}

/** Waits (the record is written after the answer) for a record of `type` that `where` accepts. */
export async function eventually(
  t: TestApp,
  token: string,
  type: string,
  where: (r: AuditRecord) => boolean,
): Promise<AuditRecord> {
  let found: AuditRecord | undefined;
  await waitUntil(
    async () => {
      found = (await auditLog(t, token, `type=${type}`)).find((r) => r.type === type && where(r));
      return found !== undefined;
    },
    10_000,
    `a ${type} record`,
  );
  return found!;
}

export interface Expected {
  type: string;
  userId: bigint | number | null;
  actorId: bigint | number | null;
  address: string | null;
  userAgent: string | null;
  /** Compared whole when given. */
  details?: Record<string, unknown>;
}

const idOrNull = (id: bigint | number | null) => (id === null ? null : Number(id));

/** The record has exactly the fields of an audit record, an ISO `at`, and the values expected. */
export function assertRecord(record: AuditRecord, expected: Expected): void {
  const what = `${expected.type}: ${JSON.stringify(record)}`;
  assert.deepEqual(Object.keys(record).sort(), RECORD_KEYS, what);
  assert.equal(typeof record.id, 'number', what);
  assert.match(record.at, ISO, what);
  assert.equal(record.type, expected.type, what);
  assert.equal(record.userId, idOrNull(expected.userId), `${what}: userId`);
  assert.equal(record.actorId, idOrNull(expected.actorId), `${what}: actorId`);
  assert.equal(record.address, expected.address, `${what}: address`);
  assert.equal(record.userAgent, expected.userAgent, `${what}: userAgent`);
  assert.equal(typeof record.details, 'object', what);
  if (expected.details !== undefined) assert.deepEqual(record.details, expected.details, `${what}: details`);
}
