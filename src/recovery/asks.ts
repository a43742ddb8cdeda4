import { addressKey } from '../shared/address.ts';
import { AppError } from '../shared/errors.ts';
import { EMAIL_MAX, emailKey } from '../users/index.ts';
import type { ResetRequestsRepository } from './repository.ts';

export interface AskLimit {
  /** Asks per client address (IPv6: per /64) per window; further asks get 429. */
  perAddress: number;
  windowMs: number;
}

/**
 * Records an ask that must be answered alike whether or not the email has an account (a password
 * reset, a sign-in link or code): the same work either way, and nothing looked up. Counted before
 * anything else, like the sign-in throttle: past the address's limit it is removed and refused
 * with 429 TOO_MANY_REQUESTS (`refusal` the message). Resolves once the background worker may take it.
 */
export async function recordAsk(
  requests: ResetRequestsRepository,
  ask: {
    email: string;
    client: string;
    now: number;
    redirectTo?: string | undefined;
    locale?: string | undefined;
  },
  limit: AskLimit,
  refusal: string,
): Promise<void> {
  const address = addressKey(ask.client);
  const { now } = ask;
  const since = now - limit.windowMs;
  // An email no account can have is recorded under a key that matches none, so the work and
  // the answer stay the same.
  const key = ask.email.length > EMAIL_MAX * 4 ? '' : emailKey(ask.email);
  const storable = [...key].length <= EMAIL_MAX && !key.includes('\u0000') ? key : '';
  const id = await requests.add(storable, address, now, { redirectTo: ask.redirectTo, locale: ask.locale });
  if ((await requests.countFrom(address, since)) > limit.perAddress) {
    await requests.remove(id);
    const nth = await requests.nthNewestFrom(address, since, limit.perAddress);
    const retryAfter = Math.max(1, Math.ceil(((nth ?? now) + limit.windowMs - now) / 1000));
    throw new AppError('TOO_MANY_REQUESTS', refusal, 429, { 'retry-after': String(retryAfter) });
  }
  // Only now may the worker take it: a refused ask must never be mailed, however soon it looks.
  await requests.release(id);
}
