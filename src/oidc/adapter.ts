// oidc-provider's storage interface over Kysely, one code path for SQLite and PostgreSQL
// (model-repository.ts). Clients come from the operator's registry, never from its store.
import type { IncomingMessage } from 'node:http';
import type { Adapter, AdapterPayload, KoaContextWithOIDC, errors as OidcErrors } from 'oidc-provider';
import { AppError } from '../shared/errors.ts';
import { oversized, PAYLOAD_MAX } from './bounds.ts';
import type { ClientRegistry, PresentedCredentials } from './clients.ts';
import type { OidcModelsRepository } from './model-repository.ts';

export interface AdapterStores {
  models: OidcModelsRepository;
}

/** The models a grant issues: revoking the grant removes them (as oidc-provider's own adapter does). */
const GRANTABLE = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
]);

/** The models spent once: a second spending is refused here, atomically, whoever checked first. */
const CONSUMABLE: Record<string, string> = {
  AuthorizationCode: 'authorization code already consumed',
  RefreshToken: 'refresh token already used',
};

/** A budget per client address (kernel/limits.ts's `AddressLimits`): `take` throws a 429 past it. */
export interface AddressBudget {
  take(address: string): Promise<void>;
}

/**
 * What anonymous requests make the provider store, charged to the asking address (issue 40):
 * `authorization` for what an authorization request stores, `pushed` for pushed requests.
 */
export interface StorageBudgets {
  authorization: AddressBudget;
  pushed: AddressBudget;
  /** The provider's request being answered (oidc-provider's `Provider.ctx`), if any. */
  current(): KoaContextWithOIDC | undefined;
}

/** Rows each request can add a new one of, whatever route stores them. */
const CHARGED = new Set(['Interaction', 'PushedAuthorizationRequest']);

/**
 * Resume puts the next step's interaction in place of the one it has just destroyed (or saves the
 * one it read), and what it issues comes of an interaction already charged: it adds no row.
 */
const RESUMES = new Set(['resume', 'device_resume']);

/**
 * Charges the request being answered, once, before the first row it stores: an authorization
 * request for anything but the provider session (one per Usher session, decision 328, and saved
 * after the answer is written), any other request for an interaction or a pushed request. The
 * route is the one oidc-provider's router chose, so no spelling of the path (letter case, a
 * trailing `/`, HEAD for GET) goes uncounted. Past the budget: 429 with Retry-After, answered by
 * the library's error handler as a page (`allow_redirect` off: not sent on to the app) or, for
 * PAR, OAuth's JSON.
 */
function charger(budgets: StorageBudgets | undefined, errors: typeof OidcErrors) {
  const charged = new WeakSet<object>();
  return async (model: string): Promise<void> => {
    const ctx = budgets?.current();
    if (!budgets || !ctx || charged.has(ctx)) return;
    const route = ctx.oidc.route;
    if (RESUMES.has(route)) return;
    if (!CHARGED.has(model) && !(route === 'authorization' && model !== 'Session')) return;
    charged.add(ctx);
    const pushed = route === 'pushed_authorization_request' || model === 'PushedAuthorizationRequest';
    const req = ctx.req as IncomingMessage & { ip?: string };
    try {
      await (pushed ? budgets.pushed : budgets.authorization).take(req.ip ?? req.socket.remoteAddress ?? '');
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode !== 429) throw error;
      for (const [name, value] of Object.entries(error.headers ?? {})) ctx.set(name, value);
      throw Object.assign(new errors.CustomOIDCProviderError('too_many_requests', error.message), {
        status: 429,
        statusCode: 429,
        allow_redirect: false,
      });
    }
  };
}

/**
 * The client id and secret the request being answered authenticates with, as oidc-provider's
 * client authentication reads them (client_secret_post's parameters, or client_secret_basic's
 * header, its parts form-decoded): the client registry reads a client again when the secret is
 * not the one it holds. Only the freshness of what the library is handed depends on it: the
 * library itself compares the secret it reads with the client's. Any other scheme (a bearer
 * token) presents no secret, and neither does a header the library refuses before any lookup.
 */
function presentedBy(ctx: KoaContextWithOIDC | undefined): PresentedCredentials | undefined {
  if (!ctx) return undefined;
  const params = ctx.oidc?.params as { client_id?: unknown; client_secret?: unknown } | undefined;
  if (typeof params?.client_secret === 'string' && params.client_secret !== '')
    return typeof params.client_id === 'string'
      ? { clientId: params.client_id, secret: params.client_secret }
      : undefined;
  const header = ctx.headers.authorization;
  if (typeof header !== 'string' || !/^basic /i.test(header)) return undefined;
  try {
    const basic = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = basic.indexOf(':');
    if (colon === -1) return undefined;
    const decode = (part: string) => decodeURIComponent(part.replace(/\+/g, '%20'));
    return { clientId: decode(basic.slice(0, colon)), secret: decode(basic.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}

export function adapterFactory(
  stores: AdapterStores,
  clients: ClientRegistry,
  errors: typeof OidcErrors,
  budgets?: StorageBudgets,
): (model: string) => Adapter {
  const { models } = stores;
  const charge = charger(budgets, errors);
  return (model) => {
    if (model === 'Client') {
      return {
        async find(id: string) {
          return (await clients.metadata(id, presentedBy(budgets?.current()))) as AdapterPayload | undefined;
        },
        upsert: refused,
        findByUid: nothing,
        findByUserCode: nothing,
        consume: refused,
        destroy: refused,
        revokeByGrantId: refused,
      };
    }
    return {
      async upsert(id: string, payload: AdapterPayload, expiresIn: number) {
        // A provider session without a person holds nothing worth a row: oidc-provider saves one
        // for any browser that asks to sign out (its sign-out form's xsrf secret), whoever sends
        // it. Usher answers such a sign-out without the form (oidc/provider.ts), and no other
        // flow reads a session before it has an account.
        if (model === 'Session' && !payload.accountId) return;
        await charge(model);
        if (model in PAYLOAD_MAX) {
          const refused = oversized(model, payload as Record<string, unknown>, JSON.stringify(payload));
          if (refused) throw new errors.InvalidRequest(refused);
        }
        await models.upsert(model, id, {
          payload: payload as Record<string, unknown>,
          grantId: GRANTABLE.has(model) ? payload.grantId : undefined,
          uid: payload.uid,
          userCode: payload.userCode,
          expiresAt: Number.isFinite(expiresIn) && expiresIn > 0 ? Date.now() + expiresIn * 1000 : undefined,
        });
      },
      async find(id: string) {
        return (await models.find(model, id, Date.now())) as AdapterPayload | undefined;
      },
      async findByUid(uid: string) {
        return (await models.findBy(model, 'uid', uid, Date.now()))?.payload as AdapterPayload | undefined;
      },
      async findByUserCode(userCode: string) {
        return (await models.findBy(model, 'user_code', userCode, Date.now()))?.payload as
          | AdapterPayload
          | undefined;
      },
      async consume(id: string) {
        // oidc-provider checked `consumed` on what it read; a use racing this one may have read
        // the same. Only the update that found the row unspent goes on to issue tokens; the one
        // that lost is a second use, so the grant goes with everything it issued (RFC 9700 §4.5),
        // including what the winner issues after this.
        if (!(await models.consume(model, id, Date.now())) && CONSUMABLE[model]) {
          await models.revokeGrantOf(model, id);
          throw new errors.InvalidGrant(CONSUMABLE[model]);
        }
      },
      async destroy(id: string) {
        await models.destroy(model, id);
      },
      async revokeByGrantId(grantId: string) {
        await models.revokeGrant(grantId);
      },
    };
  };
}

async function nothing(): Promise<undefined> {
  return undefined;
}

async function refused(): Promise<never> {
  throw new Error('clients are registered with `usher clients`, not through the provider');
}
