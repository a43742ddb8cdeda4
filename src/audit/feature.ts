import type { Config } from '../config.ts';
import { feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { type AccountObservers, type AuditObservers, accountMetrics, auditMetrics } from './metrics.ts';
import { createAuditTypeIndex } from './migrations/2026-11-27-0020-audit.ts';
import { createAuditTallies } from './migrations/2026-12-07-0027-audit-tallies.ts';
import { AuditRepository } from './repository.ts';
import { ActivityItemComponent, AuditRecordComponent, auditRoutes } from './routes.ts';
import { AuditService } from './service.ts';
import { auditSink } from './sink.ts';

export interface AuditUnit {
  audit: AuditRepository;
}

/**
 * The audit log (issue 30): every account event is recorded by the services through the journal
 * (kernel/journal.ts), whose sink (sink.ts) writes it in the transaction of its change; this
 * feature reads it (the admin API and each account's activity), counts the events in the metrics,
 * and purges what is older than AUDIT_RETENTION_DAYS. Its table is the administration feature's
 * (admin/ migration 0019).
 */
export const auditFeature = feature({
  name: 'audit',
  migrations: {
    '2026-11-27-0020-audit': createAuditTypeIndex,
    '2026-12-07-0027-audit-tallies': createAuditTallies,
  },
  repositories: (db): AuditUnit => ({ audit: new AuditRepository(db) }),
  sink: (config) => auditSink({ signins: config.audit.signins }),
  metrics: (registry): AuditObservers & AccountObservers => ({
    ...auditMetrics(registry),
    ...accountMetrics(registry),
  }),
  build(kernel: Kernel<Config, AuditUnit & KernelUnit, AuditObservers & AccountObservers>, _needs: unknown) {
    kernel.onAccountEvent(kernel.observe.accountEvent);
    return {
      audit: new AuditService({
        audit: kernel.repositories.audit,
        journal: kernel.repositories.journal,
        retentionMs: kernel.config.audit.retentionMs,
        now: kernel.now,
        onPurged: kernel.observe.auditPurged,
      }),
      /** Records account events outside a change's transaction (a refused admin call). */
      journal: kernel.repositories.journal,
    };
  },
  routes: (app, { own }) => app.register(auditRoutes, { audit: own.audit }),
  components: () => [AuditRecordComponent, ActivityItemComponent],
  housekeeping: ({ audit }) => audit.purgeExpired(),
});
