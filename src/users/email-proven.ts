// The one rule for an account's email becoming proven (decision 340): whoever proves the mailbox
// owns the account, so a provider identity that made the account with an email its provider did
// not verify (stored unproven, oauth/tables.ts) may be someone else's, and goes, with a notice to
// the mailbox, an audit record and a webhook. Proving an email is one call, `prove`, in the
// caller's transaction: it marks the email verified, records email.verified and applies the rule,
// so no way of proving it can leave the rule out (decision 343). The ways: the verification link,
// a sign-in by mail link or code, a password reset (and so an accepted invitation, whose link is a
// reset's), an admin's or the CLI's say-so. Declared in users/ and given the identities as an
// interface, as recovery/service.ts declares its throttle, so users/ does not depend on oauth/.
import type { AccountEvent, Journal } from '../kernel/journal.ts';
import type { AccountMail, AccountMailRepositories, Addressee } from '../mail/account-mail.ts';
import { recipient } from '../mail/index.ts';
import { usersMails } from './mails.ts';
import type { EmailProofsRepository } from './proof-repository.ts';

/** What the rule needs of the linked identities (oauth/identity-repository.ts's IdentitiesRepository). */
export interface UnprovenIdentities {
  /** Removes the account's unproven identities; those it removed. */
  deleteUnproven(userId: bigint): Promise<{ id: string; provider: string }[]>;
}

export interface EmailProvenRepositories extends Pick<AccountMailRepositories, 'outbox'> {
  identities: UnprovenIdentities;
  journal: Journal;
  /** The email's verified mark: written by this class alone (decision 343). */
  emailProofs: Pick<EmailProofsRepository, 'markVerified'>;
}

/**
 * How the email was proven, as the identity.unlinked record's `reason`: `password_reset` (a
 * reset or an accepted invitation), `email_verification` (the verification link), `email_link` and
 * `email_code` (a sign-in by mail), `admin` (PATCH /api/admin/users/{id}), `cli`; and
 * `already_verified`: an identity found unproven on an account whose email was proven before every
 * proof applied the rule, at its next sign-in.
 */
export type ProvenBy =
  | 'password_reset'
  | 'email_verification'
  | 'email_link'
  | 'email_code'
  | 'admin'
  | 'cli'
  | 'already_verified';

/** The email.verified record's `via` for each proof (docs/audit.md). */
const VIA = {
  password_reset: 'reset',
  email_verification: 'link',
  email_link: 'email_link',
  email_code: 'email_code',
  admin: 'admin',
  cli: 'cli',
} as const satisfies Record<Exclude<ProvenBy, 'already_verified'>, string>;

export interface Proof {
  /** The email was not verified before: email.verified was recorded. */
  verified: boolean;
  /** How many unproven identities went: the caller wakes the mail sender after its commit when any did. */
  unlinked: number;
}

export class EmailProven {
  readonly #accountMail: AccountMail;
  readonly #providerName: (id: string) => string;

  constructor(deps: {
    accountMail: AccountMail;
    /** The provider's display name for the notice (OAUTH_X_NAME); its id when no longer configured. */
    providerName: (id: string) => string;
  }) {
    this.#accountMail = deps.accountMail;
    this.#providerName = deps.providerName;
  }

  /**
   * The user's email is proven, by `by`, in the caller's transaction: marked verified from `at`
   * (with email.verified and its webhook, if it was not yet), and the account's unproven
   * identities unlinked. `touch` moves the account's updated_at with the mark (an admin's change).
   */
  async prove(
    repos: EmailProvenRepositories,
    user: Addressee,
    by: Exclude<ProvenBy, 'already_verified'>,
    options: { at: Date; actor?: AccountEvent['actor']; touch?: boolean },
  ): Promise<Proof> {
    const { at, actor } = options;
    // Asked of the row, not of `user`: it may have been read before this transaction.
    const verified = await repos.emailProofs.markVerified(user.id, at, options.touch ?? false);
    if (verified)
      await repos.journal.record(
        { type: 'email.verified', userId: user.id, ...(actor ? { actor } : {}), details: { via: VIA[by] } },
        { type: 'email.verified', userId: user.id, data: { email: user.email } },
      );
    const unlinked = await this.#unlink(repos, user, by, actor);
    return { verified, unlinked };
  }

  /**
   * An account made by a provider identity whose provider verified the email (oauth/service.ts):
   * verified from its start, with no email.verified (its user.created tells it) and nothing to
   * unlink, the account being new and its only identity proven.
   */
  async provenAtCreation(repos: Pick<EmailProvenRepositories, 'emailProofs'>, userId: bigint, at: Date) {
    await repos.emailProofs.markVerified(userId, at, false);
  }

  /**
   * The rule alone, for an identity found unproven on an account whose email was proven before
   * every proof applied it (oauth/service.ts, decision 342): reason `already_verified`, no one
   * acting. Resolves how many went.
   */
  unlinkLeftovers(repos: Omit<EmailProvenRepositories, 'emailProofs'>, user: Addressee): Promise<number> {
    return this.#unlink(repos, user, 'already_verified', { actorId: null });
  }

  /** Unlinks the account's unproven identities, in the caller's transaction; how many went. */
  async #unlink(
    repos: Omit<EmailProvenRepositories, 'emailProofs'>,
    user: Addressee,
    by: ProvenBy,
    actor?: AccountEvent['actor'],
  ): Promise<number> {
    const unlinked = await repos.identities.deleteUnproven(user.id);
    for (const identity of unlinked) {
      // The account was made by that identity, and so was its name: the notice does not greet by it.
      await this.#accountMail.send(
        repos,
        usersMails.identityUnlinked,
        recipient({ ...user, emailVerified: false }),
        {
          provider: this.#providerName(identity.provider),
        },
      );
      const data = { identityId: identity.id, provider: identity.provider, reason: by };
      await repos.journal.record(
        { type: 'identity.unlinked', userId: user.id, ...(actor ? { actor } : {}), details: data },
        { type: 'identity.unlinked', userId: user.id, data },
      );
    }
    return unlinked.length;
  }
}
