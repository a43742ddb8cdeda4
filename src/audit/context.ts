// Who is acting, for the audit records a request writes: its session's user, its client address
// and User-Agent. Carried with the request's asynchronous work (AsyncLocalStorage), so the
// services and the sign-in core record it without every signature passing a request along; the
// CLI runs its commands as the operator, and background work as no one.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { AuditActor } from './repository.ts';

const storage = new AsyncLocalStorage<AuditActor>();

/** Background work and anything outside a request: no actor, no address. */
const NO_ONE: AuditActor = { actorId: null, address: null, userAgent: null };

/** Runs `work` (and everything it starts) as `actor`. */
export function actingAs<T>(actor: AuditActor, work: () => T): T {
  return storage.run(actor, work);
}

/** Runs `work` as no one: background work a request wakes does not act as its caller. */
export function asNoOne<T>(work: () => T): T {
  return storage.exit(work);
}

export function currentActor(): AuditActor {
  return storage.getStore() ?? NO_ONE;
}

/** The CLI's commands: an operator at the machine, with no address. */
export const OPERATOR: AuditActor = { actorId: null, address: null, userAgent: 'usher CLI' };
