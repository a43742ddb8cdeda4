// Times as the database gives them back, read without Date's general parser and written back
// without V8's formatter: on SQLite from the ISO text Usher stores, on PostgreSQL from its text
// output for timestamptz.

/**
 * A time read from the database that gives toISOString()'s text back rather than formatting the
 * time again (V8 formats through snprintf: about 7,000 instructions per call), built from the
 * text's digits rather than by Date's general parser. Both were a measurable share of a user
 * lookup (docs/benchmarks.md).
 */
class StoredTime extends Date {
  readonly #text: string;
  constructor(ms: number, text: string) {
    super(ms);
    this.#text = text;
  }
  override toISOString(): string {
    return this.#text;
  }
}

/** The decimal digit at `at`, or NaN. */
function digit(text: string, at: number): number {
  const d = text.charCodeAt(at) - 48;
  return d >= 0 && d <= 9 ? d : Number.NaN;
}

/** Two decimal digits at `at`, or NaN. */
function digits2(text: string, at: number): number {
  return digit(text, at) * 10 + digit(text, at + 1);
}

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's days_from_civil). */
function daysSinceEpoch(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/**
 * A Date for `text`, as SQLite stores times (toISOString()'s text, which Usher writes): a
 * StoredTime when it is in that form (2026-11-23T16:00:00.000Z), Date's own reading otherwise.
 */
export function timeFromIso(text: string): Date {
  if (
    text.length === 24 &&
    text[4] === '-' &&
    text[7] === '-' &&
    text[10] === 'T' &&
    text[13] === ':' &&
    text[16] === ':' &&
    text[19] === '.' &&
    text[23] === 'Z'
  ) {
    const year = digits2(text, 0) * 100 + digits2(text, 2);
    const month = digits2(text, 5);
    const day = digits2(text, 8);
    const ms =
      daysSinceEpoch(year, month, day) * 86_400_000 +
      digits2(text, 11) * 3_600_000 +
      digits2(text, 14) * 60_000 +
      digits2(text, 17) * 1000 +
      digits2(text, 20) * 10 +
      digit(text, 22);
    const time = new StoredTime(ms, text);
    // Digits out of range (February 30th, 25 o'clock) would have rolled over: such text, and any
    // text whose digits are not digits (NaN), gets Date's own reading.
    if (
      time.getUTCDate() === day &&
      time.getUTCMonth() === month - 1 &&
      digits2(text, 11) < 24 &&
      digits2(text, 14) < 60 &&
      digits2(text, 17) < 60
    )
      return time;
  }
  return new Date(text);
}

/** PostgreSQL's text for a timestamptz in UTC, with DateStyle ISO: 2026-11-24 09:13:41.995+00. */
const POSTGRES_UTC = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?\+00$/;

/**
 * A Date for a timestamptz as PostgreSQL writes it: a StoredTime when the session's time zone is
 * UTC (the server default where the system's is, and what the ISO text Usher writes becomes), with
 * the fraction cut to milliseconds as Date would; `fallback` (pg's own parser) for anything else:
 * another zone, a year past 9999, BC.
 */
export function timeFromPostgres(text: string, fallback: (text: string) => Date): Date {
  if (!POSTGRES_UTC.test(text)) return fallback(text);
  // Digits after the seconds, then the +00: none, or 1 to 6 after a dot.
  const fraction = text.length === 22 ? '000' : `${text.slice(20, -3)}00`.slice(0, 3);
  return timeFromIso(`${text.slice(0, 10)}T${text.slice(11, 19)}.${fraction}Z`);
}
