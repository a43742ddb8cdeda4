import type { Feature } from '../features.ts';
import { adminImportRoutes, ImportReportComponent } from './import-routes.ts';
import { createAdmin } from './migrations/2026-11-27-0019-admin.ts';
import { AdminUserComponent, AdminUserDetailComponent, adminRoutes } from './routes.ts';

/**
 * Administration (issue 29): the admin API for support staff and admins, its search index and
 * the audit log's table. The roles and the disabled state are the account's (users/ migration
 * 0018); the sign-in core refuses disabled accounts; the sessions plugin checks roles.
 */
export const adminFeature: Feature = {
  name: 'admin',
  migrations: { '2026-11-27-0019-admin': createAdmin },
  routes: async (app, { services, config }) => {
    await app.register(adminRoutes, { admin: services.admin });
    await app.register(adminImportRoutes, {
      users: services.users,
      hashConcurrency: config.passwordHash.concurrency,
      now: services.now,
    });
  },
  components: () => [AdminUserComponent, AdminUserDetailComponent, ImportReportComponent],
};
