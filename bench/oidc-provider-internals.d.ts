// The two modules of oidc-provider that bench/oidc-baseline.ts uses beyond its public API: its own
// in-memory adapter and the store under it (the package has no types for them).
declare module 'oidc-provider/lib/adapters/memory_adapter.js' {
  import type { Adapter } from 'oidc-provider';
  export default class MemoryAdapter implements Adapter {
    constructor(model: string, store?: unknown);
    upsert: Adapter['upsert'];
    find: Adapter['find'];
    findByUserCode: Adapter['findByUserCode'];
    findByUid: Adapter['findByUid'];
    consume: Adapter['consume'];
    destroy: Adapter['destroy'];
    revokeByGrantId: Adapter['revokeByGrantId'];
  }
}

declare module 'oidc-provider/lib/helpers/lru.js' {
  export default class LRU {
    constructor(options: { maxSize: number });
  }
}
