// The readers a settings section is written with. config.ts is the only module that reads
// process.env; it hands the environment to each feature's settings.ts (`src/<feature>/settings.ts`),
// which reads and checks its section with these, so every setting is refused in the same words:
// `NAME: "value" is not accepted; expected …`, one line, naming the setting. A feature outside the
// built-in set reads its section at composition from `config.environment` with the same readers.

/** The environment as config.ts was given it: names to values; unset is undefined. */
export type Env = Readonly<Record<string, string | undefined>>;

/** A setting that is wrong; the process stops before it listens, on one line naming it. */
export class ConfigError extends Error {
  readonly setting: string;
  constructor(setting: string, detail: string) {
    super(`${setting}: ${detail}`);
    this.setting = setting;
    this.name = 'ConfigError';
  }
}

/** The setting's value, or undefined when it is unset or empty (an empty value means the default). */
export function text(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** Decimal digits only, from min to max. */
export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(name, `"${raw}" is not accepted; expected an integer from ${min} to ${max}`);
  }
  return Number(raw);
}

/**
 * A duration written in whole seconds (a `…_SECONDS` setting), in milliseconds, as every duration
 * of the configuration is kept; the bounds and the message are in seconds, as the operator writes it.
 */
export function secondsAsMs(env: Env, name: string, fallback: number, min: number, max: number): number {
  return integer(env, name, fallback, min, max) * 1000;
}

/** One of the allowed words, in any case. */
export function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = raw.toLowerCase() as T;
  if (!allowed.includes(value)) {
    throw new ConfigError(name, `"${raw}" is not accepted; expected one of ${allowed.join(', ')}`);
  }
  return value;
}

/** `true` or `false`, in any case. */
export function flag(env: Env, name: string, fallback: boolean): boolean {
  return oneOf(env, name, ['true', 'false'] as const, fallback ? 'true' : 'false') === 'true';
}

/** Comma-separated items, each trimmed and matching `valid`; unset or blank is none. */
export function list(env: Env, name: string, valid: RegExp, expected: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  const items = raw.split(',').map((item) => item.trim());
  const bad = items.find((item) => !valid.test(item));
  if (bad !== undefined) throw new ConfigError(name, `"${bad}" is not accepted; expected ${expected}`);
  return items;
}

const NOT_SHOWN = '[environment: not shown]';

/**
 * A frozen copy of the environment, for `Config.environment`. It holds secrets (ENCRYPTION_KEY,
 * SMTP_URL's password, the providers' client secrets), so it shows nothing of itself where a
 * Config might be written out: JSON (pino's log lines, a response body) and util.inspect
 * (console.log) see a marker. The names stay enumerable, so a spread of a Config keeps the
 * copy, and a reader finds every value.
 */
export function environmentCopy(env: Env): Env {
  const copy: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(env)) copy[name] = value;
  Object.defineProperty(copy, 'toJSON', { value: () => NOT_SHOWN });
  Object.defineProperty(copy, Symbol.for('nodejs.util.inspect.custom'), { value: () => NOT_SHOWN });
  return Object.freeze(copy);
}
