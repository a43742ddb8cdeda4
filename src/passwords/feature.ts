import type { Config } from '../config.ts';
import { type ExportsOf, feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import { PasswordHasher } from './hasher.ts';
import { type PasswordObservers, passwordMetrics } from './metrics.ts';
import { createPasswordCredentials } from './migrations/2026-11-25-0013-password-credentials.ts';
import { PasswordCredentialsRepository } from './repository.ts';
import { PasswordService } from './service.ts';

export interface PasswordsUnit {
  passwords: PasswordCredentialsRepository;
}

/** Password hashing and rules, the accounts' passwords (their table), and the time of each hash. */
export const passwordsFeature = feature({
  name: 'passwords',
  migrations: { '2026-11-25-0013-password-credentials': createPasswordCredentials },
  repositories: (db, { postgres }) => ({
    passwords: new PasswordCredentialsRepository(db, { rowLocks: postgres }),
  }),
  metrics: (registry, built) => passwordMetrics(registry, (lane) => built().hasher.waiting(lane)),
  build(kernel: Kernel<Config, PasswordsUnit & KernelUnit, PasswordObservers>, _needs: unknown) {
    const hasher = new PasswordHasher(kernel.config.passwordHash, {
      onHash: kernel.observe.hashSeconds,
      onWait: kernel.observe.hashWaited,
    });
    const passwords = new PasswordService({
      credentials: kernel.repositories.passwords,
      hasher,
      now: kernel.now,
    });
    return { hasher, passwords };
  },
});
export type PasswordsExports = ExportsOf<typeof passwordsFeature>;
