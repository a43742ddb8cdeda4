import type { Config } from '../config.ts';
import { feature } from '../feature.ts';
import type { Kernel, KernelUnit } from '../kernel/composition.ts';
import type { MailExports } from '../mail/feature.ts';
import type { PasswordsExports } from '../passwords/feature.ts';
import type { SessionsExports } from '../sessions/feature.ts';
import type { UsersExports } from '../users/feature.ts';
import { adminImportRoutes, ImportReportComponent } from './import-routes.ts';
import { adminMails } from './mails.ts';
import { createAdmin } from './migrations/2026-11-27-0019-admin.ts';
import { AdminRepository } from './repository.ts';
import { AdminUserComponent, AdminUserDetailComponent, adminRoutes } from './routes.ts';
import { type AdminRepositories, AdminService } from './service.ts';

export interface AdminUnit {
  admin: AdminRepository;
}

/**
 * Administration (issue 29): the admin API for support staff and admins, its search index and
 * the audit log's table. The roles and the disabled state are the account's (users/ migration
 * 0018); the sign-in core refuses disabled accounts; the sessions plugin checks roles.
 */
export const adminFeature = feature({
  name: 'admin',
  mails: Object.values(adminMails),
  migrations: { '2026-11-27-0019-admin': createAdmin },
  repositories: (db, { postgres }): AdminUnit => ({ admin: new AdminRepository(db, { postgres }) }),
  build(
    kernel: Kernel<Config, AdminRepositories & AdminUnit & KernelUnit, unknown>,
    needs: { sessions: SessionsExports; passwords: PasswordsExports; mail: MailExports; users: UsersExports },
  ) {
    const { passwords } = needs.passwords;
    return {
      admin: new AdminService({
        admin: kernel.repositories.admin,
        users: kernel.repositories.users,
        transaction: kernel.transaction,
        sessions: needs.sessions.sessions,
        passkeys: kernel.repositories.passkeys,
        methods: { ...needs.users.methods, hasPassword: (userId) => passwords.has(userId) },
        accountMail: needs.mail.accountMail,
        mail: needs.mail.mail,
        emailProven: needs.users.emailProven,
        now: kernel.now,
      }),
    };
  },
  routes: async (app, { own, needs, config, now }) => {
    await app.register(adminRoutes, { admin: own.admin });
    await app.register(adminImportRoutes, {
      users: needs.users.users,
      hashConcurrency: config.passwordHash.concurrency,
      now,
    });
  },
  components: () => [AdminUserComponent, AdminUserDetailComponent, ImportReportComponent],
});
