// Sign-in with a provider, as a method of the sign-in core: a provider proves who is there, and
// the core applies the throttle, the account rules, the second factor (a ticket in the browser, a
// code for native apps), the session and the audit. What is this feature's own: the state of a
// sign-in under way, and which account an identity is, by (provider, issuer, subject), never by
// email alone (CONTRACT "Sign in with a provider").
import { createHash, randomBytes } from 'node:crypto';
import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import { signedInRecently } from '../kernel/reauth.ts';
import type { AccountMail, AccountMailRepositories } from '../mail/account-mail.ts';
import { recipient } from '../mail/index.ts';
import type { MailService } from '../mail/service.ts';
import type { PasskeysRepository } from '../passkeys/repository.ts';
import type { PasswordCredentialsRepository } from '../passwords/repository.ts';
import type { SigninClient, SigninCore, SigninOutcome } from '../signin/core.ts';
import type { TotpFactor } from '../totp/repository.ts';
import type { EmailProven, EmailProvenRepositories } from '../users/email-proven.ts';
import {
  checkEmail,
  checkName,
  EmailTakenError,
  emailKey,
  mailVerification,
  NAME_MAX,
  type User,
  type UsersRepository,
  userData,
  usersMails,
} from '../users/index.ts';
import {
  type IdentitiesRepository,
  type Identity,
  type IdentityKey,
  IdentityTakenError,
} from './identity-repository.ts';
import { oauthMails } from './mails.ts';
import {
  newChecks,
  type Provider,
  ProviderDenied,
  type ProviderProfile,
  type Providers,
  reasonOf,
  TokenRejected,
} from './providers.ts';
import type { OAuthStatesRepository, PendingSignin } from './state-repository.ts';

/** A provider sign-in's refusal, by the contract's code; `reason` is for the log only. */
export type OAuthRefusalCode =
  | 'OAUTH_FAILED'
  | 'OAUTH_DENIED'
  | 'ACCOUNT_EXISTS'
  | 'IDENTITY_TAKEN'
  | 'SIGNUP_CLOSED';
export class OAuthRefusal extends Error {
  readonly code: OAuthRefusalCode;
  readonly reason: string;
  readonly userId: bigint | undefined;
  constructor(code: OAuthRefusalCode, reason: string, userId?: bigint) {
    super(`${code}: ${reason}`);
    this.code = code;
    this.reason = reason;
    this.userId = userId;
    this.name = 'OAuthRefusal';
  }
}

/** CONTRACT: the state lives 10 minutes. */
export const STATE_TTL_MS = 10 * 60 * 1000;
/** 256 random bits, base64url: the only form of state or browser binding looked up. */
const TOKEN_FORM = /^[A-Za-z0-9_-]{43}$/;
const digestOf = (token: string) => createHash('sha256').update(token).digest('hex');
const randomToken = () => randomBytes(32).toString('base64url');

export interface OAuthRepositories
  extends AccountMailRepositories,
    Pick<EmailProvenRepositories, 'emailProofs'> {
  users: UsersRepository;
  identities: IdentitiesRepository;
  /** Whether the account has a password and passkeys, for an unlink (the account's other ways in). */
  passwords: Pick<PasswordCredentialsRepository, 'existsHeld'>;
  passkeys: Pick<PasskeysRepository, 'countHeld'>;
  journal: Journal;
}

/** How many ways an account has to sign in besides one identity (LAST_SIGNIN_METHOD's count). */
export interface OtherMethods {
  password: boolean;
  passkeys: number;
  identities: number;
}

/**
 * The account's other ways in, read under locks held until the transaction ends (PostgreSQL): the
 * account's row first (so two unlinks run one after the other), then its password and passkey
 * rows (so a passkey removed at the same moment is either counted gone or waits for this commit).
 * Undefined when there is no such account.
 */
async function otherMethods(
  repos: Pick<OAuthRepositories, 'users' | 'identities' | 'passwords' | 'passkeys'>,
  userId: bigint,
  exceptId: string,
  /** The providers configured now: an identity of one no longer configured cannot sign in. */
  providers: readonly string[],
): Promise<OtherMethods | undefined> {
  if (!(await repos.users.lock(userId))) return undefined;
  const identities = await repos.identities.countOthers(userId, exceptId, providers);
  return {
    password: await repos.passwords.existsHeld(userId),
    passkeys: await repos.passkeys.countHeld(userId),
    identities,
  };
}

export interface OAuthServiceDeps {
  providers: Providers;
  states: OAuthStatesRepository;
  identities: IdentitiesRepository;
  users: UsersRepository;
  core: SigninCore;
  transaction: InTransaction<OAuthRepositories>;
  accountMail: AccountMail;
  mail: Pick<MailService, 'wake'>;
  /**
   * The rule of a proven email (users/email-proven.ts): a new account's email its provider verified,
   * and identities left unproven by an earlier proof.
   */
  emailProven: EmailProven;
  /** The account's TOTP factor, for the native route's code. */
  factorOf(userId: bigint): Promise<TotpFactor | undefined>;
  /** OAUTH_SIGNUP. */
  signup: boolean;
  /** Starts per client address (each stores a state). */
  startLimit: { take(address: string): Promise<void> };
  now: () => number;
}

export class OAuthService {
  readonly #d: OAuthServiceDeps;
  constructor(deps: OAuthServiceDeps) {
    this.#d = deps;
  }

  /** A session signed in recently enough to link or unlink, by this service's clock. */
  isFresh(signedInAt: Date): boolean {
    return signedInRecently(signedInAt, this.#d.now());
  }

  get providers(): Providers {
    return this.#d.providers;
  }

  /** A browser binding for a new sign-in: the one the browser has, if it is well-formed, else a new one. */
  binding(sent: string | undefined): string {
    return sent !== undefined && TOKEN_FORM.test(sent) ? sent : randomToken();
  }

  /**
   * Starts a sign-in: the state, nonce and PKCE verifier are kept server-side (the state by its
   * digest), bound to the browser's binding; the provider's authorization URL is answered.
   */
  async start(
    provider: Provider,
    request: {
      redirectTo: string;
      intent: 'signin' | 'link';
      userId: bigint | undefined;
      binding: string;
      address: string;
    },
  ): Promise<URL> {
    await this.#d.startLimit.take(request.address);
    const checks = newChecks();
    const url = await provider.authorizationUrl(checks).catch((error: unknown) => {
      throw new OAuthRefusal('OAUTH_FAILED', reasonOf(error));
    });
    await this.#d.states.create(
      digestOf(checks.state),
      {
        provider: provider.id,
        bindingDigest: digestOf(request.binding),
        codeVerifier: checks.codeVerifier,
        nonce: checks.nonce,
        redirectTo: request.redirectTo,
        intent: request.intent,
        userId: request.userId,
      },
      this.#d.now() + STATE_TTL_MS,
    );
    return url;
  }

  /**
   * The callback's state: taken (single-use) whatever else is wrong, and given back only for
   * this provider and the browser it was started in. Undefined: 400 INVALID_TOKEN.
   */
  async takeState(
    provider: Provider,
    state: string | null,
    binding: string | undefined,
  ): Promise<PendingSignin | undefined> {
    if (state === null || !TOKEN_FORM.test(state)) return undefined;
    const pending = await this.#d.states.take(digestOf(state), this.#d.now());
    if (!pending || pending.provider !== provider.id) return undefined;
    if (binding === undefined || !TOKEN_FORM.test(binding) || digestOf(binding) !== pending.bindingDigest)
      return undefined;
    return pending;
  }

  /** The provider's answer, checked by the library; its tokens go no further than this call. */
  async #profile(
    provider: Provider,
    response: URLSearchParams,
    pending: PendingSignin,
  ): Promise<ProviderProfile> {
    // The state was taken by this very value (takeState), so the library's own comparison holds.
    const state = response.get('state')!;
    try {
      return await provider.callback(response, {
        state,
        nonce: pending.nonce,
        codeVerifier: pending.codeVerifier,
      });
    } catch (error) {
      if (error instanceof ProviderDenied)
        throw new OAuthRefusal('OAUTH_DENIED', 'cancelled at the provider');
      throw new OAuthRefusal('OAUTH_FAILED', reasonOf(error));
    }
  }

  /**
   * A browser's sign-in at the callback, through the core: the provider is asked only once the
   * address's throttle let the attempt through. An account with TOTP gets a ticket.
   */
  signIn(
    provider: Provider,
    response: URLSearchParams,
    pending: PendingSignin,
    client: SigninClient,
    /** The browser's Accept-Language: the language of an account it makes. */
    acceptLanguage?: string | undefined,
  ): Promise<SigninOutcome> {
    return this.#d.core.run(
      {
        name: 'oauth',
        throttle: { address: true },
        prove: async () => {
          const profile = await this.#profile(provider, response, pending);
          const { user, proven } = await this.#accountFor(provider, profile, acceptLanguage);
          return { ok: true, user, secondFactor: { by: 'ticket' }, needsVerifiedEmail: !proven };
        },
      },
      client,
    );
  }

  /** `intent=link` at the callback: the identity joins the account that started it. */
  async link(
    provider: Provider,
    response: URLSearchParams,
    pending: PendingSignin,
    user: User,
  ): Promise<void> {
    const profile = await this.#profile(provider, response, pending);
    const key = this.#key(provider, profile);
    const linked = await this.#d.identities.find(key);
    if (linked) {
      if (linked.userId !== user.id)
        throw new OAuthRefusal('IDENTITY_TAKEN', 'linked to another account', user.id);
      return;
    }
    try {
      // The owner links it from a signed-in session: proven, whatever the provider says of the email.
      await this.#linkTo(provider, profile, key, user, true);
    } catch (error) {
      if (error instanceof IdentityTakenError) {
        // Linked meanwhile: to this account is done, to another is taken.
        const now = await this.#d.identities.find(key);
        if (now?.userId === user.id) return;
        throw new OAuthRefusal('IDENTITY_TAKEN', 'linked to another account', user.id);
      }
      throw error;
    }
    this.#d.mail.wake();
  }

  /**
   * POST /api/sessions/oauth: an ID token from the platform's SDK, checked against the provider's
   * keys; a token that does not check out is a counted failure (401), like a wrong password.
   */
  nativeSignIn(
    provider: Provider,
    token: { idToken: string; nonce: string | undefined; code: string | undefined },
    client: SigninClient,
    /** The app's Accept-Language: the language of an account it makes. */
    acceptLanguage?: string | undefined,
  ): Promise<SigninOutcome> {
    return this.#d.core.run(
      {
        name: 'oauth',
        throttle: { address: true },
        prove: async () => {
          let profile: ProviderProfile;
          try {
            profile = await provider.verifyIdToken(token.idToken, token.nonce);
          } catch (error) {
            if (unreachable(error)) throw new OAuthRefusal('OAUTH_FAILED', reasonOf(error));
            return { ok: false };
          }
          const { user, proven } = await this.#accountFor(provider, profile, acceptLanguage);
          const totp = await this.#d.factorOf(user.id);
          return {
            ok: true,
            user,
            secondFactor: { by: 'code', code: token.code, totp },
            needsVerifiedEmail: !proven,
          };
        },
      },
      client,
    );
  }

  #key(provider: Provider, profile: ProviderProfile): IdentityKey {
    return { provider: provider.id, issuer: profile.issuer, subject: profile.subject };
  }

  /**
   * The account an identity signs in to. Linked: its account. New, with an email an account has:
   * linked only when the provider says the email is verified and the account's is verified too
   * (else anyone who registered the address first, or a provider that does not check addresses,
   * could take the account: ACCOUNT_EXISTS). New, with an email no account has: a new account
   * without a password, unless sign-up is closed. A race with another callback for the same
   * identity or email is decided by the unique indexes, and looked at once more.
   */
  async #accountFor(
    provider: Provider,
    profile: ProviderProfile,
    acceptLanguage: string | undefined,
    retried = false,
  ): Promise<{ user: User; proven: boolean }> {
    const key = this.#key(provider, profile);
    const linked = await this.#d.identities.find(key);
    if (linked) {
      const user = await this.#d.users.findById(linked.userId);
      if (!user) throw new OAuthRefusal('OAUTH_FAILED', 'the account was deleted meanwhile');
      if (!linked.proven && user.emailVerified) {
        // Left by a proof of the mailbox from before every proof applied the rule (decision 340):
        // the rule applies now, and the identity is a new one for that account, below.
        await this.#d.transaction((repos) => this.#d.emailProven.unlinkLeftovers(repos, user));
        this.#d.mail.wake();
        return this.#accountFor(provider, profile, acceptLanguage, retried);
      }
      const shown = acceptedEmail(profile.email);
      if (shown !== undefined && shown !== linked.email)
        await this.#d.identities.updateEmail(linked.id, shown);
      return { user, proven: linked.proven };
    }
    if (profile.email === undefined) throw new OAuthRefusal('OAUTH_FAILED', 'the provider shares no email');
    const email = acceptedEmail(profile.email);
    if (email === undefined)
      throw new OAuthRefusal('OAUTH_FAILED', 'the provider gave an email Usher does not accept');
    // The provider verified the address it sent; an address that normalisation changed (U+212A
    // KELVIN SIGN for `k`, fullwidth letters) is another mailbox at most mail hosts, so its
    // verification proves nothing about the account whose key it shares (decision 354).
    const verified = profile.emailVerified && email === profile.email.trim();
    const claimed = { ...profile, email, emailVerified: verified };
    try {
      const existing = await this.#d.users.findByEmailKey(emailKey(email));
      if (existing) {
        if (!verified || !existing.emailVerified)
          throw new OAuthRefusal('ACCOUNT_EXISTS', 'the email is not verified on both sides', existing.id);
        await this.#linkTo(provider, claimed, key, existing, true);
        this.#d.mail.wake();
        return { user: existing, proven: true };
      }
      if (!this.#d.signup) throw new OAuthRefusal('SIGNUP_CLOSED', 'OAUTH_SIGNUP is false');
      const created = await this.#create(claimed, key, acceptLanguage);
      this.#d.mail.wake();
      // An email its provider did not verify may be anyone's: the identity waits for the mailbox,
      // and whatever proves it unlinks the identity (decisions 195, 340).
      return { user: created, proven: verified };
    } catch (error) {
      if (!retried && (error instanceof IdentityTakenError || error instanceof EmailTakenError))
        return this.#accountFor(provider, profile, acceptLanguage, true);
      if (error instanceof IdentityTakenError || error instanceof EmailTakenError)
        throw new OAuthRefusal('OAUTH_FAILED', 'a simultaneous sign-in won twice');
      throw error;
    }
  }

  /** The identity linked and its notice recorded, together. */
  #linkTo(
    provider: Provider,
    profile: ProviderProfile,
    key: IdentityKey,
    user: User,
    proven: boolean,
  ): Promise<Identity> {
    return this.#d.transaction(async (repos) => {
      const identity = await repos.identities.insert({
        ...key,
        id: newIdentityId(),
        userId: user.id,
        email: acceptedEmail(profile.email) ?? user.email,
        proven,
        now: new Date(this.#d.now()),
      });
      await this.#d.accountMail.send(repos, oauthMails.identityLinked, recipient(user), {
        provider: provider.settings.name,
      });
      const data = { identityId: identity.id, provider: provider.id };
      await repos.journal.record(
        // Linked at a sign-in, no one was signed in: the identity's owner is the account's.
        { type: 'identity.linked', userId: user.id, actor: { actorId: user.id }, details: data },
        { type: 'identity.linked', userId: user.id, data },
      );
      return identity;
    });
  }

  /** A new account for the identity: no password, the email verified as the provider says. */
  #create(
    profile: ProviderProfile & { email: string },
    key: IdentityKey,
    acceptLanguage: string | undefined,
  ): Promise<User> {
    const name = nameFrom(profile);
    const locale = this.#d.accountMail.localeFor(acceptLanguage);
    return this.#d.transaction(async (repos) => {
      let user = await repos.users.insert({
        email: profile.email,
        emailKey: emailKey(profile.email),
        name,
        locale,
      });
      if (profile.emailVerified) {
        await this.#d.emailProven.provenAtCreation(repos, user.id, new Date(this.#d.now()));
        user = { ...user, emailVerified: true };
      } else await mailVerification(this.#d.accountMail, repos, user);
      const identity = await repos.identities.insert({
        ...key,
        id: newIdentityId(),
        userId: user.id,
        email: profile.email,
        proven: profile.emailVerified,
        now: new Date(this.#d.now()),
      });
      const actor = { actorId: user.id };
      await repos.journal.record(
        { type: 'user.created', userId: user.id, actor, details: { via: 'oauth', provider: key.provider } },
        { type: 'user.created', userId: user.id, data: { via: 'oauth', ...userData(user) } },
      );
      const data = { identityId: identity.id, provider: key.provider };
      await repos.journal.record(
        { type: 'identity.linked', userId: user.id, actor, details: data },
        { type: 'identity.linked', userId: user.id, data },
      );
      return user;
    });
  }

  /** GET /api/identities (and GET /api/account's). */
  list(userId: bigint): Promise<Identity[]> {
    return this.#d.identities.list(userId);
  }

  /**
   * DELETE /api/identities/{id}: refused when the account would be left with no way in. The
   * account's row is locked while its methods are counted, so two unlinks cannot both pass.
   */
  async unlink(user: User, id: string): Promise<'unlinked' | 'not-found' | 'last-method'> {
    const result = await this.#d
      .transaction(async (repos) => {
        const configured = this.#d.providers.list().map((p) => p.id);
        const others = await otherMethods(repos, user.id, id, configured);
        if (!others) return 'not-found' as const;
        const removed = await repos.identities.delete(user.id, id);
        if (!removed) return 'not-found' as const;
        if (!others.password && others.passkeys === 0 && others.identities === 0) throw LAST_METHOD;
        const provider = this.#d.providers.get(removed.provider);
        await this.#d.accountMail.send(repos, usersMails.identityUnlinked, recipient(user), {
          provider: provider?.settings.name ?? removed.provider,
        });
        const data = { identityId: id, provider: removed.provider };
        await repos.journal.record(
          { type: 'identity.unlinked', userId: user.id, details: data },
          { type: 'identity.unlinked', userId: user.id, data },
        );
        return 'unlinked' as const;
      })
      .catch((error: unknown) => {
        if (error === LAST_METHOD) return 'last-method' as const;
        throw error;
      });
    if (result === 'unlinked') this.#d.mail.wake();
    return result;
  }

  purgeExpired(): Promise<void> {
    return this.#d.states.deleteExpired(this.#d.now());
  }
}

/** Thrown to roll the unlink back. */
const LAST_METHOD = Symbol('last sign-in method');

/**
 * jose's verdicts on the provider's side: its keys did not arrive in time, or not as a key set
 * (ERR_JOSE_GENERIC is its answer to a key endpoint that fails or answers something else).
 */
const PROVIDER_FAULTS = new Set(['ERR_JWKS_TIMEOUT', 'ERR_JWKS_INVALID', 'ERR_JOSE_GENERIC']);

/**
 * The provider could not be asked (discovery or its keys failed): not the token's fault. Every
 * verdict of jose on the token itself (its form, algorithm, signature, claims, a key it names that
 * the provider does not publish) and the nonce are the token's.
 */
function unreachable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (code.startsWith('ERR_JW') || code.startsWith('ERR_JOSE')))
    return PROVIDER_FAULTS.has(code);
  return !(error instanceof TokenRejected);
}

const newIdentityId = () => randomBytes(16).toString('hex');

/** The provider's email as Usher stores addresses, or undefined when it is not one Usher accepts. */
function acceptedEmail(email: string | undefined): string | undefined {
  if (email === undefined) return undefined;
  try {
    return checkEmail(email);
  } catch {
    return undefined;
  }
}

/** The account's name from the claims, kept to the registration rules; the email's local part otherwise. */
function nameFrom(profile: ProviderProfile & { email: string }): string {
  const candidates = [profile.name, profile.email.split('@')[0], 'User'];
  for (const candidate of candidates) {
    if (candidate === undefined) continue;
    try {
      return checkName([...candidate.trim()].slice(0, NAME_MAX).join(''));
    } catch {
      // the next one
    }
  }
  return 'User';
}
