// Where messages go: an SMTP server (SMTP_URL), or, by default, .eml files in MAIL_OUTBOX, so
// `npm start` needs nothing else and a developer can open what would have been sent.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Transporter } from 'nodemailer';
import type { Config } from '../config.ts';
import type { OutgoingMessage } from './repository.ts';

export interface Delivery extends OutgoingMessage {
  /** Stable across retries, so a receiver can tell a resent message from a new one. */
  messageId: string;
}

export interface Transport {
  readonly kind: 'smtp' | 'files';
  /** Resolves with the path of the file written (file transport), for the log. */
  send(message: Delivery): Promise<string | undefined>;
  close(): void;
}

const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

/**
 * A nodemailer transport made on the first message rather than at start: nodemailer (with Node's
 * fetch, which it loads) holds several MiB that a server sending no mail never uses
 * (docs/benchmarks.md, memory).
 */
type Nodemailer = typeof import('nodemailer')['default'];

function onFirstUse(make: (nodemailer: Nodemailer) => Transporter) {
  let transporter: Promise<Transporter> | undefined;
  let made: Transporter | undefined;
  return {
    get: () => {
      transporter ??= import('nodemailer').then(({ default: nodemailer }) => {
        made = make(nodemailer);
        return made;
      });
      return transporter;
    },
    close: () => made?.close(),
  };
}

export function createTransport(mail: Config['mail']): Transport {
  if (mail.smtpUrl) {
    const smtpUrl = mail.smtpUrl;
    const smtp = onFirstUse((nodemailer) => {
      const transporter = nodemailer.createTransport(smtpUrl, { from: mail.from });
      Object.assign(transporter.options, SMTP_TIMEOUTS);
      return transporter;
    });
    return {
      kind: 'smtp',
      async send(message) {
        await (await smtp.get()).sendMail(fields(message));
        return undefined;
      },
      close: smtp.close,
    };
  }
  const files = onFirstUse((nodemailer) =>
    nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'unix' }, { from: mail.from }),
  );
  let made = false;
  return {
    kind: 'files',
    async send(message) {
      if (!made) {
        await mkdir(mail.outboxDir, { recursive: true });
        made = true;
      }
      const info = await (await files.get()).sendMail(fields(message));
      const name = `${new Date().toISOString().replaceAll(':', '-')}-${message.messageId.replace(/[^A-Za-z0-9.-]/g, '')}.eml`;
      // Written whole, then renamed: a reader of the folder never sees half a message.
      const partial = join(mail.outboxDir, `.${name}.partial`);
      await writeFile(partial, info.message as Buffer);
      const file = join(mail.outboxDir, name);
      await rename(partial, file);
      return file;
    },
    close: files.close,
  };
}

function fields(message: Delivery) {
  return {
    to: message.to,
    subject: message.subject,
    text: message.text,
    html: message.html,
    messageId: message.messageId,
  };
}
