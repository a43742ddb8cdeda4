import type { Feature } from '../features.ts';
import { auditMetrics } from './metrics.ts';
import { createAuditTypeIndex } from './migrations/2026-11-27-0020-audit.ts';
import { createAuditTallies } from './migrations/2026-12-07-0027-audit-tallies.ts';
import { ActivityItemComponent, AuditRecordComponent, auditRoutes } from './routes.ts';

/**
 * The audit log (issue 30): every account event is recorded by the services through the journal
 * (kernel/journal.ts), whose sink (sink.ts) writes it in the transaction of its change; this
 * feature reads it (the admin API and each account's activity) and purges what is older than
 * AUDIT_RETENTION_DAYS. Its table is the administration feature's (admin/ migration 0019).
 */
export const auditFeature: Feature = {
  name: 'audit',
  migrations: {
    '2026-11-27-0020-audit': createAuditTypeIndex,
    '2026-12-07-0027-audit-tallies': createAuditTallies,
  },
  routes: (app, { services }) => app.register(auditRoutes, { audit: services.audit }),
  components: () => [AuditRecordComponent, ActivityItemComponent],
  metrics: (registry) => auditMetrics(registry),
  housekeeping: (services) => services.audit.purgeExpired(),
};
