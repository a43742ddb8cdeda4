// The size of what the provider stores for a request anyone can send (issue 40): an interaction
// keeps the authorization's parameters, a pushed request keeps them as a JWT, a provider session
// keeps the sign-out's `state`. oidc-provider bounds none of them but by its 56 KiB body limit, so
// one anonymous request could leave a row of 14-70 KB for its whole lifetime.

/**
 * The longest value of any one parameter kept. Real values are short: `state` and `nonce` are
 * random strings of 20-50 characters in every client library, a redirect URI is registered, a scope
 * list is a few words. An `id_token_hint` is an ID token Usher signed (under 2 KB with roles).
 */
export const PARAMETER_MAX = 1024;
const LONGER: Readonly<Record<string, number>> = { id_token_hint: 4096 };

/** The largest payload kept of each model a request anyone can send stores. */
export const PAYLOAD_MAX: Readonly<Record<string, number>> = {
  Interaction: 8 * 1024,
  PushedAuthorizationRequest: 8 * 1024,
  // A person's provider session grows with each app they sign in to (about 100 bytes each).
  Session: 16 * 1024,
};

/**
 * Why `payload` of `model` may not be stored, or undefined when it may: a parameter longer than
 * its limit, or a payload larger than its model's.
 */
export function oversized(model: string, payload: Record<string, unknown>, json: string): string | undefined {
  const max = PAYLOAD_MAX[model];
  if (max === undefined) return undefined;
  for (const [name, value] of Object.entries(parametersOf(model, payload))) {
    const limit = LONGER[name] ?? PARAMETER_MAX;
    if (typeof value === 'string' && value.length > limit)
      return `${name} must be at most ${limit} characters`;
  }
  if (Buffer.byteLength(json) > max) return `the request's parameters must be at most ${max} bytes in all`;
  return undefined;
}

/** The client-chosen parameters a payload keeps. */
function parametersOf(model: string, payload: Record<string, unknown>): Record<string, unknown> {
  if (model === 'Interaction') return asRecord(payload.params);
  if (model === 'Session') return asRecord(payload.state);
  if (model === 'PushedAuthorizationRequest' && typeof payload.request === 'string') {
    // An unsigned JWT of the parameters the provider itself made (or the client's request object).
    const body = payload.request.split('.')[1];
    try {
      return asRecord(JSON.parse(Buffer.from(body ?? '', 'base64url').toString('utf8')));
    } catch {
      return {};
    }
  }
  return {};
}

function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : {};
}
