// Whether the process must start itself again with Node settings it can only get at start: read
// by the entry file (server.ts) before anything else runs. Not Usher's configuration (config.ts).

type Env = Readonly<Record<string, string | undefined>>;

/** glibc's malloc arenas: see launchDefaults. */
export const MALLOC_ARENA_MAX_DEFAULT = '1';
/** V8's young generation, MiB per semi-space: see launchDefaults (8 since decision 421). */
export const SEMI_SPACE_MIB_DEFAULT = 8;
/** V8's idle-time collections keep what the running code was optimised for: see launchDefaults. */
export const MEMORY_REDUCER_FLAG = '--no-memory-reducer-favors-memory';

/**
 * What the process can only be given when it starts, and has better than Node's defaults for a
 * long-running server on a small machine (docs/decisions.md, 126): glibc's malloc arenas
 * (MALLOC_ARENA_MAX, read before any JavaScript runs; with glibc's default of eight per core
 * every hashing thread keeps freed argon2 buffers, 19 MiB each, in an arena of its own), V8's young generation
 * (--max-semi-space-size; by default it grows to 64 MiB under load; at 8 MiB per semi-space it
 * stays at 24, where a request's objects die young: decision 421), V8's idle-time collections
 * (--no-memory-reducer-favors-memory: the collections V8 runs once a busy heap goes quiet still
 * run, but no longer in the memory-reducing mode that also discards the object layouts the hot
 * code was optimised for, which left every request after a quiet spell a third slower:
 * decision 137) and Node's compile cache (NODE_COMPILE_CACHE, so that even the entry file is
 * loaded without the TypeScript stripper).
 * Returns the environment and Node options to start again with (the entry file does, replacing
 * the process), or undefined when the process has them all: each is added only where the operator
 * has not set it, so a value of theirs always wins.
 */
export function launchDefaults(
  env: Env,
  execArgv: readonly string[],
  tmpdir: string,
): { env: Record<string, string>; execArgv: string[] } | undefined {
  const added: Record<string, string> = {};
  if (env.MALLOC_ARENA_MAX === undefined) added.MALLOC_ARENA_MAX = MALLOC_ARENA_MAX_DEFAULT;
  if (env.NODE_COMPILE_CACHE === undefined && env.NODE_DISABLE_COMPILE_CACHE === undefined)
    // The directory enableCompileCache() (server.ts) would choose.
    added.NODE_COMPILE_CACHE = `${tmpdir}/node-compile-cache`;
  const inArgs = (flag: RegExp) => execArgv.some((arg) => flag.test(arg));
  const semiSpace = /--max[-_]semi[-_]space[-_]size/;
  const flags: string[] = [];
  if (!inArgs(semiSpace) && !semiSpace.test(env.NODE_OPTIONS ?? ''))
    flags.push(`--max-semi-space-size=${SEMI_SPACE_MIB_DEFAULT}`);
  // Node refuses the memory reducer's flags in NODE_OPTIONS: only the command line can set them.
  if (!inArgs(/--(no-)?memory[-_]reducer/)) flags.push(MEMORY_REDUCER_FLAG);
  if (Object.keys(added).length === 0 && flags.length === 0) return undefined;
  const kept = Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
  return { env: { ...kept, ...added }, execArgv: [...flags, ...execArgv] };
}
