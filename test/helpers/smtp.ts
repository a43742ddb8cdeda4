// A real SMTP server (nodemailer's smtp-server) that a test starts, and the messages it received,
// parsed by mailparser: mail in tests goes over a socket to a real receiving end, never a mock.
import { once } from 'node:events';
import { type ParsedMail, simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  to: string;
  subject: string;
  text: string;
  html: string;
  messageId: string;
  raw: string;
  /** The envelope's recipients (RCPT TO), where the server delivers: not the To header. */
  envelopeTo: string[];
}

export interface TestSmtp {
  readonly url: string;
  readonly port: number;
  readonly messages: ReceivedMail[];
  /** Resolves with the first message (received or arriving) that matches, or fails after `timeoutMs`. */
  waitFor(match: (m: ReceivedMail) => boolean, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

function address(parsed: ParsedMail): string {
  const to = Array.isArray(parsed.to) ? parsed.to[0] : parsed.to;
  return to?.value[0]?.address ?? '';
}

/** Starts a server on 127.0.0.1 (on `port`, or any free one), plain SMTP, any sender accepted. */
export async function startSmtp(port = 0): Promise<TestSmtp> {
  const messages: ReceivedMail[] = [];
  const waiters = new Set<() => void>();
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const parsed = await simpleParser(raw);
        messages.push({
          to: address(parsed),
          subject: parsed.subject ?? '',
          text: parsed.text ?? '',
          html: typeof parsed.html === 'string' ? parsed.html : '',
          messageId: parsed.messageId ?? '',
          raw,
          envelopeTo: session.envelope.rcptTo.map((r) => r.address),
        });
        for (const wake of waiters) wake();
        callback();
      });
    },
  });
  server.listen(port, '127.0.0.1');
  await once(server.server, 'listening');
  const actual = (server.server.address() as { port: number }).port;
  return {
    url: `smtp://127.0.0.1:${actual}`,
    port: actual,
    messages,
    async waitFor(match, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = messages.find(match);
        if (found) return found;
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(`no matching mail within ${timeoutMs} ms (${messages.length} received)`);
        await new Promise<void>((resolve) => {
          const wake = () => {
            waiters.delete(wake);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(wake, left);
          waiters.add(wake);
        });
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The token in a link to `page` in a message's text part. */
export function linkToken(
  mail: ReceivedMail,
  page: '/reset-password' | '/verify-email' | '/signin/email-link',
): string {
  const match = new RegExp(`${page}#token=([A-Za-z0-9_-]+)`).exec(mail.text);
  if (!match) throw new Error(`no ${page} link in: ${mail.text}`);
  return match[1]!;
}
