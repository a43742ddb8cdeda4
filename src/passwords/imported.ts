// Password hashes made by other systems (issue 31): bcrypt (Supabase, Auth0, most bcrypt
// libraries), argon2 and scrypt in PHC form, PBKDF2 as passlib and Keycloak-to-PHC write it, and
// Django's own strings. An account imported with one keeps it until its first sign-in, which
// verifies it with its own algorithm and parameters and stores Usher's argon2id instead
// (auth/service.ts). Every parameter is bounded here, at import and again at each verification,
// so no hash can make one sign-in cost more than a second or two of one core, or 256 MiB.
import { argon2, pbkdf2, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import bcrypt from 'bcrypt';

const argon2Async = promisify(argon2);
const pbkdf2Async = promisify(pbkdf2);
const scryptAsync = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  length: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;

const MIB = 1024 * 1024;

/**
 * The most an imported hash may ask for. Each is above what the systems Usher imports from use by
 * default; at the bounds, one verification took 0.5 s (PBKDF2) to 2.1 s (argon2 256 MiB × 2) of a
 * core on a busy 2-core machine, against 0.09 s for Usher's own argon2id (bench/imports.ts
 * measures the defaults' cost).
 */
export const IMPORT_BOUNDS = {
  /** bcrypt's cost is log2 of its rounds: 14 is 16 times Supabase's and Auth0's 10. */
  bcryptCost: { min: 4, max: 14 },
  /**
   * Iterations times the output's blocks (a key longer than the digest is derived block by block,
   * each block the full iteration count): Django 6 uses 1,200,000 × 1, Keycloak's pbkdf2-sha256
   * 600,000 × 2 (a 64-byte key). SHA-512's rounds cost about three SHA-256 rounds.
   */
  pbkdf2Work: { sha1: 3_000_000, sha256: 3_000_000, sha512: 1_000_000 },
  /** 128·N·r bytes of memory (passlib's default ln=16, r=8 is exactly 64 MiB), and p of them in turn. */
  scryptMemoryBytes: 64 * MIB,
  scryptParallelism: 16,
  scryptWorkBytes: 256 * MIB,
  /** argon2's memory in KiB, passes, lanes, and memory × passes (argon2-cffi: 64 MiB × 3). */
  argon2MemoryKiB: 256 * 1024,
  argon2Passes: 16,
  argon2Parallelism: 16,
  argon2Work: 512 * 1024,
  /** Bytes of salt and of hash output, as decoded. */
  salt: { min: 1, max: 64 },
  argon2Salt: { min: 8, max: 64 },
  output: { min: 16, max: 64 },
  /** Characters of the whole string: far above any well-formed one. */
  text: 512,
} as const;

export type ImportedKind =
  | 'bcrypt'
  | 'argon2id'
  | 'argon2i'
  | 'argon2d'
  | 'scrypt'
  | 'pbkdf2-sha1'
  | 'pbkdf2-sha256'
  | 'pbkdf2-sha512';

type Digest = 'sha1' | 'sha256' | 'sha512';
const DIGEST_BYTES: Record<Digest, number> = { sha1: 20, sha256: 32, sha512: 64 };

/** A parsed imported hash: what verifying a password against it needs. */
export type ImportedHash =
  /** `setting`: the first 29 characters ($2b$ for $2y$: the same algorithm), `checksum` the 31 after. */
  | { kind: 'bcrypt'; cost: number; setting: string; checksum: string }
  | {
      kind: 'argon2id' | 'argon2i' | 'argon2d';
      memoryKiB: number;
      passes: number;
      parallelism: number;
      salt: Buffer;
      tag: Buffer;
    }
  | { kind: 'scrypt'; n: number; r: number; p: number; salt: Buffer; tag: Buffer }
  | {
      kind: 'pbkdf2-sha1' | 'pbkdf2-sha256' | 'pbkdf2-sha512';
      digest: Digest;
      iterations: number;
      salt: Buffer;
      tag: Buffer;
    };

export type ParsedImport = { ok: true; hash: ImportedHash } | { ok: false; reason: string };

/**
 * Imported hashes are stored with this mark before the text they came as. It tells them from
 * Usher's own argon2id, which hashes the NFKC form of the password: the other systems hashed the
 * bytes as typed, so an imported `$argon2id$` is verified without normalising. Any marked hash
 * is re-hashed at the first sign-in, whatever its parameters.
 */
export const IMPORTED_MARK = 'imported:';

export const KNOWN_FORMATS =
  "bcrypt ($2a$, $2b$, $2y$), argon2 ($argon2id$, $argon2i$), scrypt ($scrypt$ln=…,r=…,p=…$…) and PBKDF2 ($pbkdf2-sha256$…, $pbkdf2-sha512$…, $pbkdf2$…) in PHC form, or Django's pbkdf2_sha256$…, pbkdf2_sha1$… and argon2$…";

const refuse = (reason: string): ParsedImport => ({ ok: false, reason });

/** Decimal without leading zeros (PHC's encoding), as a safe integer. */
function decimal(text: string): number | undefined {
  if (!/^(0|[1-9][0-9]{0,15})$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

/**
 * PHC's B64 (standard alphabet, no padding); passlib's "adapted" form writes `.` for `+`, and
 * some tools keep the padding, so both are read too. A length of 1 modulo 4 encodes nothing.
 */
function b64(text: string): Buffer | undefined {
  const bare = text.replace(/={1,2}$/, '');
  if (!/^[A-Za-z0-9+/.]+$/.test(bare) || bare.length % 4 === 1) return undefined;
  return Buffer.from(bare.replaceAll('.', '+'), 'base64');
}

function sized(what: string, bytes: Buffer | undefined, bounds: { min: number; max: number }) {
  if (!bytes) return `its ${what} is not base64`;
  if (bytes.length < bounds.min || bytes.length > bounds.max)
    return `its ${what} is ${bytes.length} bytes; ${bounds.min} to ${bounds.max} are accepted`;
  return undefined;
}

const BCRYPT = /^\$2([aby])\$([0-9]{2})\$([./A-Za-z0-9]{22})([./A-Za-z0-9]{31})$/;

function parseBcrypt(text: string): ParsedImport {
  const m = BCRYPT.exec(text);
  if (!m) return refuse('is not a well-formed bcrypt hash ($2b$, two digits of cost, $, 53 characters)');
  const cost = Number(m[2]);
  const { min, max } = IMPORT_BOUNDS.bcryptCost;
  if (cost < min || cost > max)
    return refuse(`bcrypt cost ${cost} is outside ${min} to ${max}, the costs Usher verifies`);
  // $2y$ (PHP) and $2b$ are one algorithm; the bcrypt library knows it as $2b$.
  const minor = m[1] === 'y' ? 'b' : m[1];
  return { ok: true, hash: { kind: 'bcrypt', cost, setting: `$2${minor}$${m[2]}$${m[3]}`, checksum: m[4]! } };
}

const ARGON2 = /^\$(argon2id|argon2i|argon2d)\$(?:v=([0-9]+)\$)?([^$]*)\$([^$]*)\$([^$]*)$/;

function parseArgon2(text: string): ParsedImport {
  const m = ARGON2.exec(text);
  if (!m) return refuse('is not a well-formed argon2 hash ($argon2id$v=19$m=…,t=…,p=…$salt$hash)');
  const kind = m[1] as 'argon2id' | 'argon2i' | 'argon2d';
  if (m[2] !== '19')
    return refuse(
      `is argon2 version ${m[2] === undefined ? '1.0 (no v=)' : `v=${m[2]}`}; only version 1.3 (v=19) is verified`,
    );
  const params = /^m=([0-9]+),t=([0-9]+),p=([0-9]+)$/.exec(m[3]!);
  if (!params)
    return refuse('argon2 parameters must be m=…,t=…,p=… (no keyid or data: Usher holds no key for them)');
  const [memoryKiB, passes, parallelism] = [params[1]!, params[2]!, params[3]!].map(decimal);
  if (memoryKiB === undefined || passes === undefined || parallelism === undefined)
    return refuse('argon2 parameters must be decimal numbers without leading zeros');
  const b = IMPORT_BOUNDS;
  if (parallelism < 1 || parallelism > b.argon2Parallelism)
    return refuse(`argon2 p=${parallelism} is outside 1 to ${b.argon2Parallelism}`);
  if (passes < 1 || passes > b.argon2Passes)
    return refuse(`argon2 t=${passes} is outside 1 to ${b.argon2Passes}`);
  if (memoryKiB < 8 * parallelism || memoryKiB > b.argon2MemoryKiB)
    return refuse(`argon2 m=${memoryKiB} is outside ${8 * parallelism} (8 × p) to ${b.argon2MemoryKiB} KiB`);
  if (memoryKiB * passes > b.argon2Work)
    return refuse(`argon2 m × t = ${memoryKiB * passes} is above ${b.argon2Work} (KiB × passes)`);
  const salt = b64(m[4]!);
  const tag = b64(m[5]!);
  const bad = sized('salt', salt, b.argon2Salt) ?? sized('hash', tag, b.output);
  if (bad) return refuse(`argon2: ${bad}`);
  return { ok: true, hash: { kind, memoryKiB, passes, parallelism, salt: salt!, tag: tag! } };
}

const SCRYPT = /^\$scrypt\$ln=([0-9]+),r=([0-9]+),p=([0-9]+)\$([^$]+)\$([^$]+)$/;

function parseScrypt(text: string): ParsedImport {
  const m = SCRYPT.exec(text);
  if (!m) return refuse('is not a well-formed scrypt hash ($scrypt$ln=…,r=…,p=…$salt$hash)');
  const [ln, r, p] = [m[1]!, m[2]!, m[3]!].map(decimal);
  if (ln === undefined || r === undefined || p === undefined)
    return refuse('scrypt parameters must be decimal numbers without leading zeros');
  const b = IMPORT_BOUNDS;
  if (ln < 1 || ln > 32 || r < 1 || p < 1) return refuse('scrypt needs ln ≥ 1, r ≥ 1 and p ≥ 1');
  const n = 2 ** ln;
  const memory = 128 * n * r;
  if (memory > b.scryptMemoryBytes)
    return refuse(`scrypt 128 × N × r = ${memory / MIB} MiB is above ${b.scryptMemoryBytes / MIB} MiB`);
  if (p > b.scryptParallelism || memory * p > b.scryptWorkBytes)
    return refuse(
      `scrypt p=${p} is above ${b.scryptParallelism}, or 128 × N × r × p above ${b.scryptWorkBytes / MIB} MiB`,
    );
  const salt = b64(m[4]!);
  const tag = b64(m[5]!);
  const bad = sized('salt', salt, b.salt) ?? sized('hash', tag, b.output);
  if (bad) return refuse(`scrypt: ${bad}`);
  return { ok: true, hash: { kind: 'scrypt', n, r, p, salt: salt!, tag: tag! } };
}

function pbkdf2Hash(digest: Digest, iterations: number, salt: Buffer, tag: Buffer): ParsedImport {
  const blocks = Math.ceil(tag.length / DIGEST_BYTES[digest]);
  const limit = IMPORT_BOUNDS.pbkdf2Work[digest];
  if (iterations < 1) return refuse('PBKDF2 needs at least 1 iteration');
  if (iterations * blocks > limit)
    return refuse(
      `PBKDF2-${digest.toUpperCase()} ${iterations} iterations${blocks > 1 ? ` × ${blocks} blocks` : ''} is above ${limit.toLocaleString('en')}`,
    );
  return { ok: true, hash: { kind: `pbkdf2-${digest}`, digest, iterations, salt, tag } };
}

// passlib's `$pbkdf2-sha256$29000$salt$hash` and the PHC form `$pbkdf2-sha256$i=29000[,l=64]$…`.
const PBKDF2 = /^\$pbkdf2(-sha256|-sha512)?\$(?:i=)?([0-9]+)(?:,l=([0-9]+))?\$([^$]+)\$([^$]+)$/;

function parsePbkdf2(text: string): ParsedImport {
  const m = PBKDF2.exec(text);
  if (!m) return refuse('is not a well-formed PBKDF2 hash ($pbkdf2-sha256$i=…$salt$hash)');
  const digest: Digest = m[1] === '-sha256' ? 'sha256' : m[1] === '-sha512' ? 'sha512' : 'sha1';
  const iterations = decimal(m[2]!);
  if (iterations === undefined)
    return refuse('PBKDF2 iterations must be a decimal number without leading zeros');
  const salt = b64(m[4]!);
  const tag = b64(m[5]!);
  const bad = sized('salt', salt, IMPORT_BOUNDS.salt) ?? sized('hash', tag, IMPORT_BOUNDS.output);
  if (bad) return refuse(`PBKDF2: ${bad}`);
  if (m[3] !== undefined && decimal(m[3]) !== tag!.length)
    return refuse(`PBKDF2 l=${m[3]} does not match the hash's ${tag!.length} bytes`);
  return pbkdf2Hash(digest, iterations, salt!, tag!);
}

// Django: pbkdf2_sha256$<iterations>$<salt text>$<standard base64 of the key, padded>.
const DJANGO_PBKDF2 =
  /^pbkdf2_(sha256|sha1)\$([0-9]+)\$([\x21-\x23\x25-\x7e]{1,128})\$([A-Za-z0-9+/]+={0,2})$/;

function parseDjango(text: string): ParsedImport {
  // Django's Argon2PasswordHasher: "argon2" before argon2-cffi's PHC string.
  if (text.startsWith('argon2$argon2')) return parseArgon2(text.slice('argon2'.length));
  const m = DJANGO_PBKDF2.exec(text);
  if (!m) return refuse('is not a well-formed Django hash (pbkdf2_sha256$iterations$salt$hash)');
  const iterations = decimal(m[2]!);
  if (iterations === undefined)
    return refuse('Django iterations must be a decimal number without leading zeros');
  const tag = Buffer.from(m[4]!, 'base64');
  const bad = sized('hash', tag, IMPORT_BOUNDS.output);
  if (bad) return refuse(`Django: ${bad}`);
  // Django hashes with its salt's text as the salt's bytes.
  return pbkdf2Hash(m[1] as Digest, iterations, Buffer.from(m[3]!, 'utf8'), tag);
}

/** What kind of hash the text is, with its parameters checked against IMPORT_BOUNDS; or why not. */
export function parseImportedHash(text: string): ParsedImport {
  if (text.length > IMPORT_BOUNDS.text)
    return refuse(`is longer than ${IMPORT_BOUNDS.text} characters, more than any hash Usher verifies`);
  if (text.startsWith('$2')) return parseBcrypt(text);
  if (text.startsWith('$argon2')) return parseArgon2(text);
  if (text.startsWith('$scrypt$')) return parseScrypt(text);
  if (text.startsWith('$pbkdf2$') || text.startsWith('$pbkdf2-')) return parsePbkdf2(text);
  if (text.startsWith('pbkdf2_') || text.startsWith('argon2$')) return parseDjango(text);
  return refuse(`is not a format Usher verifies; it takes ${KNOWN_FORMATS}`);
}

/** The parsed hash of a stored imported one (IMPORTED_MARK first); undefined for any other text. */
export function storedImport(stored: string): ImportedHash | undefined {
  if (!stored.startsWith(IMPORTED_MARK)) return undefined;
  const parsed = parseImportedHash(stored.slice(IMPORTED_MARK.length));
  return parsed.ok ? parsed.hash : undefined;
}

const same = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b);

/**
 * Whether `password` (as typed: the other system hashed its UTF-8 bytes, not a normalised form)
 * matches. Each algorithm runs on libuv's threadpool (bcrypt in its native binding), never on the
 * event loop; the result is compared in constant time. The caller holds a hash slot.
 */
export async function verifyImported(hash: ImportedHash, password: string): Promise<boolean> {
  switch (hash.kind) {
    case 'bcrypt': {
      // Hashed again with the stored setting, then compared here in constant time.
      const again = await bcrypt.hash(password, hash.setting);
      return same(Buffer.from(again.slice(29)), Buffer.from(hash.checksum));
    }
    case 'argon2id':
    case 'argon2i':
    case 'argon2d': {
      const tag = await argon2Async(hash.kind, {
        message: password,
        nonce: hash.salt,
        memory: hash.memoryKiB,
        passes: hash.passes,
        parallelism: hash.parallelism,
        tagLength: hash.tag.length,
      });
      return same(tag, hash.tag);
    }
    case 'scrypt': {
      const { n, r, p } = hash;
      // Node refuses above 32 MiB unless told: the bounds above are the real limit.
      const maxmem = 128 * r * (n + p) + 2 * MIB;
      return same(await scryptAsync(password, hash.salt, hash.tag.length, { N: n, r, p, maxmem }), hash.tag);
    }
    default:
      return same(
        await pbkdf2Async(password, hash.salt, hash.iterations, hash.tag.length, hash.digest),
        hash.tag,
      );
  }
}
