// The benchmark's yardstick: a bare node:http server doing the same database and hashing work as
// Usher's hot paths (node:sqlite point lookup, a page of 20 with a count, argon2id with the same
// parameters, a session looked up by its token's SHA-256) and nothing else: no framework,
// validation, logging, headers or throttling.
// DATABASE_URL=sqlite:<file>|postgres://… PORT=<port> node bench/baseline.ts
import { argon2, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { DatabaseSync } from 'node:sqlite';
import { promisify } from 'node:util';
import pg from 'pg';

const argon2Async = promisify(argon2);
const url = process.env.DATABASE_URL ?? '';

type Row = Record<string, unknown>;
interface Store {
  get(sql: string, params: unknown[]): Promise<Row | undefined>;
  all(sql: string, params: unknown[]): Promise<Row[]>;
}

/** The same SQL on either engine: prepared node:sqlite statements, or a pg pool. */
function openStore(): Store {
  if (url.startsWith('postgres')) {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    let n = 0;
    const numbered = (sql: string) => sql.replace(/\?/g, () => `$${++n}`);
    const cache = new Map<string, string>();
    const text = (sql: string) => {
      let t = cache.get(sql);
      if (!t) {
        n = 0;
        t = numbered(sql);
        cache.set(sql, t);
      }
      return t;
    };
    return {
      get: async (sql, params) => (await pool.query(text(sql), params)).rows[0],
      all: async (sql, params) => (await pool.query(text(sql), params)).rows,
    };
  }
  const db = new DatabaseSync(url.replace(/^sqlite:/, ''), { timeout: 5000 });
  db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL');
  const statements = new Map<string, ReturnType<DatabaseSync['prepare']>>();
  const prepared = (sql: string) => {
    let s = statements.get(sql);
    if (!s) {
      s = db.prepare(sql);
      statements.set(sql, s);
    }
    return s;
  };
  return {
    get: async (sql, params) => prepared(sql).get(...(params as never[])) as Row | undefined,
    all: async (sql, params) => prepared(sql).all(...(params as never[])) as Row[],
  };
}

const store = openStore();
const BY_ID = 'select id, email, name, created_at from users where id = ?';
const BY_EMAIL =
  'select u.id, u.email, u.name, u.created_at, p.hash as password_hash from users u ' +
  'left join password_credentials p on p.user_id = u.id where u.email_key = ?';
const PAGE = 'select id, email, name, created_at from users order by id limit ? offset ?';
const COUNT = 'select count(*) as n from users';
// The session with its user's row, in one query, as Usher reads it.
const SESSION =
  'select s.public_id, s.user_id, s.created_at, s.last_seen_at, s.expires_at, ' +
  'u.id, u.email, u.name, u.created_at as user_created_at ' +
  'from sessions s join users u on u.id = s.user_id where s.token_hash = ?';
const TOUCH = 'update sessions set last_seen_at = ? where token_hash = ?';
const SESSION_IDLE_MS = 24 * 3600 * 1000;
const TOUCH_INTERVAL_MS = 60_000;
const INSERT =
  'insert into users (email, email_key, name, created_at, updated_at) values (?, ?, ?, ?, ?) returning id';
const INSERT_PASSWORD = 'insert into password_credentials (user_id, hash, changed_at) values (?, ?, ?)';
const PARAMS = { memory: 19456, passes: 2, parallelism: 1, tagLength: 32 };

const user = (r: Row) => ({ id: Number(r.id), email: r.email, name: r.name, createdAt: r.created_at });

function body(req: import('node:http').IncomingMessage): Promise<Record<string, string>> {
  return new Promise((resolve) => {
    let data = '';
    req.on('data', (c) => {
      data += c;
    });
    req.on('end', () => resolve(JSON.parse(data || '{}')));
  });
}

const server = createServer(async (req, res) => {
  const send = (status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(value));
  };
  const path = req.url ?? '/';
  if (req.method === 'GET' && path === '/api/session') {
    const token = /^Bearer ([A-Za-z0-9_-]{16,512})$/.exec(req.headers.authorization ?? '')?.[1];
    const hash = token && createHash('sha256').update(token).digest('hex');
    const session = hash ? await store.get(SESSION, [hash]) : undefined;
    const now = Date.now();
    const time = (value: unknown) => new Date(value as string | Date);
    const lastSeen = session && time(session.last_seen_at).getTime();
    if (!session || time(session.expires_at).getTime() <= now || lastSeen! + SESSION_IDLE_MS <= now)
      return send(401, { error: 'UNAUTHENTICATED' });
    if (now - lastSeen! >= TOUCH_INTERVAL_MS) await store.get(TOUCH, [new Date(now).toISOString(), hash]);
    return send(200, {
      user: user({ ...session, created_at: session.user_created_at }),
      session: {
        id: session.public_id,
        createdAt: time(session.created_at).toISOString(),
        expiresAt: time(session.expires_at).toISOString(),
      },
    });
  }
  if (req.method === 'GET' && path.startsWith('/api/users/')) {
    const row = await store.get(BY_ID, [Number(path.slice(11))]);
    return row ? send(200, user(row)) : send(404, { error: 'USER_NOT_FOUND' });
  }
  if (req.method === 'GET' && path.startsWith('/api/users')) {
    const q = new URL(path, 'http://x').searchParams;
    const size = Number(q.get('size') ?? 20);
    const rows = await store.all(PAGE, [size, (Number(q.get('page') ?? 1) - 1) * size]);
    res.setHeader('x-total-count', String((await store.get(COUNT, []))?.n));
    return send(200, rows.map(user));
  }
  if (req.method === 'POST' && path === '/api/signin') {
    const { email = '', password = '' } = await body(req);
    const row = (await store.get(BY_EMAIL, [email.trim().toLowerCase()])) as
      | Record<string, string>
      | undefined;
    const m = /\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/.exec(row?.password_hash ?? '');
    if (!row || !m) return send(401, { error: 'SIGNIN_FAILED' });
    const tag = await argon2Async('argon2id', {
      ...PARAMS,
      message: password,
      nonce: Buffer.from(m[1]!, 'base64'),
    });
    const ok = timingSafeEqual(tag, Buffer.from(m[2]!, 'base64'));
    return ok ? send(200, { user: user(row) }) : send(401, { error: 'SIGNIN_FAILED' });
  }
  if (req.method === 'POST' && path === '/api/users') {
    const { email = '', name = '', password = '' } = await body(req);
    const salt = randomBytes(16);
    const tag = await argon2Async('argon2id', { ...PARAMS, message: password, nonce: salt });
    const b64 = (b: Buffer) => b.toString('base64').replace(/=+$/, '');
    const hash = `$argon2id$v=19$m=19456,t=2,p=1$${b64(salt)}$${b64(tag)}`;
    const now = new Date().toISOString();
    const row = (await store.get(INSERT, [
      email.trim(),
      email.trim().toLowerCase(),
      name.trim(),
      now,
      now,
    ])) as Row;
    await store.get(INSERT_PASSWORD, [row.id, hash, Date.now()]);
    return send(201, { id: Number(row.id), email, name, createdAt: now });
  }
  send(404, { error: 'NOT_FOUND' });
});
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
