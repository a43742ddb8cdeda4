// JSON in and out without rounding 64-bit integers. Usher writes ids up to 2^63-1 as plain JSON
// integers; JSON.parse would turn 9007199254740993 into 9007199254740992, and the next call with
// that id would ask for another record. Numbers under the properties the document declares as
// 64-bit (the ids) are read from their source text as bigints, and bigints are written back as
// their exact digits. Both
// need JSON.parse source text access (Node 21+, Chrome 114+, Firefox 135+, Safari 18.4+); on an
// older engine ids within 2^53 still work and a larger one throws instead of being rounded.

/** JSON.parse's reviver with the context argument of source text access (not yet in TypeScript's lib). */
type SourceReviver = (key: string, value: unknown, context?: { source?: string }) => unknown;
type Reviver = Parameters<typeof JSON.parse>[1];
const rawJSON = (JSON as { rawJSON?: (text: string) => unknown }).rawJSON;

const INTEGER = /^-?(0|[1-9][0-9]*)$/;

/** A lossless read of one 64-bit value, or an error when it cannot be had. */
function readBigInt(key: string, value: number, source: string | undefined): bigint {
  if (source !== undefined && INTEGER.test(source)) return BigInt(source);
  if (Number.isSafeInteger(value)) return BigInt(value);
  throw new RangeError(
    source === undefined
      ? `"${key}" is ${value} rounded: this JavaScript engine cannot read integers above 2^53 exactly (it lacks JSON.parse source text access)`
      : `"${key}" is not an integer: ${source}`,
  );
}

/**
 * Parses a JSON text; numbers under `bigintKeys` become bigints. Any other integer that a double
 * cannot hold exactly is refused (a RangeError) rather than returned rounded.
 */
export function parseJson(text: string, bigintKeys: ReadonlySet<string>): unknown {
  const reviver: SourceReviver = (key, value, context) => {
    if (typeof value !== 'number') return value;
    if (bigintKeys.has(key)) return readBigInt(key, value, context?.source);
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
      throw new RangeError(
        `"${key}" holds an integer beyond 2^53 that is not declared 64-bit: ${context?.source}`,
      );
    }
    return value;
  };
  return JSON.parse(text, reviver as Reviver);
}

/** A number where an exact integer is expected must be one a double holds exactly. */
export function checkSafe(key: string, value: unknown): void {
  if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
    throw new RangeError(
      `"${key}" is ${value}, beyond 2^53 and so maybe rounded already: pass it as a bigint`,
    );
  }
}

/** JSON.stringify that writes bigints as their exact digits. */
export function stringifyJson(value: unknown): string {
  return JSON.stringify(value, (key: string, item: unknown) => {
    if (typeof item !== 'bigint') {
      checkSafe(key, item);
      return item;
    }
    if (rawJSON) return rawJSON(item.toString());
    if (item >= BigInt(Number.MIN_SAFE_INTEGER) && item <= BigInt(Number.MAX_SAFE_INTEGER))
      return Number(item);
    throw new RangeError(
      `"${key}" is ${item}: this JavaScript engine cannot write integers above 2^53 exactly (it lacks JSON.rawJSON)`,
    );
  });
}
