// The access log: one line per request at info, once the response is sent (plugins/pipeline.ts
// calls it): method, URL, status and time, with the request id and the client address. No headers
// and no bodies, so no credential can reach the log this way. Probes and scrapes that succeed are
// written at debug: a load balancer and Prometheus ask every few seconds, forever.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import pino, { type Logger } from 'pino';

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/**
 * Health probes and the metrics scrape: their successful answers are logged at debug. A failing
 * one (a 503 from /readyz while the database is down) stays at info, where it is seen.
 */
const QUIET_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/** What the access log knows of a request's route, worked out once per route (plugins/pipeline.ts). */
export interface LoggedRoute {
  /** The query string is left out (it may carry a token or a provider's code). */
  readonly pathOnly: boolean;
  /** The route of a probe or the scrape: only its requests can be logged at debug. */
  readonly probe: boolean;
}

/** Whether the route with this pattern (a matched route's) is a probe's or the scrape's. */
export function isProbeRoute(pattern: string): boolean {
  return QUIET_PATHS.has(pattern);
}

/**
 * Writes the line of a request whose answer had `statusCode`, `elapsedMs` after it arrived.
 * `handedOn`: the URL of a request a route handed on to an application of its own with its URL
 * rewritten (the OpenID Connect provider under /oidc): its path is logged, never its query (an
 * authorization request's login_hint, an id_token_hint).
 */
export type AccessLog = (
  request: FastifyRequest,
  statusCode: number,
  elapsedMs: number,
  route: LoggedRoute,
  handedOn: string | undefined,
) => void;

interface PinoInternals {
  [pino.symbols.streamSym]: { write(line: string): unknown };
  [pino.symbols.chindingsSym]: string;
}

/** Printable ASCII with nothing JSON must escape (no `"` or `\\`): written between quotes as it is. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A JSON string; JSON.stringify (a call into the runtime) only for text that needs escaping. */
function json(text: string): string {
  return PLAIN.test(text) ? `"${text}"` : JSON.stringify(text);
}

/** `Math.round(ms * 100) / 100` as JSON writes it (1.2, 3, 0.45), with integer arithmetic only. */
function hundredths(ms: number): string {
  const h = Math.round(ms * 100);
  if (!Number.isSafeInteger(h) || h < 0) return JSON.stringify(Math.round(ms * 100) / 100);
  const whole = Math.floor(h / 100);
  const part = h % 100;
  if (part === 0) return `${whole}`;
  return part % 10 === 0 ? `${whole}.${part / 10}` : `${whole}.${part < 10 ? '0' : ''}${part}`;
}

/**
 * The writer of access lines through `logger`'s destination, or undefined when the logger is above
 * info (probes and scrapes at debug are then dropped too). The line is the one `request.log.info({method, url, statusCode, responseTime, address},
 * 'request')` writes (pino's level, time, the logger's bindings, then the request id), but put
 * together by hand: pino's generic path walks the object and serialises each value, and builds a
 * child logger per request for the id, which together were the largest share of a request's CPU
 * after the socket write (docs/benchmarks.md).
 */
export function createAccessLog(logger: FastifyBaseLogger): AccessLog | undefined {
  // Fastify's logger is the pino logger it made from the `logger` options.
  if (!(logger as Logger).isLevelEnabled('info')) return undefined;
  const internals = logger as unknown as PinoInternals;
  const stream = internals[pino.symbols.streamSym];
  const level = `{"level":${pino.levels.values.info},"time":`;
  const debug = (logger as Logger).isLevelEnabled('debug');
  const quietLevel = `{"level":${pino.levels.values.debug},"time":`;
  const bindings = internals[pino.symbols.chindingsSym];
  // Many lines share a millisecond: its digits are made once.
  let time = 0;
  let timeText = '0';
  return (request, statusCode, elapsedMs, route, handedOn) => {
    // A GET or HEAD that succeeded on a probe's path (a query string does not make it another).
    // Only a probe's route is reached by such a path: the others skip the look at the URL.
    const quiet =
      route.probe &&
      statusCode < 400 &&
      (request.method === 'GET' || request.method === 'HEAD') &&
      QUIET_PATHS.has(pathOf(request.url));
    if (quiet && !debug) return;
    const now = Date.now();
    if (now !== time) {
      time = now;
      timeText = `${now}`;
    }
    // A page may be linked with ?token= (the fragment is the norm, but apps link both ways), and a
    // provider's callback carries its code: the path says which it was, the secret stays out.
    const url =
      handedOn !== undefined ? pathOf(handedOn) : route.pathOnly ? pathOf(request.url) : request.url;
    // The request id needs no escaping (plugins/request-logger.ts: its CONTRACT).
    stream.write(
      `${quiet ? quietLevel : level}${timeText}${bindings},"reqId":"${request.id}","method":"${request.method}","url":${json(url)},` +
        `"statusCode":${statusCode},"responseTime":${hundredths(elapsedMs)},` +
        `"address":${json(request.ip)},"msg":"request"}\n`,
    );
  };
}
