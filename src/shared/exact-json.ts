// JSON with 64-bit ids kept exact both ways: bigints written as JSON integers, and integers past
// 2^53 read back as raw JSON, which JSON.stringify (and so every response) writes out digit for
// digit. JSON.rawJSON and the reviver's source text are Node 21+, not in TypeScript's lib yet.
const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

export function stringifyExact(value: unknown): string {
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? rawJson(v.toString()) : v));
}

export function parseExact<T = unknown>(text: string): T {
  return JSON.parse(text, (_key, value, context?: { source?: string }) =>
    typeof value === 'number' &&
    !Number.isSafeInteger(value) &&
    context?.source &&
    /^-?\d+$/.test(context.source)
      ? rawJson(context.source)
      : value,
  ) as T;
}
