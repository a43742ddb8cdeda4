// oidc-provider's storage interface over Kysely, one code path for SQLite and PostgreSQL
// (model-repository.ts). Clients come from the operator's registry, never from its store.
import type { Adapter, AdapterPayload, errors as OidcErrors } from 'oidc-provider';
import { oversized, PAYLOAD_MAX } from './bounds.ts';
import type { ClientRegistry } from './clients.ts';
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

export function adapterFactory(
  stores: AdapterStores,
  clients: ClientRegistry,
  errors: typeof OidcErrors,
): (model: string) => Adapter {
  const { models } = stores;
  return (model) => {
    if (model === 'Client') {
      return {
        async find(id: string) {
          return (await clients.metadata(id)) as AdapterPayload | undefined;
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
