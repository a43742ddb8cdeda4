// The audit log as support and users read it (CONTRACT "Administration"): every record with
// filters for support staff (their reading audited too), and each user's own recent security
// events, without staff's reads of the account and without staff's addresses.
import { purgeInRounds } from '../db/purge.ts';
import type { Journal } from '../kernel/journal.ts';
import { AppError } from '../shared/errors.ts';
import { type PageRequest, refuseDeepPage } from '../shared/paging.ts';
import type { AuditFilters, AuditRecord, AuditRepository } from './repository.ts';

/**
 * How deep audit pages reach, and so how far they count: 10,000 records. Past it a search is
 * narrowed by user, type or time (X-Total-Count-Capped says so).
 */
export const AUDIT_DEPTH = 10_000;
/** CONTRACT: the user's own last 50 security events. */
export const ACTIVITY_SIZE = 50;
/** How far back the activity's line of failed and throttled sign-ins looks: 30 days. */
export const ATTEMPTS_PERIOD_MS = 30 * 24 * 3600 * 1000;
/** The records that line sums at most (a flood is read no further). */
export const ATTEMPTS_READ = 10_000;
/** The activity's type of that line: it is no record of the log, but a sum of some. */
export const ATTEMPTS_LINE = 'signin.failures';
/** Staff reading an account, or retrying a webhook about it, is theirs to know, not the account's. */
const STAFF_READS = ['admin.user.viewed', 'admin.webhook.delivery_retried'] as const;

/**
 * A record as its user sees it: who did it (`you`: signed in as the account; `staff`: support or
 * an admin; `unknown`: no one signed in, like a failed sign-in or a reset link, or the operator's
 * CLI), and from where unless it was staff.
 */
export interface ActivityItem extends Omit<AuditRecord, 'actorId' | 'userId'> {
  by: 'you' | 'staff' | 'unknown';
}

export class AuditService {
  readonly #audit: AuditRepository;
  readonly #journal: Journal;
  readonly #retentionMs: number;
  readonly #now: () => number;
  readonly #onPurged: (n: number) => void;

  constructor(deps: {
    audit: AuditRepository;
    journal: Journal;
    retentionMs: number;
    now: () => number;
    onPurged?: (n: number) => void;
  }) {
    this.#audit = deps.audit;
    this.#journal = deps.journal;
    this.#retentionMs = deps.retentionMs;
    this.#now = deps.now;
    this.#onPurged = deps.onPurged ?? (() => {});
  }

  /** GET /api/admin/audit: a page, newest first, and the count up to AUDIT_DEPTH (capped: more). */
  async search(
    filters: AuditFilters,
    paging: PageRequest,
  ): Promise<{ records: AuditRecord[]; total: number; capped: boolean }> {
    if (filters.since && filters.until && filters.since >= filters.until)
      throw new AppError('INVALID_QUERY', 'since: must be before until');
    refuseDeepPage(paging, [], AUDIT_DEPTH);
    const [records, counted] = await Promise.all([
      this.#audit.search(filters, paging.offset, paging.size),
      this.#audit.count(filters, AUDIT_DEPTH + 1),
    ]);
    await this.#journal.record({
      type: 'admin.audit.viewed',
      userId: null,
      details: {
        userId: filters.userId ?? null,
        type: filters.type ?? null,
        since: filters.since?.toISOString() ?? null,
        until: filters.until?.toISOString() ?? null,
        page: paging.page,
      },
    });
    return { records, total: Math.min(counted, AUDIT_DEPTH), capped: counted > AUDIT_DEPTH };
  }

  /**
   * GET /api/account/activity: the user's own security events, newest first, and their failed and
   * throttled sign-ins of the last 30 days as one line, in the place of the newest of them: 50
   * items at most, so 49 events beside that line. Anyone can make failures, so they cannot push
   * the owner's own events (a password or email change) out of view.
   */
  async activity(userId: bigint): Promise<ActivityItem[]> {
    const since = new Date(this.#now() - ATTEMPTS_PERIOD_MS);
    const [records, attempts] = await Promise.all([
      this.#audit.search({ userId, excludeTypes: STAFF_READS, attempts: false }, 0, ACTIVITY_SIZE),
      this.#audit.attempts(userId, since, ATTEMPTS_READ),
    ]);
    const items = records.map(({ actorId, userId: _user, ...record }): ActivityItem => {
      const by = actorId === null ? 'unknown' : actorId === userId ? 'you' : 'staff';
      if (by !== 'staff') return { ...record, by };
      // A staff member's address is theirs, not the account's; staff's free text (a reason for
      // disabling) may be notes for staff: neither is shown to the account.
      const { reason: _reason, ...details } = record.details;
      return { ...record, by, address: null, userAgent: null, details };
    });
    if (!attempts) return items;
    const { newest } = attempts;
    // A failed sign-in's address is the account's to see (decision 231): the newest one's.
    const line: ActivityItem = {
      id: newest.id,
      at: attempts.lastAt,
      type: ATTEMPTS_LINE,
      by: 'unknown',
      address: newest.address,
      userAgent: newest.userAgent,
      details: {
        failed: attempts.failed,
        throttled: attempts.throttled,
        since: since.toISOString(),
        capped: attempts.capped,
      },
    };
    const kept = items.slice(0, ACTIVITY_SIZE - 1);
    const place = kept.findIndex((item) => item.id < line.id);
    kept.splice(place < 0 ? kept.length : place, 0, line);
    return kept;
  }

  /** Records older than AUDIT_RETENTION_DAYS go, in short rounds (housekeeping, every instance). */
  async purgeExpired(): Promise<number> {
    const before = new Date(this.#now() - this.#retentionMs);
    // Short statements, a bounded run: what is left waits a minute (db/purge.ts).
    const total = await purgeInRounds((limit) => this.#audit.purge(before, limit));
    this.#onPurged(total);
    return total;
  }
}
