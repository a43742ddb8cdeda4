// The events a webhook may listen to (CONTRACT "Administration"), and the body each delivery
// carries: {"type", "timestamp", "data"}, every id an exact JSON integer.
import type { Announcement } from '../kernel/journal.ts';
import { stringifyExact } from '../shared/exact-json.ts';

export const WEBHOOK_EVENT_TYPES = [
  'user.created',
  'user.updated',
  'user.deleted',
  'user.disabled',
  'user.enabled',
  'user.signed_in',
  'session.ended',
  'password.changed',
  'email.verified',
  'identity.linked',
  'identity.unlinked',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

declare module '../kernel/journal.ts' {
  // The journal's announcements are the webhooks' events: a type outside the list fails to compile.
  interface AnnouncedTypes extends Record<WebhookEventType, true> {}
}

/** The body of a delivery, as POSTed (and as kept, to be sent the same at every attempt). */
export function webhookBody(event: Announcement, at: Date): string {
  return stringifyExact({
    type: event.type,
    timestamp: at.toISOString(),
    data: { userId: event.userId, ...event.data },
  });
}
