// The one rule for an account's email becoming proven (decision 340): whoever proves the mailbox
// owns the account, so a provider identity that made the account with an email its provider did
// not verify (stored unproven, oauth/tables.ts) may be someone else's, and goes, with a notice to
// the mailbox, an audit record and a webhook. Every way an email is proven calls it inside the
// transaction that marks the email verified: the verification link, a sign-in by mail link or code,
// a password reset (and so an accepted invitation, whose link is a reset's), an admin's or the
// CLI's say-so. Declared in users/ and given the identities as an interface, as recovery/service.ts
// declares its throttle, so users/ does not depend on oauth/.
import type { AccountEvent, Journal } from '../kernel/journal.ts';
import type { AccountMail, AccountMailRepositories, Addressee } from '../mail/account-mail.ts';

/** What the rule needs of the linked identities (oauth/identity-repository.ts's IdentitiesRepository). */
export interface UnprovenIdentities {
  /** Removes the account's unproven identities; those it removed. */
  deleteUnproven(userId: bigint): Promise<{ id: string; provider: string }[]>;
}

export interface EmailProvenRepositories extends Pick<AccountMailRepositories, 'outbox'> {
  identities: UnprovenIdentities;
  journal: Journal;
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
   * Unlinks the account's unproven identities, in the caller's transaction, once its email is
   * proven. Resolves how many went: the caller wakes the mail sender after its commit when any did.
   */
  async unlinkUnproven(
    repos: EmailProvenRepositories,
    user: Addressee,
    by: ProvenBy,
    actor?: AccountEvent['actor'],
  ): Promise<number> {
    const unlinked = await repos.identities.deleteUnproven(user.id);
    for (const identity of unlinked) {
      // The account was made by that identity, and so was its name: the notice does not greet by it.
      await this.#accountMail.identityUnlinked(
        repos,
        { ...user, emailVerified: false },
        this.#providerName(identity.provider),
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
