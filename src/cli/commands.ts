// The admin CLI's commands, loaded by main.ts once the command line is known to name one: on the
// same DATABASE_URL (and settings) as the server, safe to run while servers run on that database.
import { parseArgs } from 'node:util';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import { type Database, openDatabase } from '../db/database.ts';
import { checkMailTemplates, compose, FEATURES, featuresOf, schemaMigrations } from '../features.ts';
import { actingAs, OPERATOR } from '../kernel/scope.ts';
import { AppError, ErrorTable, serveErrorCodes } from '../shared/errors.ts';
import { checkEmail } from '../users/rules.ts';
import { emailKey, type User } from '../users/user.ts';
import { UsageError, usageFailure } from './help.ts';
import { importUsers, progressReporter } from './import.ts';
import { askLine, NoPasswordRead, readPassword } from './prompt.ts';
import { formatTable } from './table.ts';
import { visible } from './visible.ts';

/** A user for --json: the id written as its exact digits, a JSON number. */
function userObject(user: User) {
  return {
    // JSON.rawJSON (Node 21+) puts text into the output as is, so a bigint above 2^53 stays exact.
    id: (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(user.id.toString()),
    email: user.email,
    name: user.name,
    createdAt: user.createdAt,
  };
}

/** The JSON line of a user for --json. */
function userJson(user: User): string {
  return visible(JSON.stringify(userObject(user)), true);
}

function userLine(user: User): string {
  return `${user.id}\t${visible(user.email)}\t${visible(user.name)}\t${user.createdAt.toISOString()}`;
}

function parseOptions(argv: string[], command: string) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        email: { type: 'string' },
        name: { type: 'string' },
        to: { type: 'string' },
        json: { type: 'boolean' },
        'no-password': { type: 'boolean' },
        locale: { type: 'string' },
        'redirect-uri': { type: 'string', multiple: true },
        'post-logout-redirect-uri': { type: 'string', multiple: true },
        public: { type: 'boolean' },
        'first-party': { type: 'boolean' },
        grant: { type: 'string', multiple: true },
        yes: { type: 'boolean' },
      },
    });
  } catch (error) {
    // An unknown option or a missing value: said by parseArgs, with this command's usage.
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError((error as Error).message, command);
    }
    throw error;
  }
}

async function run(command: string, argv: string[], config: Config, database: Database): Promise<number> {
  const { values, positionals } = parseOptions(argv, command);
  const need = (option: 'email' | 'name' | 'to'): string => {
    const value = values[option];
    if (typeof value !== 'string' || value === '') throw new UsageError(`--${option} is required`, command);
    return value;
  };

  if (values['no-password'] && command !== 'users add')
    throw new UsageError('--no-password is an option of "users add" only', command);
  if (values.locale !== undefined && command !== 'users add')
    throw new UsageError('--locale is an option of "users add" only', command);
  if (values.yes && command !== 'users delete')
    throw new UsageError('--yes is an option of "users delete" only', command);
  // A deletion cannot be undone: a person confirms it by typing the email again (below), and a
  // script must say --yes, so a command meant for another step never deletes by itself. Refused
  // before the database is touched.
  if (command === 'users delete' && !values.yes && !process.stdin.isTTY) {
    need('email');
    throw new UsageError(
      'users delete asks for a confirmation on a terminal; without one, add --yes',
      command,
    );
  }
  // An empty pipe is the operator's mistake in the command line, not a weak password: exit 2.
  const password = () =>
    readPassword().catch((error: unknown) => {
      throw error instanceof NoPasswordRead ? new UsageError(error.message, command) : error;
    });

  await database.migrate(schemaMigrations());
  if (command === 'migrate') {
    console.log('migrations applied');
    return 0;
  }
  const built = compose(config, database);
  const { users } = built.users;
  const { mail } = built.mail;
  const { oidc } = built;
  switch (command) {
    case 'users add': {
      const email = need('email');
      const name = need('name');
      // Checked before the password is asked for.
      const locale = users.localeOf(values.locale, undefined);
      const user = values['no-password']
        ? await users.registerWithoutPassword({ email, name, locale })
        : await users.register({ email, name, locale, password: await password() });
      console.log(`created user ${userLine(user)}`);
      return 0;
    }
    case 'users list': {
      // JSON lines stream; the table keeps only its printed cells, as its widths need every row.
      const rows: string[][] = [];
      for (let page = 1; ; page++) {
        const { users: batch } = await users.list({
          page,
          size: 100,
          offset: (page - 1) * 100,
          sort: 'id',
          descending: false,
        });
        for (const user of batch) {
          if (values.json) console.log(userJson(user));
          else
            rows.push([
              user.id.toString(),
              visible(user.email),
              visible(user.name),
              user.createdAt.toISOString(),
            ]);
        }
        if (batch.length < 100) break;
      }
      if (!values.json) {
        const lines = formatTable(['ID', 'EMAIL', 'NAME', 'CREATED'], rows, [
          'right',
          'left',
          'left',
          'left',
        ]);
        console.log(lines.join('\n'));
      }
      return 0;
    }
    case 'users import': {
      const file = positionals[2];
      if (!file) throw new UsageError('users import needs a FILE', command);
      const report = await importUsers(
        users,
        file,
        config.passwordHash.concurrency,
        progressReporter(process.stderr),
      );
      for (const r of report.refused) console.error(`line ${r.line}: ${visible(r.reason)}`);
      if (report.refused.length > 0)
        console.error(
          `usher: ${report.refused.length} of ${report.total} lines refused; nothing was imported. Fix them and run the import again.`,
        );
      console.log(
        `imported ${report.imported}, skipped ${report.skipped} (already registered), refused ${report.refused.length}, of ${report.total} rows in ${report.seconds.toFixed(1)} s`,
      );
      return report.refused.length === 0 ? 0 : 1;
    }
    case 'users set-password': {
      const email = need('email');
      const user = await users.setPassword(email, await password());
      console.log(`password changed for user ${user.id}; their sessions are ended`);
      return 0;
    }
    case 'users delete': {
      const email = need('email');
      if (!values.yes) {
        const found = await users.findByEmail(email);
        process.stderr.write(
          `User ${found.id}: ${visible(found.email)} (${visible(found.name)}) will be deleted, with their sessions, products and reviews.\n`,
        );
        const typed = await askLine('Type their email to confirm: ');
        if (emailKey(typed) !== emailKey(found.email)) {
          console.error('usher: the email typed does not match; nothing was deleted');
          return 1;
        }
      }
      const user = await users.deleteByEmail(email);
      console.log(`deleted user ${user.id} (${visible(user.email)})`);
      return 0;
    }
    case 'users set-role': {
      const email = need('email');
      const role = positionals[2];
      if (role !== 'user' && role !== 'support' && role !== 'admin')
        throw new UsageError('users set-role needs a ROLE: user, support or admin', command);
      const user = await users.setRole(email, role);
      console.log(`user ${user.id} (${visible(user.email)}) is now ${role}`);
      return 0;
    }
    case 'users collisions': {
      const sets = await users.emailKeyCollisions();
      if (values.json) {
        for (const set of sets)
          console.log(
            visible(
              JSON.stringify({
                emailKey: set.emailKey,
                holder: set.holder ? userObject(set.holder) : null,
                keptApart: set.keptApart.map(userObject),
              }),
              true,
            ),
          );
      } else if (sets.length === 0) console.log('no email key collisions');
      else {
        const rows = sets.flatMap((set) => [
          ...(set.holder ? [[set.holder.id.toString(), 'holds the key', visible(set.holder.email)]] : []),
          ...set.keptApart.map((user) => [user.id.toString(), 'kept apart', visible(user.email)]),
          ['', '', ''],
        ]);
        console.log(
          formatTable(['ID', 'STATE', 'EMAIL'], rows.slice(0, -1), ['right', 'left', 'left']).join('\n'),
        );
      }
      return sets.length === 0 ? 0 : 1;
    }
    case 'users verify': {
      const user = await users.markEmailVerified(need('email'));
      console.log(`verified the email of user ${user.id} (${visible(user.email)})`);
      return 0;
    }
    case 'clients add': {
      const created = await oidc.clients.add({
        name: need('name'),
        redirectUris: values['redirect-uri'] ?? [],
        postLogoutRedirectUris: values['post-logout-redirect-uri'] ?? [],
        public: values.public === true,
        firstParty: values['first-party'] === true,
        grants: values.grant ?? [],
      });
      console.log(JSON.stringify(created));
      return 0;
    }
    case 'clients list': {
      const clients = await oidc.clients.list();
      if (values.json) for (const client of clients) console.log(visible(JSON.stringify(client), true));
      else {
        const rows = clients.map((c) => [
          c.clientId,
          visible(c.name),
          c.public ? 'public' : 'confidential',
          c.firstParty ? 'yes' : 'no',
          c.redirectUris.join(' ') || '-',
          c.grantTypes.join(' '),
        ]);
        console.log(
          formatTable(['CLIENT ID', 'NAME', 'TYPE', 'FIRST PARTY', 'REDIRECT URIS', 'GRANTS'], rows, [
            'left',
            'left',
            'left',
            'left',
            'left',
            'left',
          ]).join('\n'),
        );
      }
      return 0;
    }
    case 'clients remove': {
      const id = positionals[2];
      if (!id) throw new UsageError('clients remove needs a client ID', command);
      await oidc.clients.remove(id);
      console.log(`removed client ${visible(id)}`);
      return 0;
    }
    case 'clients rotate-secret': {
      const id = positionals[2];
      if (!id) throw new UsageError('clients rotate-secret needs a client ID', command);
      console.log(JSON.stringify(await oidc.clients.rotateSecret(id)));
      return 0;
    }
    case 'keys list': {
      await oidc.keys.ensure();
      const keys = await oidc.keys.list();
      if (values.json) for (const key of keys) console.log(JSON.stringify(key));
      else
        console.log(
          formatTable(
            ['KID', 'ALG', 'STATUS', 'CREATED', 'SIGNS FROM', 'RETIRED'],
            keys.map((k) => [
              k.kid,
              k.alg,
              k.status,
              k.createdAt.toISOString(),
              k.signsFrom.toISOString(),
              k.retiredAt?.toISOString() ?? '-',
            ]),
            ['left', 'left', 'left', 'left', 'left', 'left'],
          ).join('\n'),
        );
      return 0;
    }
    case 'keys rotate': {
      const keys = await oidc.keys.rotate();
      for (const key of keys)
        console.log(
          `new ${key.alg} key ${key.kid}: published now, signs from ${key.signsFrom.toISOString()}`,
        );
      return 0;
    }
    case 'keys retire': {
      const kid = positionals[2];
      if (!kid) throw new UsageError('keys retire needs a KID', command);
      const key = await oidc.keys.retire(kid);
      console.log(`retired ${key.alg} key ${key.kid}: it is out of the JWKS within a minute`);
      return 0;
    }
    case 'mail send-test': {
      const to = checkEmail(need('to'));
      try {
        await mail.sendTest(to);
      } catch (error) {
        console.error(
          `usher: the ${mail.transportKind} transport refused the message: ${visible((error as Error).message)}`,
        );
        return 1;
      } finally {
        mail.close();
      }
      console.log(
        mail.transportKind === 'smtp'
          ? `sent a test message to ${visible(to)} through ${visible(new URL(config.mail.smtpUrl!).host)}`
          : `wrote a test message to ${visible(to)} into ${visible(config.mail.outboxDir)}`,
      );
      return 0;
    }
  }
  throw new UsageError(`unknown command "${command}"`);
}

/** Runs a command (help and the command line's grammar are main.ts's): 0 on success, else the exit code. */
export async function runCommand(command: string, argv: string[]): Promise<number> {
  let config: Config;
  try {
    config = loadConfig();
    checkMailTemplates(config);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`usher: configuration error: ${visible(error.message)}`);
      return 2;
    }
    throw error;
  }
  // The statuses of what the services throw, as the server has them (and the same refusal at start).
  serveErrorCodes(ErrorTable.of(featuresOf(FEATURES)));
  const database = openDatabase(config.databaseUrl, config.database);
  try {
    // Every change the CLI makes is recorded as the operator's (no address, no session).
    return await actingAs(OPERATOR, () => run(command, argv, config, database));
  } catch (error) {
    if (error instanceof UsageError) return usageFailure(error);
    if (error instanceof AppError) {
      console.error(`usher: ${error.code}: ${visible(error.message)}`);
      return 1;
    }
    console.error(`usher: ${visible(error instanceof Error ? error.message : String(error))}`);
    return 1;
  } finally {
    await database.close();
  }
}
