import { type Env, integer } from '../../../src/kernel/settings.ts';

/** The example feature's settings section: read and checked before any feature is built. */
export function exampleSettings(env: Env) {
  return {
    /** EXAMPLE_NOTE_MAX_LENGTH: the longest note, in characters (200 by default). */
    maxLength: integer(env, 'EXAMPLE_NOTE_MAX_LENGTH', 200, 1, 10_000),
  };
}

export type ExampleSettings = ReturnType<typeof exampleSettings>;
