import type { Feature } from '../features.ts';
import { reportEmailKeyCollisions } from './collisions.ts';
import { USERS_ERRORS } from './errors.ts';
import { addAccountRoles } from './migrations/2026-11-27-0018-account-roles.ts';
import { addUserLocale } from './migrations/2026-11-27-0022-user-locale.ts';
import { normaliseEmailKeys } from './migrations/2026-12-07-0028-email-keys.ts';
import { accountComponentFor, currentSessionFor, usersRoutes } from './routes.ts';

export const usersFeature: Feature = {
  name: 'users',
  errors: USERS_ERRORS,
  migrations: {
    '2026-11-27-0018-account-roles': addAccountRoles,
    '2026-11-27-0022-user-locale': addUserLocale,
    '2026-12-07-0028-email-keys': normaliseEmailKeys,
  },
  routes: (app, { services, guard, profile, config }) =>
    app.register(usersRoutes, { users: services.users, guard, profile, lookup: config.userLookup }),
  components: (profile) => [profile.userComponent, currentSessionFor(profile), accountComponentFor(profile)],
  background: ({ services, schema, log }) => reportEmailKeyCollisions(services.users, schema, log),
  housekeeping: ({ limits }) => Promise.all([limits.registration.purge(), limits.emailChange.purge()]),
};
