import { normalizePassword } from './hasher.ts';

let loaded: Promise<ReadonlySet<string>> | undefined;

/**
 * The common-password list of @zxcvbn-ts/language-common (about 49,000 leaked passwords, most
 * common first), normalised like every password check: NFKC, then lower case. Loaded on first use,
 * so start-up does not pay for decompressing it.
 */
function commonPasswords(): Promise<ReadonlySet<string>> {
  loaded ??= import('@zxcvbn-ts/language-common').then(
    ({ dictionary }) =>
      new Set(dictionary['passwords-common'].map((p) => normalizePassword(String(p)).toLowerCase())),
  );
  return loaded;
}

/** Compared trimmed, NFKC-normalised and case-folded, so " Password1" is as common as "password1". */
export async function isCommonPassword(password: string): Promise<boolean> {
  return (await commonPasswords()).has(normalizePassword(password).trim().toLowerCase());
}
