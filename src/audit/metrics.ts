// The audit log's metrics: what the retention purge removed, and when it last ran to completion.
import { Counter, Gauge, type Registry } from 'prom-client';
import { REGISTRATION_VIA } from '../plugins/metrics.ts';

/** What the audit's purge tells the metrics: the records one round removed. */
export interface AuditObservers {
  auditPurged(count: number): void;
}

/**
 * What the journal tells the metrics: an account event, once its change committed
 * (kernel/journal.ts), or counted without an audit record (`password.reset_requested`,
 * `password.reset_refused`).
 */
export interface AccountObservers {
  accountEvent(type: string, details?: Readonly<Record<string, unknown>>): void;
}

export function auditMetrics(registry: Registry): AuditObservers {
  const purged = new Counter({
    name: 'usher_audit_purged_total',
    help: 'Audit records removed after AUDIT_RETENTION_DAYS.',
    registers: [registry],
  });
  const lastPurge = new Gauge({
    name: 'usher_audit_last_purge_timestamp_seconds',
    help: 'When this instance last finished an audit purge round (Unix time).',
    registers: [registry],
    // A time, not a count: with WORKERS=N the latest of the workers' rounds.
    aggregator: 'max',
  });
  return {
    auditPurged: (count) => {
      purged.inc(count);
      lastPurge.set(Date.now() / 1000);
    },
  };
}

/**
 * Registrations, password resets and passkeys, counted from the account events every change
 * records through the journal (the one place all ways of making an account pass).
 */
export function accountMetrics(registry: Registry): AccountObservers {
  const registrations = new Counter({
    name: 'usher_registrations_total',
    help: 'Accounts made, by way: registration (POST /api/users), oauth, email_link, email_code, invitation.',
    labelNames: ['via'],
    registers: [registry],
  });
  const resets = new Counter({
    name: 'usher_password_resets_total',
    help: 'Password resets by stage: requested (forgot-password asked), completed, refused (bad or used link).',
    labelNames: ['stage'],
    registers: [registry],
  });
  const passkeys = new Counter({
    name: 'usher_passkey_changes_total',
    help: 'Passkeys added (registered) and removed, by change: added, removed.',
    labelNames: ['change'],
    registers: [registry],
  });
  for (const via of REGISTRATION_VIA) registrations.inc({ via }, 0);
  for (const stage of ['requested', 'completed', 'refused']) resets.inc({ stage }, 0);
  for (const change of ['added', 'removed']) passkeys.inc({ change }, 0);
  const counted: Record<string, (details: Readonly<Record<string, unknown>>) => void> = {
    'user.created': (details) =>
      registrations.inc({ via: typeof details.via === 'string' ? details.via : 'registration' }),
    // An admin's invitation records this, and notifies user.created without an audit record.
    'admin.user.invited': () => registrations.inc({ via: 'invitation' }),
    'password.reset_requested': () => resets.inc({ stage: 'requested' }),
    'password.reset': () => resets.inc({ stage: 'completed' }),
    'password.reset_refused': () => resets.inc({ stage: 'refused' }),
    'mfa.passkey_added': () => passkeys.inc({ change: 'added' }),
    'mfa.passkey_removed': () => passkeys.inc({ change: 'removed' }),
  };
  return {
    accountEvent: (type: string, details?: Readonly<Record<string, unknown>>) => {
      if (Object.hasOwn(counted, type)) counted[type]!(details ?? {});
    },
  };
}
