// The audit log's settings, read by config.ts (the only reader of the environment).
import { type Env, flag, integer } from '../kernel/settings.ts';

export interface AuditSettings {
  /** How long audit records are kept (AUDIT_RETENTION_DAYS). */
  retentionMs: number;
  /** Whether successful sign-ins are recorded (failures and throttled ones always are). */
  signins: boolean;
}

const DAY_MS = 24 * 3600 * 1000;

export function auditSettings(env: Env): AuditSettings {
  return {
    retentionMs: integer(env, 'AUDIT_RETENTION_DAYS', 90, 1, 3650) * DAY_MS,
    signins: flag(env, 'AUDIT_SIGNINS', true),
  };
}
