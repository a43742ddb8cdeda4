// Admin CLI: `npx usher <command>` (bin/usher.mjs, after the Node version check) or
// `npm run cli -- <command>`, on the same DATABASE_URL (and settings) as the server, safe to run
// while servers run on that database. Errors go to stderr with a non-zero exit code: 2 for usage
// errors, with the usage of the command that was meant.
import { parseArgs } from 'node:util';
import { actingAs, OPERATOR } from '../audit/context.ts';
import { type Config, ConfigError, loadConfig } from '../config.ts';
import { type Database, openDatabase } from '../db/database.ts';
import { schemaMigrations } from '../features.ts';
import { createServices } from '../services.ts';
import { AppError } from '../shared/errors.ts';
import { checkEmail } from '../users/rules.ts';
import type { User } from '../users/user.ts';
import { importUsers, progressReporter } from './import.ts';
import { readPassword } from './prompt.ts';
import { formatTable } from './table.ts';
import { visible } from './visible.ts';

const HELP: Record<string, string> = {
  '': `Usage: usher <command> [options]

Commands:
  users add --email E --name N     register a user (password from stdin or a hidden prompt;
                                   --no-password: an account without one)
  users list [--json]              list every user
  users import FILE                import users from JSON lines or CSV, with their passwords or
                                   the hashes of the system they come from (bcrypt, argon2, …)
  users set-password --email E     set a new password (stdin or prompt); ends the user's sessions
  users delete --email E           delete a user with their sessions, products and reviews
  users verify --email E           mark a user's email as verified
  users set-role --email E ROLE    make a user user, support or admin (the console and admin API)
  mail send-test --to E            send a test message through the configured mail transport
  clients add --name N --redirect-uri URI …
                                   register an app that signs in through Usher (OpenID Connect)
  clients list [--json]            list the registered apps
  clients remove ID                remove an app (its tokens stop working)
  clients rotate-secret ID         give an app a new secret (the old one stops working)
  keys list [--json]               list the provider's signing keys
  keys rotate                      new signing keys (published now, signing within a minute)
  keys retire KID                  take an old key out of the JWKS
  migrate                          apply pending database migrations

The database and settings come from the same environment variables as the server (DATABASE_URL…).
In the repository, run it as "npx usher <command>" (or "npm run cli -- <command>").
Run "usher <command> --help" for one command.`,
  'users add': `Usage: usher users add --email E --name N
       usher users add --email E --name N --no-password

Registers a user by the same rules as POST /api/users. The password is read from standard input
when it is piped (first line), or asked twice without echo on a terminal; never from arguments.
  printf '%s\\n' "$PASSWORD" | npx usher users add --email ada@example.com --name Ada
With --no-password, nothing is read: the account has no password (a password sign-in fails as
with a wrong one) until its owner sets one through forgot-password, or an operator with
"users set-password".
Either takes --locale L: the account's language, a BCP 47 tag like de, fr-CA or pt-BR (en by
default); its mail, the verification link first, is written in the best match there are texts for.`,
  'users list': `Usage: usher users list [--json]

Prints every user in id order: a table with a header row (once every user is read, to align its
columns), or with --json one JSON object per line as they are read, ids as JSON numbers (exact,
also above 2^53), nothing else on standard output.`,
  'users import': `Usage: usher users import FILE

Imports users from FILE: JSON lines (.jsonl/.ndjson), one object per line,
  {"email":…,"name":…,"passwordHash":"$2b$10$…","emailVerified":true,"createdAt":"2024-05-01T12:00:00Z"}
or CSV with a header row naming the same columns in any order (.csv; RFC 4180: a quoted field may
hold commas, doubled quotes and line breaks; an empty cell is an absent field). email and name are
required. A password is either "password" (plain text: hashed by Usher, by the registration rules)
or "passwordHash", the hash the user's old system keeps, never both: bcrypt ($2a$, $2b$, $2y$;
Supabase, Auth0), argon2 ($argon2id$, $argon2i$), scrypt ($scrypt$ln=…,r=…,p=…$salt$hash) and
PBKDF2 ($pbkdf2-sha256$i=…$salt$hash, $pbkdf2-sha512$…, $pbkdf2$… as passlib writes them) in PHC
form, and Django's pbkdf2_sha256$…, pbkdf2_sha1$… and argon2$…. The user signs in with their old
password, which is then re-hashed as argon2id. A hash whose cost is absurd (bcrypt above 14,
PBKDF2 above 3,000,000 iterations, scrypt above 64 MiB, argon2 above 256 MiB or 16 passes) is
refused. A line without either makes an account without a password, as "users add --no-password"
does. emailVerified (true or false) and createdAt (a date and time with its zone) come from the
old system; imported users get no mail.

Every line is checked first. When one is bad, each bad line is reported with its number and the
reason, and nothing is imported: fix the file and run the command again. Then the accounts go in
batches of 500, each one transaction; plain passwords are hashed in parallel up to
HASH_CONCURRENCY. Emails that already have an account (or came on an earlier line) are skipped,
so an import that stopped part-way is finished by running it again. The file is streamed, read
twice. A progress bar is shown on a terminal, plain progress lines otherwise.
Exit code 0 when the file was imported, 1 when it was refused or the import stopped.`,
  'users set-password': `Usage: usher users set-password --email E

Sets a new password (standard input, or a hidden prompt asked twice) by the registration rules,
and ends every session of that user.`,
  'users verify': `Usage: usher users verify --email E

Marks the user's email as verified, as following the link in a verification mail would (for
addresses an operator has confirmed some other way).`,
  'users set-role': `Usage: usher users set-role --email E ROLE

Sets what the user may administer: "user" (nothing), "support" (find users, end sessions, send
mails, in the console at /admin and the admin API) or "admin" (everything). The first admin is made
this way. The last admin who can sign in cannot be demoted (make another one first). The user's
sessions keep working and carry the new role from their next request.`,
  'mail send-test': `Usage: usher mail send-test --to E

Sends a test message to E through the configured transport (SMTP_URL, or a .eml file in
MAIL_OUTBOX) at once, not through the outbox, and reports what the transport said. Exit code 0
when it was accepted, 1 when it was not.`,
  'users delete': `Usage: usher users delete --email E

Deletes the user with that email, with their sessions, products and reviews.`,
  'clients add': `Usage: usher clients add --name N --redirect-uri URI [--redirect-uri URI …]
       [--post-logout-redirect-uri URI …] [--public] [--first-party] [--grant client_credentials]

Registers an app that signs in through Usher's OpenID Connect provider (issuer PUBLIC_URL/oidc) and
prints one JSON object: {"clientId", "clientSecret"}. The secret is shown this once (kept sealed
under ENCRYPTION_KEY); --public (a browser or mobile app, which cannot keep a secret) has none.
Redirect URIs are compared exactly: https, http only to 127.0.0.1, [::1] or localhost, or a native
app's reverse-domain scheme (com.example.app:/callback). --first-party: the person is never asked
to consent (your own apps). --grant client_credentials: the app may also get tokens as itself
(then --redirect-uri may be left out). Every client uses PKCE (S256).`,
  'clients list': `Usage: usher clients list [--json]

Prints the registered apps: a table, or with --json one JSON object per line.`,
  'clients remove': `Usage: usher clients remove ID

Removes the app: its secret, refresh tokens and consents stop working at once.`,
  'clients rotate-secret': `Usage: usher clients rotate-secret ID

Gives the app a new secret, printed as {"clientId", "clientSecret"}; the old secret stops working.`,
  'keys list': `Usage: usher keys list [--json]

Prints the provider's signing keys and what each does: signing (signs new tokens), next (published,
signs from its time), published (verifies tokens it signed), retired (out of the JWKS).`,
  'keys rotate': `Usage: usher keys rotate

Makes new signing keys (RS256 for ID tokens, ES256 for access tokens). They are in the JWKS at once
and sign from a minute later, by when every instance has picked them up; the old keys stay in the
JWKS, so tokens they signed still verify, until "usher keys retire".`,
  'keys retire': `Usage: usher keys retire KID

Takes an old key out of the JWKS: tokens it signed no longer verify. Retire a key only once the
tokens it signed have expired (ID tokens: an hour; access tokens: ACCESS_TOKEN_TTL_SECONDS).`,
  migrate: `Usage: usher migrate

Applies pending migrations (servers also do this at start; this is for deploy pipelines).`,
};

/** A command line that cannot be run as written; `command` is the one meant, '' when unknown. */
class UsageError extends Error {
  readonly command: string;
  constructor(message: string, command = '') {
    super(message);
    this.command = command;
  }
}

/** The usage line(s) of a command: its help up to the first blank line; everything for no command. */
function usageOf(command: string): string {
  if (command === '') return HELP['']!;
  const [usage] = HELP[command]!.split('\n\n');
  return `${usage}\nRun "usher ${command} --help" for more.`;
}

/** The JSON line of a user for --json: the id written as its exact digits, a JSON number. */
function userJson(user: User): string {
  const line = JSON.stringify({
    // JSON.rawJSON (Node 21+) puts text into the output as is, so a bigint above 2^53 stays exact.
    id: (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(user.id.toString()),
    email: user.email,
    name: user.name,
    createdAt: user.createdAt,
  });
  return visible(line, true);
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

async function run(argv: string[], config: Config, database: Database): Promise<number> {
  const words = argv.filter((a) => !a.startsWith('-'));
  const command =
    words[0] === 'users' || words[0] === 'mail' || words[0] === 'clients' || words[0] === 'keys'
      ? `${words[0]} ${words[1] ?? ''}`.trim()
      : (words[0] ?? '');
  if (argv.includes('--help') || argv.includes('-h') || command === '' || command === 'help') {
    const text = HELP[command === 'help' ? '' : command];
    if (text === undefined) throw new UsageError(`unknown command "${command}"`);
    console.log(text);
    return 0;
  }
  if (HELP[command] === undefined) throw new UsageError(`unknown command "${command}"`);

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

  await database.migrate(schemaMigrations());
  if (command === 'migrate') {
    console.log('migrations applied');
    return 0;
  }
  const { users, mail, oidc } = createServices(config, database);
  switch (command) {
    case 'users add': {
      const email = need('email');
      const name = need('name');
      // Checked before the password is asked for.
      const locale = users.localeOf(values.locale, undefined);
      const user = values['no-password']
        ? await users.registerWithoutPassword({ email, name, locale })
        : await users.register({ email, name, locale, password: await readPassword() });
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
      const user = await users.setPassword(email, await readPassword());
      console.log(`password changed for user ${user.id}; their sessions are ended`);
      return 0;
    }
    case 'users delete': {
      const user = await users.deleteByEmail(need('email'));
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

async function main(): Promise<number> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`usher: configuration error: ${visible(error.message)}`);
      return 2;
    }
    throw error;
  }
  const database = openDatabase(config.databaseUrl, config.database);
  try {
    // Every change the CLI makes is recorded as the operator's (no address, no session).
    return await actingAs(OPERATOR, () => run(process.argv.slice(2), config, database));
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`usher: ${visible(error.message)}\n\n${usageOf(error.command)}`);
      return 2;
    }
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

process.exitCode = await main();
