import { randomBytes } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import type { AddressLimits } from '../kernel/limits.ts';
import { type Reauthentication, signedInRecently } from '../kernel/reauth.ts';
import type { AccountMail, AccountMailRepositories } from '../mail/account-mail.ts';
import type { MailService } from '../mail/service.ts';
import type { ActiveSession, Clock } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import type { Proof, SigninClient, SigninCore, SigninOutcome } from '../signin/core.ts';
import { toUser, type UsersRepository } from '../users/index.ts';
import type { User } from '../users/user.ts';
import { mailPasskeyNotice, passkeysMails } from './mails.ts';
import { CredentialTakenError, type PasskeysRepository, type PasskeyView } from './repository.ts';

let webauthn: Promise<typeof import('@simplewebauthn/server')> | undefined;
/**
 * The WebAuthn library, loaded on the first passkey request rather than at start: with what it
 * brings (X.509, ASN.1, CBOR) it holds several MiB that a server without passkey traffic never
 * uses (docs/benchmarks.md, memory).
 */
function library(): Promise<typeof import('@simplewebauthn/server')> {
  webauthn ??= import('@simplewebauthn/server');
  return webauthn;
}

/** How many passkeys a list shows (the oldest): far more than anyone registers. */
export const PASSKEY_LIST_MAX = 100;

/** A challenge is good for this long, once. */
export const CHALLENGE_TTL_MS = 5 * 60 * 1000;
const RP_NAME = 'Usher';
const DEFAULT_NAME = 'Passkey';
// COSE ids: EdDSA, ES256, RS256. Named rather than the library's default, which adds ML-DSA-44
// where Node has it and so prints an experimental-feature warning at each registration.
const ALGORITHMS = [-8, -7, -257];

export interface RelyingParty {
  /** The host name of PUBLIC_URL. */
  id: string;
  /** PUBLIC_URL's origin: what the browser must report in clientDataJSON. */
  origin: string;
}

/** The relying party of a PUBLIC_URL: its host name (no port) and its origin. */
export function relyingParty(publicUrl: string): RelyingParty {
  const url = new URL(publicUrl);
  return { id: url.hostname, origin: url.origin };
}

/** Why a registration was refused, for the 400's message. */
export class RegistrationRefused extends Error {}

export interface PasskeyTransactionRepositories extends AccountMailRepositories {
  passkeys: PasskeysRepository;
  journal: Journal;
}

/**
 * The WebAuthn user handle of a user: their id as decimal text. Not personal data, and the same
 * for every registration of one account, so an authenticator keeps one passkey per account.
 */
function userHandle(userId: bigint): Uint8Array<ArrayBuffer> {
  return new TextEncoder().encode(String(userId));
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The challenge the browser signed, read from clientDataJSON; undefined when unreadable. */
function clientChallenge(response: { response?: { clientDataJSON?: unknown } }): string | undefined {
  const encoded = response.response?.clientDataJSON;
  if (typeof encoded !== 'string' || encoded.length > 8192) return undefined;
  try {
    const data: unknown = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
    const challenge = (data as { challenge?: unknown } | null)?.challenge;
    // Only what a challenge of ours can look like reaches the database (PostgreSQL cannot even
    // compare text holding U+0000).
    return typeof challenge === 'string' && BASE64URL.test(challenge) && challenge.length <= 512
      ? challenge
      : undefined;
  } catch {
    return undefined;
  }
}

export class PasskeyService {
  readonly #passkeys: PasskeysRepository;
  readonly #users: UsersRepository;
  readonly #transaction: InTransaction<PasskeyTransactionRepositories>;
  readonly #rp: RelyingParty;
  readonly #core: SigninCore;
  readonly #now: Clock;
  readonly #optionsLimit: Pick<AddressLimits, 'take'>;
  readonly #accountMail: AccountMail;
  readonly #mail: Pick<MailService, 'wake'>;
  readonly #reauth: Reauthentication;

  constructor(options: {
    accountMail: AccountMail;
    mail: Pick<MailService, 'wake'>;
    reauth: Reauthentication;
    passkeys: PasskeysRepository;
    users: UsersRepository;
    /** Where a passkey's sign-in ends, like every method's. */
    core: SigninCore;
    transaction: InTransaction<PasskeyTransactionRepositories>;
    relyingParty: RelyingParty;
    /** The per-address limit on sign-in options (kernel/limits.ts). */
    optionsLimit: Pick<AddressLimits, 'take'>;
    now: Clock;
  }) {
    this.#optionsLimit = options.optionsLimit;
    this.#passkeys = options.passkeys;
    this.#users = options.users;
    this.#core = options.core;
    this.#transaction = options.transaction;
    this.#rp = options.relyingParty;
    this.#now = options.now;
    this.#accountMail = options.accountMail;
    this.#mail = options.mail;
    this.#reauth = options.reauth;
  }

  /** Adding a passkey needs a recent sign-in (FRESH_SIGNIN_MS): a password alone does not do. */
  #requireFreshSignin(signedInAt: Date): void {
    if (!signedInRecently(signedInAt, this.#now())) {
      throw new AppError(
        'FORBIDDEN',
        'Adding a passkey needs a recent sign-in: sign in again, then add it within 10 minutes.',
      );
    }
  }

  get relyingParty(): RelyingParty {
    return this.#rp;
  }

  /** Creation options for a new passkey of `user`, leaving out the ones they have. */
  async registrationOptions(user: User, signedInAt: Date): Promise<PublicKeyCredentialCreationOptionsJSON> {
    this.#requireFreshSignin(signedInAt);
    const existing = await this.#passkeys.credentialsOf(user.id);
    const { generateRegistrationOptions } = await library();
    const options = await generateRegistrationOptions({
      rpName: RP_NAME,
      rpID: this.#rp.id,
      userID: userHandle(user.id),
      userName: user.email,
      userDisplayName: user.name,
      timeout: CHALLENGE_TTL_MS,
      attestationType: 'none',
      supportedAlgorithmIDs: ALGORITHMS,
      excludeCredentials: existing,
      // Discoverable, so the passkey alone signs in (no email typed first). User verification
      // required, as at sign-in: a credential made without it could never sign in, so the browser
      // is told at once (it asks a security key for a PIN, or offers only authenticators that
      // verify) rather than the user learning it from a refused sign-in later.
      authenticatorSelection: {
        residentKey: 'required',
        requireResidentKey: true,
        userVerification: 'required',
      },
    });
    await this.#passkeys.saveChallenge(
      options.challenge,
      'register',
      user.id,
      this.#now() + CHALLENGE_TTL_MS,
    );
    return options;
  }

  /** Verifies the browser's new credential against a challenge issued to this user, and keeps it. */
  /** `name`: already checked (users' name rules); a default when absent. */
  async register(
    user: User,
    signedInAt: Date,
    credential: RegistrationResponseJSON,
    name: string | undefined,
  ): Promise<PasskeyView> {
    this.#requireFreshSignin(signedInAt);
    const userId = user.id;
    const challenge = clientChallenge(credential);
    // Spent before verifying, so a refused attempt cannot be retried with the same challenge.
    if (!challenge || !(await this.#passkeys.consumeChallenge(challenge, 'register', userId, this.#now())))
      throw new RegistrationRefused('the challenge is unknown, used or expired: ask for new options');
    const { verifyRegistrationResponse: verify } = await library();
    let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
    try {
      verified = await verify({
        response: credential,
        expectedChallenge: challenge,
        expectedOrigin: this.#rp.origin,
        expectedRPID: this.#rp.id,
        // Checked below instead, so that this refusal can say why.
        requireUserVerification: false,
        supportedAlgorithmIDs: ALGORITHMS,
      });
    } catch {
      verified = { verified: false };
    }
    if (!verified.verified) throw new RegistrationRefused('it could not be verified');
    // A passkey made without user verification could never sign in (signIn requires it): not kept.
    if (!verified.registrationInfo.userVerified)
      throw new RegistrationRefused(
        'the authenticator did not verify you (a PIN, fingerprint or face lock): a passkey must; set one up on it and try again',
      );
    const { credential: made } = verified.registrationInfo;
    const view: PasskeyView = {
      id: randomBytes(16).toString('hex'),
      name: name ?? DEFAULT_NAME,
      createdAt: new Date(this.#now()),
      lastUsedAt: null,
    };
    try {
      // The passkey and the notice to the account's address commit together: its owner learns of
      // every passkey added, whoever added it.
      await this.#transaction(async (repos) => {
        await repos.passkeys.insert({
          id: view.id,
          credentialId: made.id,
          userId,
          name: view.name,
          publicKey: made.publicKey,
          counter: made.counter,
          transports: made.transports ?? credential.response.transports ?? [],
          createdAt: view.createdAt,
        });
        await mailPasskeyNotice(this.#accountMail, repos, passkeysMails.passkeyAdded, user, view.name);
        await repos.journal.record({
          type: 'mfa.passkey_added',
          userId,
          details: { passkeyId: view.id, name: view.name },
        });
      });
    } catch (error) {
      if (error instanceof CredentialTakenError) throw new RegistrationRefused('it is already registered');
      throw error;
    }
    this.#mail.wake();
    return view;
  }

  list(userId: bigint): Promise<PasskeyView[]> {
    return this.#passkeys.list(userId, PASSKEY_LIST_MAX);
  }

  /**
   * Removes one of the actor's passkeys, after re-authentication (a recent sign-in or
   * `currentPassword`): a stolen session alone must not take the owner's ways in away. The notice
   * to the account's address commits with the removal. False when the actor has no such passkey.
   */
  async delete(
    actor: ActiveSession,
    id: string,
    currentPassword: string | undefined,
    client: { address: string },
  ): Promise<boolean> {
    await this.#reauth.confirm(actor, currentPassword, client.address, 'Removing a passkey');
    const user = toUser(actor.owner);
    const removed = await this.#transaction(async (repos) => {
      const name = await repos.passkeys.delete(user.id, id);
      if (name === undefined) return false;
      await mailPasskeyNotice(this.#accountMail, repos, passkeysMails.passkeyRemoved, user, name);
      await repos.journal.record({
        type: 'mfa.passkey_removed',
        userId: user.id,
        details: { passkeyId: id, name },
      });
      return true;
    });
    if (removed) this.#mail.wake();
    return removed;
  }

  /** Request options for a passwordless sign-in: no allowCredentials, any discoverable passkey. */
  async signinOptions(client: { address: string }): Promise<PublicKeyCredentialRequestOptionsJSON> {
    // Each ask stores a challenge: counted per client address before anything is stored.
    await this.#optionsLimit.take(client.address);
    const { generateAuthenticationOptions } = await library();
    const options = await generateAuthenticationOptions({
      rpID: this.#rp.id,
      allowCredentials: [],
      // A passkey signs in alone, with no password and no TOTP code: only possession plus the
      // authenticator's PIN or biometric makes that two factors. A touch alone is one.
      userVerification: 'required',
      timeout: CHALLENGE_TTL_MS,
    });
    await this.#passkeys.saveChallenge(options.challenge, 'signin', null, this.#now() + CHALLENGE_TTL_MS);
    return options;
  }

  /**
   * Passkey sign-in, as a method of the sign-in core (signin/core.ts). Throttled by address only:
   * a failed assertion guesses nothing (the signature cannot be guessed), so counting it against
   * an account would only hand anyone a way to lock that account. No second factor is asked: a
   * passkey with user verification is two factors already.
   */
  signIn(credential: AuthenticationResponseJSON, client: SigninClient): Promise<SigninOutcome> {
    return this.#core.run(
      { name: 'passkey', throttle: { address: true }, prove: () => this.#prove(credential) },
      client,
    );
  }

  /**
   * Checks an assertion. The challenge is spent first (whatever follows), the signature is
   * checked against the stored key, the counter must grow when the authenticator keeps one, and
   * the new counter is written only if no other use got there first. The counter is written
   * before the session is granted: a grant that then fails (the account went) leaves the counter
   * moved on, which refuses nothing a later assertion could need.
   */
  async #prove(credential: AuthenticationResponseJSON): Promise<Proof> {
    const fail = (userId?: bigint): Proof => ({ ok: false, userId });
    const challenge = clientChallenge(credential);
    if (!challenge || !(await this.#passkeys.consumeChallenge(challenge, 'signin', null, this.#now())))
      return fail();
    if (typeof credential.id !== 'string' || !BASE64URL.test(credential.id) || credential.id.length > 1024)
      return fail();
    const stored = await this.#passkeys.findByCredentialId(credential.id);
    if (!stored) return fail();
    const handle = credential.response?.userHandle;
    if (handle !== undefined && handle !== Buffer.from(userHandle(stored.userId)).toString('base64url'))
      return fail(stored.userId);
    const { verifyAuthenticationResponse } = await library();
    let newCounter: number;
    try {
      const result = await verifyAuthenticationResponse({
        response: credential,
        expectedChallenge: challenge,
        expectedOrigin: this.#rp.origin,
        expectedRPID: this.#rp.id,
        credential: {
          id: stored.credentialId,
          publicKey: stored.publicKey,
          counter: stored.counter,
          transports: stored.transports,
        },
        // The UV flag in the signed authenticator data, whatever the options said: a client can
        // ignore them, and an authenticator that only tests presence must not sign in.
        requireUserVerification: true,
      });
      if (!result.verified) return fail(stored.userId);
      newCounter = result.authenticationInfo.newCounter;
    } catch {
      // Bad signature, wrong origin or RP, no user verification, a counter that did not grow,
      // malformed data: all alike.
      return fail(stored.userId);
    }
    const user = await this.#users.findById(stored.userId);
    if (!user) return fail();
    if (!(await this.#passkeys.recordUse(stored.id, stored.counter, newCounter, new Date(this.#now()))))
      return fail(user.id);
    return { ok: true, user, secondFactor: { by: 'method' } };
  }

  purgeExpired(): Promise<void> {
    return this.#passkeys.deleteExpiredChallenges(this.#now());
  }
}
