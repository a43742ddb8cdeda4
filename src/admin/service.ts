// What support staff and admins do to accounts (CONTRACT "Administration"). Each change and its
// audit record (with its actor) commit together; each mail it sends is in the same transaction.
// The last admin who can sign in cannot be demoted, disabled or deleted, decided under a lock of
// the admins' rows so that two admins removing each other at once leave one.

import type { InTransaction } from '../db/transactions.ts';
import type { Journal } from '../kernel/journal.ts';
import type { Actor } from '../kernel/scope.ts';
import type { AccountMail, AccountMailRepositories } from '../mail/account-mail.ts';
import { recipient } from '../mail/index.ts';
import type { MailService } from '../mail/service.ts';
import type { PasskeysRepository, PasskeyView } from '../passkeys/repository.ts';
import { mailPasswordReset } from '../recovery/index.ts';
import { sessionsEnded } from '../sessions/index.ts';
import type { SessionsRepository } from '../sessions/repository.ts';
import type { ActiveSession, SessionService, SessionView } from '../sessions/service.ts';
import { AppError } from '../shared/errors.ts';
import { type PageRequest, refuseDeepPage } from '../shared/paging.ts';
import { invalid } from '../shared/text.ts';
import type { TotpRepository } from '../totp/repository.ts';
import type { EmailProven, EmailProvenRepositories } from '../users/email-proven.ts';
import {
  type AccountIdentity,
  type AccountMethodReaders,
  type AccountRole,
  checkEmail,
  checkLocale,
  checkName,
  EmailTakenError,
  emailKey,
  keepAnAdmin,
  mailAccountDeleted,
  mailEmailChanged,
  mailVerification,
  savedEmail,
  type User,
  type UsersRepository,
  userData,
} from '../users/index.ts';
import { adminMails, mailInvitation } from './mails.ts';
import type { AdminRepository, AdminSortKey, AdminUserRecord, UserFilters } from './repository.ts';

/** An account as the admin API shows one. */
export interface AdminUserDetail extends AdminUserRecord {
  password: boolean;
  totp: boolean;
  passkeys: PasskeyView[];
  identities: AccountIdentity[];
  sessions: SessionView[];
}

export interface AdminRepositories extends AccountMailRepositories, EmailProvenRepositories {
  journal: Journal;
  users: UsersRepository;
  sessions: SessionsRepository;
  totp: TotpRepository;
  passkeys: PasskeysRepository;
  appAccess: { revokeAccount(userId: bigint): Promise<void> };
}

export interface AdminChange {
  name?: string | undefined;
  email?: string | undefined;
  emailVerified?: boolean | undefined;
  role?: AccountRole | undefined;
  roles?: readonly string[] | undefined;
}

/** Who is acting: their session and where the request came from. */
export interface Acting {
  session: ActiveSession;
  address: string;
  userAgent: string | undefined;
}

/**
 * How deep admin search pages reach, and so how far it counts: 1,000 users, as many as a person
 * reads through (GitHub's search stops there too); more matches are a sign to narrow the query.
 * Counting ten times as far took PostgreSQL 80-120 ms for a provider's domain at a million users
 * (docs/benchmarks.md, round 12).
 */
export const SEARCH_DEPTH = 1000;

/** How long an invitation's link works (CONTRACT: 7 days). */
export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;
const PASSKEYS_SHOWN = 100;

export const notFound = () => new AppError('NOT_FOUND', 'No user has that id.');

const emailTaken = () => new AppError('EMAIL_TAKEN', 'email: another account already uses this email');

const actorOf = (acting: Acting): Actor => ({
  actorId: acting.session.userId,
  address: acting.address,
  userAgent: acting.userAgent ?? null,
});

export class AdminService {
  readonly #admin: AdminRepository;
  readonly #users: Pick<UsersRepository, 'findAccount'>;
  readonly #transaction: InTransaction<AdminRepositories>;
  readonly #sessions: SessionService;
  readonly #passkeys: PasskeysRepository;
  readonly #methods: AccountMethodReaders & { hasPassword(userId: bigint): Promise<boolean> };
  readonly #accountMail: AccountMail;
  readonly #mail: Pick<MailService, 'wake'>;
  readonly #emailProven: EmailProven;
  readonly #now: () => number;

  constructor(deps: {
    admin: AdminRepository;
    /** The accounts, read outside a change's transaction. */
    users: Pick<UsersRepository, 'findAccount'>;
    transaction: InTransaction<AdminRepositories>;
    sessions: SessionService;
    passkeys: PasskeysRepository;
    methods: AccountMethodReaders & { hasPassword(userId: bigint): Promise<boolean> };
    accountMail: AccountMail;
    mail: Pick<MailService, 'wake'>;
    emailProven: EmailProven;
    now: () => number;
  }) {
    this.#admin = deps.admin;
    this.#users = deps.users;
    this.#transaction = deps.transaction;
    this.#sessions = deps.sessions;
    this.#passkeys = deps.passkeys;
    this.#methods = deps.methods;
    this.#accountMail = deps.accountMail;
    this.#mail = deps.mail;
    this.#emailProven = deps.emailProven;
    this.#now = deps.now;
  }

  #record(
    repos: Pick<AdminRepositories, 'journal'>,
    acting: Acting,
    type: string,
    userId: bigint | null,
    details = {},
  ) {
    return repos.journal.record({ type, userId, details, actor: actorOf(acting) });
  }

  /** GET /api/admin/users: a page of the users the filters keep, and how many they keep. */
  async search(
    acting: Acting,
    filters: UserFilters,
    paging: PageRequest<AdminSortKey>,
  ): Promise<{ users: AdminUserRecord[]; total: number; capped: boolean }> {
    refuseDeepPage(paging, [], SEARCH_DEPTH);
    // Counted up to one past the deepest row a page may reach: beyond it no page can be read
    // anyway, and a common query's exact count would cost more than its page.
    const { items, total } = await this.#admin.searchPage(filters, paging, SEARCH_DEPTH + 1);
    const capped = total > SEARCH_DEPTH;
    await this.#transaction((repos) =>
      this.#record(repos, acting, 'admin.users.searched', null, { ...filters, page: paging.page }),
    );
    return { users: items, total: Math.min(total, SEARCH_DEPTH), capped };
  }

  /** GET /api/admin/users/{id}: the account and every way it signs in, its sessions included. */
  async view(acting: Acting, id: bigint): Promise<AdminUserDetail> {
    const detail = await this.#detail(acting.session, id);
    await this.#transaction((repos) => this.#record(repos, acting, 'admin.user.viewed', id));
    return detail;
  }

  async #detail(viewer: ActiveSession, id: bigint): Promise<AdminUserDetail> {
    const record = await this.#users.findAccount(id);
    if (!record) throw notFound();
    const [password, totp, passkeys, identities, sessions] = await Promise.all([
      this.#methods.hasPassword(id),
      this.#methods.totpInForce(id),
      this.#passkeys.list(id, PASSKEYS_SHOWN),
      this.#methods.identities(id),
      this.#sessions.listOf(id, viewer),
    ]);
    return { ...record, password, totp, passkeys, identities, sessions };
  }

  /**
   * Runs `change` on the account in one transaction with its audit record: NOT_FOUND when there
   * is no such account (nothing recorded), and then the admin's view of it as it is now.
   */
  async #change(
    acting: Acting,
    id: bigint,
    type: string,
    change: (
      repos: AdminRepositories,
      current: AdminUserRecord,
    ) => Promise<Record<string, unknown> | undefined>,
  ): Promise<{ mailed: boolean }> {
    let mailed = false;
    await this.#transaction(async (repos) => {
      const current = await repos.users.findAccount(id);
      if (!current) throw notFound();
      const details = await change(repos, current);
      mailed = details?.mailed === true;
      await this.#record(repos, acting, type, id, details ?? {});
    });
    if (mailed) this.#mail.wake();
    return { mailed };
  }

  /** PATCH /api/admin/users/{id}. */
  async update(acting: Acting, id: bigint, input: AdminChange): Promise<AdminUserDetail> {
    const name = input.name === undefined ? undefined : checkName(input.name);
    const email = input.email === undefined ? undefined : checkEmail(input.email);
    const roles = input.roles === undefined ? undefined : [...new Set(input.roles)];
    await this.#change(acting, id, 'admin.user.updated', async (repos, current) => {
      const now = new Date(this.#now());
      const changed: string[] = [];
      let mailed = false;
      if (input.role !== undefined) {
        // On the admins as locked now: the role read above may be stale.
        if (input.role !== 'admin') await keepAnAdmin(repos.users, id);
        if (input.role !== current.role) {
          await repos.users.setRole(id, input.role, now);
          changed.push('role');
        }
      }
      if (roles !== undefined) {
        await repos.users.setRoles(id, roles, now);
        if ([...roles].sort().join(' ') !== [...current.roles].sort().join(' ')) changed.push('roles');
      }
      // Against the key stored: an account migration 0028 kept apart keeps its own address as it is.
      let saved: ReturnType<typeof savedEmail> | undefined;
      if (email !== undefined) {
        const stored = await repos.users.findForChange(id);
        if (!stored) throw notFound();
        saved = savedEmail({ email: current.email, emailKey: stored.emailKey }, email);
      }
      const emailWrites = saved !== undefined && saved.email !== current.email;
      if (name !== undefined && name !== current.name) {
        // With a new email, the name is written by the email's update below.
        if (!emailWrites) await repos.users.setName(id, name, now);
        changed.push('name');
      }
      const newEmail = saved?.emailKey !== undefined;
      if (saved !== undefined && emailWrites) {
        let updated: Awaited<ReturnType<UsersRepository['update']>>;
        try {
          updated = await repos.users.update(id, {
            email: saved.email,
            emailKey: saved.emailKey,
            name: name ?? current.name,
            unverify: newEmail,
          });
        } catch (error) {
          if (error instanceof EmailTakenError) throw emailTaken();
          throw error;
        }
        if (updated)
          await repos.journal.record({
            type: 'email.changed',
            userId: id,
            actor: actorOf(acting),
            details: { from: current.email, to: saved.email, via: 'admin' },
          });
        if (newEmail && updated) {
          // Links mailed to the old address open nothing any more; the new one is asked to confirm
          // unless the admin says it is verified, and the old one hears of the change.
          await repos.tokens.voidAll(id, 'password-reset', now);
          await repos.tokens.voidAll(id, 'email-verify', now);
          if (input.emailVerified !== true) await mailVerification(this.#accountMail, repos, updated);
          await mailEmailChanged(this.#accountMail, repos, updated, {
            ...updated,
            email: current.email,
            emailVerified: current.emailVerified,
          });
          mailed = true;
        }
        changed.push('email');
      }
      // Compared with the state after a new email (unverified by then): only real changes are told.
      const read = await repos.users.findById(id);
      const verifiedBefore = read?.emailVerified ?? current.emailVerified;
      if (input.emailVerified === false) await repos.users.unverifyEmail(id, now);
      if (input.emailVerified !== undefined && input.emailVerified !== verifiedBefore)
        changed.push('emailVerified');
      // A verified mark is set by the proof below, after this change's other records as it always
      // was; in this transaction, so told now.
      const after = read && { ...read, emailVerified: input.emailVerified ?? read.emailVerified };
      if (after && changed.length > 0) {
        await repos.journal.notify({
          type: 'user.updated',
          userId: id,
          data: { changed, ...userData(after) },
        });
        if (changed.includes('role'))
          await repos.journal.record({
            type: 'user.role_changed',
            userId: id,
            actor: actorOf(acting),
            details: { from: current.role, to: input.role, via: 'admin' },
          });
      }
      // The admin vouches for the mailbox: its owner takes the account (decisions 340, 343).
      if (read && input.emailVerified === true) {
        const proof = await this.#emailProven.prove(repos, read, 'admin', {
          at: now,
          actor: actorOf(acting),
          touch: true,
        });
        mailed = proof.unlinked > 0 || mailed;
      }
      return {
        changed,
        ...(input.role !== undefined ? { role: input.role } : {}),
        ...(roles ? { roles } : {}),
        mailed,
      };
    });
    return this.#detail(acting.session, id);
  }

  /**
   * POST /api/admin/users/{id}/disable: every session ends and what apps hold is revoked in the
   * same transaction; from then on every way in refuses the account (signin/core.ts).
   */
  async disable(acting: Acting, id: bigint, reason: string | undefined): Promise<AdminUserDetail> {
    await this.#change(acting, id, 'admin.user.disabled', async (repos) => {
      await keepAnAdmin(repos.users, id);
      await repos.users.disable(id, reason ?? null, new Date(this.#now()));
      const ended = await repos.sessions.deleteForUser(id);
      await repos.appAccess.revokeAccount(id);
      await repos.journal.notify({ type: 'user.disabled', userId: id, data: { reason: reason ?? null } });
      await sessionsEnded(repos.journal, id, ended, 'disabled', actorOf(acting));
      return reason === undefined ? {} : { reason };
    });
    return this.#detail(acting.session, id);
  }

  async enable(acting: Acting, id: bigint): Promise<AdminUserDetail> {
    await this.#change(acting, id, 'admin.user.enabled', async (repos) => {
      await repos.users.enable(id, new Date(this.#now()));
      // A sign-in that raced the disabling may have left a session (refused while disabled): it
      // is not revived, nor anything an app got meanwhile.
      await repos.sessions.deleteForUser(id);
      await repos.appAccess.revokeAccount(id);
      await repos.journal.notify({ type: 'user.enabled', userId: id, data: {} });
      return undefined;
    });
    return this.#detail(acting.session, id);
  }

  /** DELETE /api/admin/users/{id}: as the user's own deletion, with a goodbye to a verified address. */
  async delete(acting: Acting, id: bigint): Promise<void> {
    await this.#change(acting, id, 'admin.user.deleted', async (repos, current) => {
      // The credential row first, as the deletion locks it, then the admins' rows.
      await repos.users.lockForDelete(id);
      await keepAnAdmin(repos.users, id);
      const deleted = await repos.users.delete(id);
      if (!deleted) throw notFound();
      if (deleted.emailVerified) await mailAccountDeleted(this.#accountMail, repos, deleted);
      await repos.journal.notify({ type: 'user.deleted', userId: id, data: { via: 'admin' } });
      return { email: current.email, mailed: deleted.emailVerified };
    });
  }

  /** DELETE /api/admin/users/{id}/sessions: Usher's sessions and what apps hold through its provider. */
  async endSessions(acting: Acting, id: bigint): Promise<void> {
    await this.#change(acting, id, 'admin.user.sessions_ended', async (repos) => {
      const ended = await repos.sessions.deleteForUser(id);
      await repos.appAccess.revokeAccount(id);
      await sessionsEnded(repos.journal, id, ended, 'admin', actorOf(acting));
      return { sessions: ended.length };
    });
  }

  /**
   * DELETE /api/admin/users/{id}/mfa: TOTP off, its recovery codes and every passkey removed, for
   * someone who lost them; the owner is told by mail when anything was removed.
   */
  async removeSecondFactors(acting: Acting, id: bigint): Promise<void> {
    await this.#change(acting, id, 'admin.user.mfa_removed', async (repos, current) => {
      const totp = await repos.totp.remove(id);
      const passkeys = await repos.passkeys.deleteAll(id);
      const mailed = totp || passkeys > 0;
      if (mailed)
        await this.#accountMail.send(
          repos,
          adminMails.secondFactorsRemoved,
          recipient(addressee(current)),
          {},
        );
      return { totp, passkeys, mailed };
    });
  }

  /** POST /api/admin/users/{id}/password-reset: the same mail as forgot-password sends. */
  async sendPasswordReset(acting: Acting, id: bigint): Promise<void> {
    await this.#change(acting, id, 'admin.user.password_reset_sent', async (repos, current) => {
      await mailPasswordReset(this.#accountMail, repos, addressee(current));
      return { mailed: true };
    });
  }

  /** POST /api/admin/users/{id}/verification: a new confirmation link, unless already verified. */
  async sendVerification(acting: Acting, id: bigint): Promise<void> {
    await this.#change(acting, id, 'admin.user.verification_sent', async (repos, current) => {
      if (current.emailVerified) throw invalid('email', 'is already verified');
      await mailVerification(this.#accountMail, repos, addressee(current));
      return { mailed: true };
    });
  }

  /**
   * POST /api/admin/users: an invitation. The account has no password until its owner follows
   * the mailed link (the reset page), which also proves the address.
   */
  async invite(
    acting: Acting,
    input: {
      email: string;
      name: string;
      roles?: readonly string[] | undefined;
      locale?: string | undefined;
    },
    acceptLanguage?: string | undefined,
  ): Promise<AdminUserDetail> {
    const email = checkEmail(input.email);
    const name = checkName(input.name);
    // The invitee's language: asked for, else the inviting browser's (the admin's guess), else en.
    const locale =
      input.locale === undefined ? this.#accountMail.localeFor(acceptLanguage) : checkLocale(input.locale);
    const roles = input.roles === undefined ? [] : [...new Set(input.roles)];
    const user = await this.#transaction(async (repos) => {
      let created: User;
      try {
        created = await repos.users.insert({ email, emailKey: emailKey(email), name, locale });
      } catch (error) {
        if (error instanceof EmailTakenError) throw emailTaken();
        throw error;
      }
      if (roles.length > 0) await repos.users.setRoles(created.id, roles, new Date(this.#now()));
      await mailInvitation(this.#accountMail, repos, created, INVITATION_TTL_MS);
      await this.#record(repos, acting, 'admin.user.invited', created.id, { roles });
      await repos.journal.notify({
        type: 'user.created',
        userId: created.id,
        data: { via: 'invitation', ...userData(created) },
      });
      return created;
    });
    this.#mail.wake();
    return this.#detail(acting.session, user.id);
  }
}

const addressee = (user: AdminUserRecord) => ({
  id: user.id,
  email: user.email,
  name: user.name,
  emailVerified: user.emailVerified,
  locale: user.locale,
});
