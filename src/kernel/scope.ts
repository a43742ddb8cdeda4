// The request scope: what a request carries to all the work it starts, read where it applies
// rather than passed down every signature. Today it is who is acting (its session's user, its
// client address and User-Agent), which the journal records with each event; a field added to
// `RequestScope` (an organization) reaches every reader of `currentScope()` the same way. Carried
// with the request's asynchronous work (AsyncLocalStorage); the CLI runs its commands as the
// operator, and background work as no one.
import { AsyncLocalStorage } from 'node:async_hooks';

/** Who did it, from where. */
export interface Actor {
  actorId: bigint | null;
  address: string | null;
  userAgent: string | null;
}

export interface RequestScope {
  readonly actor: Actor;
}

const storage = new AsyncLocalStorage<RequestScope>();

/** Background work and anything outside a request: no actor, no address. */
const NO_ONE: RequestScope = { actor: { actorId: null, address: null, userAgent: null } };

/** Runs `work` (and everything it starts) in `scope`. */
export function inScope<T>(scope: RequestScope, work: () => T): T {
  return storage.run(scope, work);
}

/** Runs `work` (and everything it starts) as `actor`. */
export function actingAs<T>(actor: Actor, work: () => T): T {
  return inScope({ actor }, work);
}

/** Runs `work` as no one: background work a request wakes does not act as its caller. */
export function asNoOne<T>(work: () => T): T {
  return storage.exit(work);
}

export function currentScope(): RequestScope {
  return storage.getStore() ?? NO_ONE;
}

export function currentActor(): Actor {
  return currentScope().actor;
}

/** The CLI's commands: an operator at the machine, with no address. */
export const OPERATOR: Actor = { actorId: null, address: null, userAgent: 'usher CLI' };
