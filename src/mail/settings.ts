// The mail feature's settings: how messages leave, their retries, and the operator's own texts.
// Read by config.ts (the only reader of the environment).
import { ConfigError, type Env, integer, secondsAsMs, text } from '../kernel/settings.ts';
import {
  loadOperatorTemplates,
  NO_OPERATOR_TEMPLATES,
  type OperatorTemplates,
  TemplateError,
} from './operator-templates.ts';

export interface MailSettings {
  /** smtp:// or smtps:// URL of the server that sends; unset: messages are written to `outboxDir`. */
  smtpUrl: string | undefined;
  /** The From header of every message. */
  from: string;
  /** Where .eml files go when no SMTP server is configured. */
  outboxDir: string;
  /** How long a message is retried before it is marked failed. */
  maxAgeMs: number;
  /** How long a sender's claim on a message lasts (a killed sender's claim is taken over after it). */
  claimMs: number;
  /** How often each instance looks for messages to send (new ones are sent at once regardless). */
  pollMs: number;
  /** MAIL_TEMPLATES_DIR's texts and templates, checked at start (none when it is unset). */
  templates: OperatorTemplates;
}

export function mailSettings(env: Env): MailSettings {
  const smtp = smtpUrl(env);
  const from = text(env, 'MAIL_FROM') ?? 'Usher <no-reply@localhost>';
  if (/[\r\n]/.test(from))
    throw new ConfigError('MAIL_FROM', 'must be one line, like "Usher <no-reply@example.com>"');
  return {
    smtpUrl: smtp,
    from,
    outboxDir: text(env, 'MAIL_OUTBOX') ?? './data/outbox',
    maxAgeMs: secondsAsMs(env, 'MAIL_RETRY_SECONDS', 24 * 3600, 1, 30 * 24 * 3600),
    claimMs: secondsAsMs(env, 'MAIL_CLAIM_SECONDS', 60, 1, 3600),
    pollMs: integer(env, 'MAIL_POLL_MS', 5000, 50, 600_000),
    templates: mailTemplates(env),
  };
}

function smtpUrl(env: Env): string | undefined {
  const raw = text(env, 'SMTP_URL');
  if (raw === undefined) return undefined;
  try {
    const url = new URL(raw);
    if ((url.protocol === 'smtp:' || url.protocol === 'smtps:') && url.hostname) return raw;
  } catch {
    // fall through to the error below
  }
  throw new ConfigError('SMTP_URL', 'expected smtp://user:password@host:port or smtps://…');
}

/** MAIL_TEMPLATES_DIR: read and checked now, so a broken template stops the start, naming its file. */
function mailTemplates(env: Env): OperatorTemplates {
  const dir = text(env, 'MAIL_TEMPLATES_DIR');
  if (dir === undefined) return NO_OPERATOR_TEMPLATES;
  try {
    return loadOperatorTemplates(dir);
  } catch (error) {
    if (error instanceof TemplateError) throw new ConfigError('MAIL_TEMPLATES_DIR', error.message);
    throw error;
  }
}
