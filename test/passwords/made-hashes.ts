// Password hashes as the systems Usher imports from make them (not a test file): bcrypt by
// bcryptjs (the bcrypt of Node systems; Supabase's and Auth0's are the same $2a$/$2b$ format),
// argon2 by node:crypto (what argon2-cffi, Keycloak and Django write, in PHC form), scrypt and
// PBKDF2 by node:crypto written as passlib writes them, and published vectors: PHP's manual,
// passlib's documentation and Django's own tests.
import { argon2Sync, pbkdf2Sync, randomBytes, scryptSync } from 'node:crypto';
import bcryptjs from 'bcryptjs';

/** PHC's B64: standard base64 without padding. */
export const b64 = (bytes: Buffer) => bytes.toString('base64').replace(/=+$/, '');
/** passlib's "adapted" base64: `.` for `+`, no padding. */
const ab64 = (bytes: Buffer) => b64(bytes).replaceAll('+', '.');

export interface MadeHash {
  /** What it is and who made it. */
  label: string;
  password: string;
  hash: string;
}

export function argon2Phc(
  variant: 'argon2id' | 'argon2i' | 'argon2d',
  password: string,
  params: { m: number; t: number; p: number },
  salt = randomBytes(16),
): string {
  const tag = argon2Sync(variant, {
    message: password,
    nonce: salt,
    memory: params.m,
    passes: params.t,
    parallelism: params.p,
    tagLength: 32,
  });
  return `$${variant}$v=19$m=${params.m},t=${params.t},p=${params.p}$${b64(salt)}$${b64(tag)}`;
}

export function scryptPhc(password: string, ln: number, r = 8, p = 1, salt = randomBytes(16)): string {
  const key = scryptSync(password, salt, 32, { N: 2 ** ln, r, p, maxmem: 256 * 1024 * 1024 });
  return `$scrypt$ln=${ln},r=${r},p=${p}$${b64(salt)}$${b64(key)}`;
}

export function pbkdf2Passlib(
  digest: 'sha1' | 'sha256' | 'sha512',
  password: string,
  rounds: number,
  salt = randomBytes(16),
): string {
  const key = pbkdf2Sync(password, salt, rounds, { sha1: 20, sha256: 32, sha512: 64 }[digest], digest);
  const id = digest === 'sha1' ? 'pbkdf2' : `pbkdf2-${digest}`;
  return `$${id}$${rounds}$${ab64(salt)}$${ab64(key)}`;
}

/** One of every kind Usher verifies, each with the password that matches it. */
export function madeHashes(): MadeHash[] {
  const bcryptA = bcryptjs.genSaltSync(8).replace(/^\$2b\$/, '$2a$');
  const keycloakSalt = randomBytes(16);
  return [
    {
      label: 'bcrypt $2b$ cost 10 (bcryptjs)',
      password: 'supabase-pass-1',
      hash: bcryptjs.hashSync('supabase-pass-1', 10),
    },
    {
      label: 'bcrypt $2a$ cost 8 (bcryptjs)',
      password: 'auth0-pass-2',
      hash: bcryptjs.hashSync('auth0-pass-2', bcryptA),
    },
    {
      // https://www.php.net/manual/en/function.password-verify.php, example #1.
      label: "bcrypt $2y$ (PHP manual's password_verify example)",
      password: 'rasmuslerdorf',
      hash: '$2y$10$.vGA1O9wmRjrwAVXD98HNOgsNpDczlqm3Jq7KnEd1rVAGv3Fykk1a',
    },
    {
      label: "argon2id (node:crypto, Keycloak's defaults m=7168,t=5,p=1)",
      password: 'keycloak-pass-3',
      hash: argon2Phc('argon2id', 'keycloak-pass-3', { m: 7168, t: 5, p: 1 }),
    },
    {
      label: 'argon2i (node:crypto, m=4096,t=3,p=2)',
      password: 'argon2i-pass-4',
      hash: argon2Phc('argon2i', 'argon2i-pass-4', { m: 4096, t: 3, p: 2 }),
    },
    {
      label: 'scrypt ln=14,r=8,p=1 (node:crypto, passlib form)',
      password: 'scrypt-pass-5',
      hash: scryptPhc('scrypt-pass-5', 14),
    },
    {
      // https://passlib.readthedocs.io/en/stable/lib/passlib.hash.scrypt.html (the usage example).
      label: "scrypt ln=8 (passlib's documentation example)",
      password: 'password',
      hash: '$scrypt$ln=8,r=8,p=1$WKs1xljLudd6z9kbY0wpJQ$yCR4iDZYDKv+iEJj6yHY0lv/epnfB6f/w1EbXrsJOuQ',
    },
    {
      label: 'PBKDF2-SHA256 in PHC form i= (node:crypto)',
      password: 'pbkdf2-pass-6',
      hash: (() => {
        const salt = randomBytes(16);
        return `$pbkdf2-sha256$i=100000$${b64(salt)}$${b64(pbkdf2Sync('pbkdf2-pass-6', salt, 100_000, 32, 'sha256'))}`;
      })(),
    },
    {
      // https://passlib.readthedocs.io/en/stable/lib/passlib.hash.pbkdf2_digest.html (the usage example).
      label: "PBKDF2-SHA256 (passlib's documentation example)",
      password: 'password',
      hash: '$pbkdf2-sha256$6400$0ZrzXitFSGltTQnBWOsdAw$Y11AchqV4b0sUisdZd0Xr97KWoymNE0LNNrnEgY4H9M',
    },
    {
      label: 'PBKDF2-SHA512 (node:crypto, passlib form)',
      password: 'pbkdf2-512-pass-7',
      hash: pbkdf2Passlib('sha512', 'pbkdf2-512-pass-7', 25_000),
    },
    {
      label: 'PBKDF2-SHA1 $pbkdf2$ (node:crypto, passlib form)',
      password: 'pbkdf2-1-pass-8',
      hash: pbkdf2Passlib('sha1', 'pbkdf2-1-pass-8', 131_000),
    },
    {
      // What the README's Keycloak query builds from credential.secret_data and credential_data:
      // 27,500 iterations and a 512-bit key, salt and key in padded base64.
      label: 'Keycloak pbkdf2-sha256 (27,500 iterations, 64-byte key)',
      password: 'keycloak-pbkdf2-9',
      hash: `$pbkdf2-sha256$i=27500$${keycloakSalt.toString('base64')}$${pbkdf2Sync('keycloak-pbkdf2-9', keycloakSalt, 27_500, 64, 'sha256').toString('base64')}`,
    },
    {
      // django/django tests/auth_tests/test_hashers.py, TestUtilsHashPass.test_pbkdf2 (commit
      // 02dbf1667c6da61ea9346f7c9f174a158b896811): make_password("lètmein", "seasalt", "pbkdf2_sha256").
      label: "Django pbkdf2_sha256 (Django's test vector)",
      password: 'lètmein',
      hash: 'pbkdf2_sha256$390000$seasalt$8xBlGd3jVgvJ+92hWPxi5ww0uuAuAnKgC45eudxro7c=',
    },
    {
      // django/django tests/auth_tests/test_hashers.py, test_low_level_pbkdf2_sha1 (commit
      // d7087c398d7234b0a49417ce9409cd6c7807e86f): PBKDF2SHA1PasswordHasher().encode("lètmein", "seasalt2").
      label: "Django pbkdf2_sha1 (Django's test vector)",
      password: 'lètmein',
      hash: 'pbkdf2_sha1$30000$seasalt2$pMzU1zNPcydf6wjnJFbiVKwgULc=',
    },
    {
      // Django's Argon2PasswordHasher stores "argon2" before argon2-cffi's PHC string.
      label: 'Django argon2 (node:crypto, in the argon2$ form)',
      password: 'django-argon-10',
      hash: `argon2${argon2Phc('argon2id', 'django-argon-10', { m: 19_456, t: 2, p: 2 })}`,
    },
  ];
}
