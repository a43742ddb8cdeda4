// passwords/ offers: the password rules and bounds, the hasher, imported hashes, the accounts' passwords.
export { PASSWORD_INPUT_MAX, type PasswordHasher } from './hasher.ts';
export { parseImportedHash } from './imported.ts';
export { checkPassword, PASSWORD_MAX } from './policy.ts';
export { PasswordCredentialsRepository } from './repository.ts';
