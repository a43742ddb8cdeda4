// The admin CLI's help texts and command-line grammar: light on purpose (no setting, database or
// feature module), so help and usage errors answer at once, whatever the environment holds.
import { visible } from './visible.ts';

export const HELP: Record<string, string> = {
  '': `Usage: usher <command> [options]

Commands:
  users add --email E --name N     register a user (password from stdin or a hidden prompt;
                                   --no-password: an account without one)
  users list [--json]              list every user
  users import FILE                import users from JSON lines or CSV, with their passwords or
                                   the hashes of the system they come from (bcrypt, argon2, …)
  users set-password --email E     set a new password (stdin or prompt); ends the user's sessions
  users delete --email E [--yes]   delete a user with their sessions, products and reviews
                                   (asks to type the email again; --yes: don't ask)
  users verify --email E           mark a user's email as verified
  users set-role --email E ROLE    make a user user, support or admin (the console and admin API)
  users collisions [--json]        list accounts whose emails became one under the email
                                   normalisation and were kept apart (resolve each set)
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
Run "usher <command> --help" for one command, "usher users --help" for the users commands.`,
  users: `Usage: usher users <command> [options]

Commands:
  users add --email E --name N     register a user (password from stdin or a hidden prompt;
                                   --no-password: an account without one)
  users list [--json]              list every user
  users import FILE                import users from JSON lines or CSV
  users set-password --email E     set a new password (stdin or prompt); ends the user's sessions
  users delete --email E [--yes]   delete a user (asks to type the email again; --yes: don't ask)
  users verify --email E           mark a user's email as verified
  users set-role --email E ROLE    make a user user, support or admin
  users collisions [--json]        list accounts kept apart because their emails became one

Run "usher users <command> --help" for one command.`,
  mail: `Usage: usher mail <command> [options]

Commands:
  mail send-test --to E            send a test message through the configured mail transport

Run "usher mail <command> --help" for one command.`,
  clients: `Usage: usher clients <command> [options]

Commands:
  clients add --name N --redirect-uri URI …
                                   register an app that signs in through Usher (OpenID Connect)
  clients list [--json]            list the registered apps
  clients remove ID                remove an app (its tokens stop working)
  clients rotate-secret ID         give an app a new secret (the old one stops working)

Run "usher clients <command> --help" for one command.`,
  keys: `Usage: usher keys <command> [options]

Commands:
  keys list [--json]               list the provider's signing keys
  keys rotate                      new signing keys (published now, signing within a minute)
  keys retire KID                  take an old key out of the JWKS

Run "usher keys <command> --help" for one command.`,
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
  'users collisions': `Usage: usher users collisions [--json]

Lists the accounts whose emails became one address when Usher began comparing emails by their
NFKC form and IDNA domain (migration 0028): U+212A KELVIN SIGN and k, fullwidth letters and their
ASCII, exämple.com and xn--exmple-cua.com. Nothing was merged: in each set the account that held
the key keeps it (it signs in by that email), and the others are kept apart on their old key, so
they cannot sign in by email. Resolve a set by giving a kept-apart account another email (PATCH
/api/admin/users/{id} or the console), which removes it from this list, or by deleting it by
its id (DELETE /api/admin/users/{id}; "users delete --email" finds the account holding the key).
Deleting the holder or giving it another email hands the key to the oldest kept-apart account. A
table, or with --json one JSON object per set: {"emailKey", "holder", "keptApart"}, each account
{"id", "email", "name", "createdAt"}. Exit code 0 when there is none, 1 when some remain.`,
  'mail send-test': `Usage: usher mail send-test --to E

Sends a test message to E through the configured transport (SMTP_URL, or a .eml file in
MAIL_OUTBOX) at once, not through the outbox, and reports what the transport said. Exit code 0
when it was accepted, 1 when it was not.`,
  'users delete': `Usage: usher users delete --email E [--yes]

Deletes the user with that email, with their sessions, products and reviews. On a terminal it
first shows the user and asks for their email to be typed again; anything else deletes nothing.
Without a terminal (a script, a pipe) it deletes only with --yes, which also skips the question.
Exit code 0 when the user was deleted, 1 when not (unknown email, the last admin, a mistyped
confirmation), 2 for a usage error (no --yes without a terminal).`,
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

Removes the app: its secret, refresh tokens and consents stop working, on running servers
within 30 seconds (they keep an app they looked up that long).`,
  'clients rotate-secret': `Usage: usher clients rotate-secret ID

Gives the app a new secret, printed as {"clientId", "clientSecret"}. The new secret works at once;
the old one stops working, on running servers within 30 seconds.`,
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
export class UsageError extends Error {
  readonly command: string;
  constructor(message: string, command = '') {
    super(message);
    this.command = command;
  }
}

/** The commands that have subcommands ("users add"); their own help lists those. */
const GROUPS = new Set(['users', 'mail', 'clients', 'keys']);

/**
 * The usage line(s) of a command: its help up to the first blank line; everything for no command
 * or a group (the list of its commands is the usage there).
 */
export function usageOf(command: string): string {
  if (command === '' || GROUPS.has(command)) return HELP[command]!;
  const [usage] = HELP[command]!.split('\n\n');
  return `${usage}\nRun "usher ${command} --help" for more.`;
}

/**
 * The command a command line names (a key of HELP: '' for none, "users" for the group alone) and
 * whether its help is asked for. Worked out before any setting is read or database opened, so
 * help and usage errors answer whatever the environment holds.
 */
export function commandLine(argv: string[]): { command: string; help: boolean } {
  const words = argv.filter((a) => !a.startsWith('-'));
  const help = argv.includes('--help') || argv.includes('-h') || words[0] === 'help';
  if (words[0] === 'help') words.shift();
  const [first = '', second] = words;
  const command = GROUPS.has(first) && second !== undefined ? `${first} ${second}` : first;
  if (HELP[command] === undefined)
    throw new UsageError(`unknown command "${command}"`, GROUPS.has(first) ? first : '');
  // "usher users" alone runs nothing: like a mistyped command, it exits 2 with the list of users
  // commands, so a script that lost its subcommand fails instead of passing.
  if (GROUPS.has(command) && !help) throw new UsageError(`"usher ${command}" needs a command`, command);
  return { command, help: help || command === '' };
}

/** A usage error on stderr, with the usage of the command meant; exit code 2. */
export function usageFailure(error: UsageError): number {
  console.error(`usher: ${visible(error.message)}\n\n${usageOf(error.command)}`);
  return 2;
}
