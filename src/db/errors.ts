// Recognising driver errors is dialect knowledge, so it lives with the database code.

interface DriverError {
  code?: unknown;
  errcode?: unknown;
  message?: unknown;
}

const SQLITE_CONSTRAINT_UNIQUE = 2067;
const SQLITE_CONSTRAINT_PRIMARYKEY = 1555;
const SQLITE_BUSY = 5;
const SQLITE_LOCKED = 6;

// Connection-level failures: the database is down, restarting, or unreachable.
const PG_UNAVAILABLE_CODES = new Set([
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08006',
]);
const NET_UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
]);

export function isUniqueViolation(error: unknown): boolean {
  const e = error as DriverError;
  if (e === null || typeof e !== 'object') return false;
  if (e.code === '23505') return true;
  return e.errcode === SQLITE_CONSTRAINT_UNIQUE || e.errcode === SQLITE_CONSTRAINT_PRIMARYKEY;
}

export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as DriverError;
  if (e === null || typeof e !== 'object') return false;
  if (typeof e.code === 'string' && (PG_UNAVAILABLE_CODES.has(e.code) || NET_UNAVAILABLE_CODES.has(e.code))) {
    return true;
  }
  if (e.errcode === SQLITE_BUSY || e.errcode === SQLITE_LOCKED) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  // pg-pool reports connect timeouts and dead connections only through their messages.
  return /timeout exceeded when trying to connect|Connection terminated|connection timeout|Client has encountered a connection error/i.test(
    message,
  );
}
