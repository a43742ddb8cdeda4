// The client's JSON reader and writer (clients/typescript/src/json.ts): 64-bit integers kept exact
// both ways, and a rounded number refused rather than passed on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseJson, stringifyJson } from '../../clients/typescript/src/index.ts';

const INT64 = new Set(['id', 'ownerId']);

test('int64 properties are read as bigints from their source text, whatever their size', () => {
  const text = '{"id":9007199254740993,"ownerId":1,"price":250,"items":[{"id":9223372036854775807}]}';
  assert.deepEqual(parseJson(text, INT64), {
    id: 9007199254740993n,
    ownerId: 1n,
    price: 250,
    items: [{ id: 9223372036854775807n }],
  });
});

test('an integer above 2^53 that is not declared int64 is refused, not rounded', () => {
  assert.throws(() => parseJson('{"price":9007199254740993}', INT64), RangeError);
  assert.deepEqual(parseJson('{"price":1.5,"n":-3}', INT64), { price: 1.5, n: -3 });
});

test('bigints are written as their exact digits; numbers a double cannot hold exactly are refused', () => {
  assert.equal(stringifyJson({ id: 9007199254740993n, n: [1n, 2] }), '{"id":9007199254740993,"n":[1,2]}');
  assert.throws(() => stringifyJson({ id: 2 ** 53 + 2 }), RangeError);
  assert.equal(stringifyJson({ id: 2 ** 53 - 1 }), '{"id":9007199254740991}');
});
