// Fastify gives every request a child logger bound to its id. Building a pino child costs about as
// much as writing a line, and most requests never log through it (the access line is written by
// plugins/access-log.ts): this one builds the child on the first line that is actually written.
import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Logger } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

class RequestLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #logger(): Logger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  #write(level: Level, args: unknown[]): void {
    // A level the logger drops costs nothing, not even the child.
    if (!(this.#child ?? this.#parent).isLevelEnabled(level)) return;
    (this.#logger()[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(level: string) {
    this.#logger().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level);
  }

  // Methods on the prototype, not arrow fields: nothing is allocated per request but the object.
  silent(): void {}
  fatal(...args: unknown[]): void {
    this.#write('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#write('error', args);
  }
  warn(...args: unknown[]): void {
    this.#write('warn', args);
  }
  info(...args: unknown[]): void {
    this.#write('info', args);
  }
  debug(...args: unknown[]): void {
    this.#write('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#write('trace', args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#logger().child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the request's logger, made into a pino child only when used. */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  // Fastify's logger is the pino logger it made from the `logger` options.
  return new RequestLogger(logger as Logger, bindings, options) as unknown as FastifyBaseLogger;
}

/** CONTRACT: 1 to 128 characters of [A-Za-z0-9._:-]; nothing a log line or a header would need escaped. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** How many ids are made at a time. */
const ID_BATCH = 256;
const idBytes = Buffer.alloc(16 * ID_BATCH);
/** The batch's ids as text, 36 characters each. */
const idText = Buffer.alloc(36 * ID_BATCH);
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
let nextId = ID_BATCH;

/**
 * A random (version 4) UUID, as crypto.randomUUID() makes it: 122 random bits from the system's
 * CSPRNG in the same layout and lower-case text. randomUUID() also draws its bytes in batches,
 * but puts each id's text together from twenty pieces, about 600 bytes of short-lived strings
 * per request and twice the time; here a batch's text is written into one buffer at once and
 * each id is one string cut from it.
 */
function randomId(): string {
  if (nextId === ID_BATCH) {
    randomFillSync(idBytes);
    for (let id = 0, b = 0, t = 0; id < ID_BATCH; id++, b += 16) {
      // The version (4) and the variant (10xx), as RFC 9562 sets them.
      idBytes[b + 6] = (idBytes[b + 6]! & 0x0f) | 0x40;
      idBytes[b + 8] = (idBytes[b + 8]! & 0x3f) | 0x80;
      for (let i = 0; i < 16; i++) {
        if (i === 4 || i === 6 || i === 8 || i === 10) idText[t++] = 0x2d; // '-'
        const byte = idBytes[b + i]!;
        idText[t++] = HEX_DIGITS[byte >> 4]!;
        idText[t++] = HEX_DIGITS[byte & 15]!;
      }
    }
    nextId = 0;
  }
  const start = 36 * nextId++;
  return idText.toString('latin1', start, start + 36);
}

/**
 * Fastify's `genReqId`: the request's X-Request-Id when it is well formed, so a line here and a
 * proxy's or a client's line for the same request share the id; otherwise (absent, empty, too
 * long, other characters) a new random UUID rather than a refusal: the id is for logs, and a
 * request should not fail over it. A random id, not Fastify's counter (req-1, req-2, …), which
 * every worker and instance would repeat.
 */
export function requestId(request: IncomingMessage): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomId();
}
