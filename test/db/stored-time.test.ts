// Times read back from the database (db/stored-time.ts): the same instant as Date's and pg's own
// parsers give, and toISOString()'s text without formatting it again.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { timeFromIso, timeFromPostgres } from '../../src/db/stored-time.ts';

const pgParser = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ, 'text') as (text: string) => Date;
let fallbacks = 0;
const counted = (text: string): Date => {
  fallbacks++;
  return pgParser(text);
};

describe('timeFromIso', () => {
  test('reads toISOString() text as that instant and gives the same text back', () => {
    for (const ms of [
      0,
      1,
      999,
      951_782_400_000,
      1_795_514_765_123,
      Date.UTC(2024, 1, 29, 23, 59, 59, 999),
    ]) {
      const text = new Date(ms).toISOString();
      const time = timeFromIso(text);
      assert.equal(time.getTime(), ms, text);
      assert.equal(time.toISOString(), text);
      assert.ok(time instanceof Date);
    }
  });

  test("text out of range or not in that form: Date's own reading", () => {
    for (const text of [
      '2026-02-30T10:00:00.000Z',
      '2026-11-24T25:00:00.000Z',
      '2026-11-24T09:13:41Z',
      'soon',
    ]) {
      assert.ok(Object.is(timeFromIso(text).getTime(), new Date(text).getTime()), text);
    }
  });
});

describe('timeFromPostgres', () => {
  test("UTC text: the instant pg's parser reads, cut to milliseconds, with toISOString()'s text", () => {
    fallbacks = 0;
    const cases = [
      '2026-11-24 09:13:41.995+00',
      '2026-11-24 09:13:41+00',
      '2026-11-24 09:13:41.5+00',
      '2026-11-24 09:13:41.05+00',
      '2026-11-24 09:13:41.524367+00',
      '2000-02-29 23:59:59.999999+00',
      '1970-01-01 00:00:00+00',
    ];
    for (const text of cases) {
      const time = timeFromPostgres(text, counted);
      assert.equal(time.getTime(), pgParser(text).getTime(), text);
      assert.equal(time.toISOString(), pgParser(text).toISOString(), text);
    }
    assert.equal(fallbacks, 0);
  });

  test("another zone, a year past 9999 or BC: pg's own parser", () => {
    fallbacks = 0;
    for (const text of [
      '2026-11-24 10:13:41.995+01',
      '2026-11-24 04:13:41-05:30',
      '10000-01-01 00:00:00+00',
      '0044-03-15 12:00:00+00 BC',
    ]) {
      assert.equal(timeFromPostgres(text, counted).getTime(), pgParser(text).getTime(), text);
    }
    assert.equal(fallbacks, 4);
  });
});
