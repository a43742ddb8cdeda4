// The events a webhook may listen to (CONTRACT "Administration"), and the body each delivery
// carries: {"type", "timestamp", "data"}, every id an exact JSON integer.
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

/** An event for the receivers listening to its type; `data` holds `userId` and what the type adds. */
export interface WebhookEvent {
  type: WebhookEventType;
  userId: bigint;
  data: Readonly<Record<string, unknown>>;
}

/** The body of a delivery, as POSTed (and as kept, to be sent the same at every attempt). */
export function webhookBody(event: WebhookEvent, at: Date): string {
  return stringifyExact({
    type: event.type,
    timestamp: at.toISOString(),
    data: { userId: event.userId, ...event.data },
  });
}
