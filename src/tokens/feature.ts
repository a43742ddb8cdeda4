import { feature } from '../feature.ts';
import { AccountTokensRepository } from './repository.ts';

export interface TokensUnit {
  tokens: AccountTokensRepository;
}

/**
 * The single-use tokens of account mail (password reset, email verification, …): their table,
 * in every unit of work, for the features that issue and redeem them.
 */
export const tokensFeature = feature({
  name: 'tokens',
  repositories: (db): TokensUnit => ({ tokens: new AccountTokensRepository(db) }),
});
