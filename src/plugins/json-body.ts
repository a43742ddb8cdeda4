// The JSON body parser: Fastify's own (secure-json-parse, refusing __proto__ and
// constructor.prototype), behind a check of the nesting depth. JSON.parse builds an object for
// every [ and {, and deep nesting is its slowest case: a 1 MiB body of nested arrays took about
// 60 ms of event loop and left hundreds of MB of heap behind (docs/decisions.md, 156). The check
// reads the raw bytes once, before any string or object is made from them.
import fp from 'fastify-plugin';
import { MAX_JSON_DEPTH } from '../shared/body-limits.ts';
import { AppError } from '../shared/errors.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * Whether `body` opens more than `limit` arrays or objects inside one another. One pass, no
 * allocation: brackets inside strings do not count, and a backslash in a string skips the byte
 * after it (so `\"` does not end the string, and `\\` does not escape the quote after it). UTF-8
 * never uses these ASCII bytes inside a multi-byte character, so bytes can be read as they come.
 * Malformed JSON is left to the parser; this only answers how deep the brackets go.
 */
export function nestedDeeperThan(body: Uint8Array, limit: number): boolean {
  let depth = 0;
  const length = body.length;
  for (let i = 0; i < length; i++) {
    const byte = body[i];
    if (byte === QUOTE) {
      for (i++; i < length; i++) {
        const inside = body[i];
        if (inside === BACKSLASH) i++;
        else if (inside === QUOTE) break;
      }
    } else if (byte === OPEN_ARRAY || byte === OPEN_OBJECT) {
      if (++depth > limit) return true;
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth--;
    }
  }
  return false;
}

/** Replaces Fastify's application/json parser for the whole app (registered at the root). */
export const jsonBodyPlugin = fp(
  async (app) => {
    // The same actions as the app's onProtoPoisoning and onConstructorPoisoning: refuse (400).
    const parse = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    // As a Buffer: Fastify still enforces the route's bodyLimit while reading, and the depth is
    // checked before the bytes are decoded into a string.
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
      if (nestedDeeperThan(body, MAX_JSON_DEPTH)) {
        done(
          new AppError('VALIDATION_FAILED', `body: nested deeper than ${MAX_JSON_DEPTH} arrays or objects`),
          undefined,
        );
        return;
      }
      parse(request, body.toString('utf8'), done);
    });
  },
  { name: 'usher-json-body' },
);
