// The audit log's metrics: what the retention purge removed, and when it last ran to completion.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { MetricObservers } from '../plugins/metrics.ts';

export function auditMetrics(registry: Registry): Pick<MetricObservers, 'auditPurged'> {
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
