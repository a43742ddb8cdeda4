import type { Config } from '../config.ts';
import { feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import type { PasswordsExports } from '../passwords/feature.ts';
import type { SigninExports } from '../signin/feature.ts';
import type { UsersUnit } from '../users/feature.ts';
import { authComponents, authRoutes } from './routes.ts';
import { AuthService } from './service.ts';
import { SignerRepository } from './signer-repository.ts';

export interface AuthUnit {
  signers: SignerRepository;
}

/** Password sign-in: POST /api/signin (the documented one) and POST /api/sessions (a token). */
export const authFeature = feature({
  name: 'auth',
  repositories: (db): AuthUnit => ({ signers: new SignerRepository(db) }),
  build(
    kernel: Kernel<Config, AuthUnit & UsersUnit & KernelUnit, unknown>,
    needs: { signin: SigninExports; passwords: PasswordsExports },
  ) {
    return {
      auth: new AuthService({
        core: needs.signin.core,
        users: kernel.repositories.users,
        signers: kernel.repositories.signers,
        // Sign-in hashes in a lane of its own: other hashing cannot take all of its slots and queue.
        hasher: needs.passwords.hasher.signInLane(),
      }),
    };
  },
  routes: (app, { own, needs, guard, profile }) =>
    app.register(authRoutes, {
      auth: own.auth,
      core: needs.signin.core,
      guard,
      profile,
      metrics: needs.signin.metrics,
    }),
  components: (profile) => [
    ...(profile.signinSuccessComponent ? [profile.signinSuccessComponent] : []),
    ...authComponents(profile),
  ],
});
