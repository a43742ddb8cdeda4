// The JSON body parser: Fastify's own (secure-json-parse, refusing __proto__ and
// constructor.prototype), behind a check of the brackets. JSON.parse builds an object for every [
// and {, and deep nesting is its slowest case: a 1 MiB body of nested arrays took about 60 ms of
// event loop and left hundreds of MB of heap behind; a wide one (`[[],[],…]`) builds as many
// objects a byte (docs/decisions.md, 156). The check reads the raw bytes once, before any string
// or object is made from them.
import fp from 'fastify-plugin';
import { MAX_JSON_CONTAINERS, MAX_JSON_DEPTH } from '../shared/body-limits.ts';
import { AppError } from '../shared/errors.ts';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;

/**
 * What is wrong with the shape of `body`, if anything: 'deep' when it opens more than `maxDepth`
 * arrays or objects inside one another, 'many' when it opens more than `maxContainers` in all.
 * One pass, no allocation: brackets inside strings do not count, and a backslash in a string skips
 * the byte after it (so `\"` does not end the string, and `\\` does not escape the quote after
 * it). UTF-8 never uses these ASCII bytes inside a multi-byte character, so bytes can be read as
 * they come. Malformed JSON is left to the parser; this only counts brackets.
 */
export function jsonShapeFault(
  body: Uint8Array,
  maxDepth: number,
  maxContainers: number,
): 'deep' | 'many' | undefined {
  let depth = 0;
  let containers = 0;
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
      if (++depth > maxDepth) return 'deep';
      if (++containers > maxContainers) return 'many';
    } else if (byte === CLOSE_ARRAY || byte === CLOSE_OBJECT) {
      depth--;
    }
  }
  return undefined;
}

const SHAPE_FAULTS = {
  deep: `body: nested deeper than ${MAX_JSON_DEPTH} arrays or objects`,
  many: `body: more than ${MAX_JSON_CONTAINERS} arrays and objects`,
} as const;

/** Replaces Fastify's application/json parser for the whole app (registered at the root). */
export const jsonBodyPlugin = fp(
  async (app) => {
    // The same actions as the app's onProtoPoisoning and onConstructorPoisoning: refuse (400).
    const parse = app.getDefaultJsonParser('error', 'error');
    app.removeContentTypeParser('application/json');
    // As a Buffer: Fastify still enforces the route's bodyLimit while reading, and the depth is
    // checked before the bytes are decoded into a string.
    app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body: Buffer, done) => {
      const fault = jsonShapeFault(body, MAX_JSON_DEPTH, MAX_JSON_CONTAINERS);
      if (fault !== undefined) {
        done(new AppError('VALIDATION_FAILED', SHAPE_FAULTS[fault]), undefined);
        return;
      }
      parse(request, body.toString('utf8'), done);
    });
  },
  { name: 'usher-json-body' },
);
