// The example feature: everything a feature with state brings, in one folder, added to the app by
// one line (its test's `FEATURES.with(exampleFeature)`): a table (migration.ts), a repository, a
// service, routes, an audit event, a metric, a mail with its texts (mails.ts) and a setting.
import type { Config } from '../../../src/config.ts';
import { feature } from '../../../src/feature.ts';
import type { Kernel, KernelUnit } from '../../../src/kernel/composition.ts';
import type { MailExports, MailUnit } from '../../../src/mail/feature.ts';
import type { UsersUnit } from '../../../src/users/feature.ts';
import { exampleMails } from './mails.ts';
import { type NotesObservers, notesMetrics } from './metrics.ts';
import { createExampleNotes } from './migration.ts';
import { NotesRepository } from './repository.ts';
import { notesRoutes } from './routes.ts';
import { NotesService, type NotesUnit } from './service.ts';
import { type ExampleSettings, exampleSettings } from './settings.ts';

export const exampleFeature = feature({
  name: 'example',
  migrations: { '2026-12-07-9000-example-notes': createExampleNotes },
  settings: exampleSettings,
  mails: Object.values(exampleMails),
  repositories: (db): NotesUnit => ({ notes: new NotesRepository(db) }),
  metrics: (registry) => notesMetrics(registry),
  build(
    kernel: Kernel<Config, NotesUnit & UsersUnit & MailUnit & KernelUnit, NotesObservers, ExampleSettings>,
    needs: { mail: MailExports },
  ) {
    return {
      notes: new NotesService({
        notes: kernel.repositories.notes,
        transaction: kernel.transaction,
        policy: kernel.settings,
        accountMail: needs.mail.accountMail,
        mail: needs.mail.mail,
        observe: kernel.observe,
        now: kernel.now,
      }),
    };
  },
  routes: (app, { own }) => app.register(notesRoutes, { notes: own.notes }),
});
