// The record of sessions a change ended, as every feature that ends sessions writes it.
import type { Journal } from '../kernel/journal.ts';
import type { Actor } from '../kernel/scope.ts';

/**
 * Sessions of `userId` that a change ended (`reason`: signout, revoked, password_changed, …):
 * one record and one session.ended announcement for them all; nothing when none was live.
 */
export async function sessionsEnded(
  journal: Journal,
  userId: bigint,
  sessionIds: readonly string[],
  reason: string,
  actor?: Partial<Actor>,
): Promise<void> {
  if (sessionIds.length === 0) return;
  await journal.record(
    {
      type: reason === 'signout' ? 'signout' : 'session.ended',
      userId,
      details: { sessionIds, reason },
      ...(actor ? { actor } : {}),
    },
    { type: 'session.ended', userId, data: { sessionIds, reason } },
  );
}
