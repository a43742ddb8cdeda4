// A real webhook receiver for the tests: an HTTP server on loopback that verifies every delivery
// with the `standardwebhooks` package (the specification's reference library) and keeps what it
// received. Tests decide how it answers (a status, a delay, hanging up) and may stop and start it.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  /** webhook-id: the same at every attempt of one event. */
  id: string;
  timestamp: number;
  type: string;
  /** The event's time, as the body says. */
  at: string;
  data: Record<string, unknown>;
  /** The body exactly as it came. */
  raw: string;
  /** Whether `standardwebhooks` verified it with the secret the receiver was given. */
  verified: boolean;
  /** What this receiver answered. */
  answered: number;
}

export type Answer = number | ((delivery: Received, index: number) => number | Promise<number>);

export interface WebhookReceiver {
  readonly url: string;
  readonly port: number;
  /** Verified deliveries answered 2xx, in arrival order. */
  readonly accepted: Received[];
  /** Every request, whatever it was answered. */
  readonly all: Received[];
  /** The signing secret (`whsec_…`) to verify with; set once the webhook is registered. */
  secret: string | undefined;
  answer: Answer;
  /** Extra headers on every answer (a `location` on a 302, to show it is not followed). */
  headers: Record<string, string>;
  /** Resolves once `accepted` holds `count` deliveries matching `where` (or rejects after `timeoutMs`). */
  waitFor(count: number, where?: (r: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

export async function startReceiver(
  options: { host?: string; port?: number; answer?: Answer } = {},
): Promise<WebhookReceiver> {
  const host = options.host ?? '127.0.0.1';
  let server: Server | undefined;
  let port = options.port ?? 0;
  const waiters = new Set<() => void>();
  const receiver: WebhookReceiver = {
    url: '',
    port: 0,
    accepted: [],
    all: [],
    secret: undefined,
    answer: options.answer ?? 204,
    headers: {},
    async waitFor(count, where = () => true, timeoutMs = 20_000) {
      const matching = () => receiver.accepted.filter(where);
      if (matching().length >= count) return matching();
      return new Promise<Received[]>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `the receiver had ${matching().length} of ${count} deliveries after ${timeoutMs} ms: ${receiver.all.map((r) => `${r.type}=${r.answered}`).join(', ')}`,
            ),
          );
        }, timeoutMs);
        const check = () => {
          if (matching().length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(matching());
        };
        waiters.add(check);
      });
    },
    async stop() {
      if (!server) return;
      const s = server;
      server = undefined;
      s.closeAllConnections();
      s.close();
      await once(s, 'close');
    },
    async start() {
      server = createServer(handle);
      server.listen(port, host);
      await once(server, 'listening');
      port = (server.address() as AddressInfo).port;
      Object.assign(receiver, { port, url: `http://${host}:${port}/hooks` });
    },
  };

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const headers = {
      'webhook-id': String(request.headers['webhook-id'] ?? ''),
      'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(request.headers['webhook-signature'] ?? ''),
    };
    let verified = false;
    if (receiver.secret) {
      try {
        new Webhook(receiver.secret).verify(raw, headers);
        verified = true;
      } catch {
        verified = false;
      }
    }
    let body: { type?: string; timestamp?: string; data?: Record<string, unknown> } = {};
    try {
      body = JSON.parse(raw);
    } catch {}
    const received: Received = {
      id: headers['webhook-id'],
      timestamp: Number(headers['webhook-timestamp']),
      type: String(body.type),
      at: String(body.timestamp),
      data: body.data ?? {},
      raw,
      verified,
      answered: 0,
    };
    const index = receiver.all.length;
    receiver.all.push(received);
    const status =
      typeof receiver.answer === 'function' ? await receiver.answer(received, index) : receiver.answer;
    received.answered = verified ? status : 401;
    response.writeHead(received.answered, { ...receiver.headers, 'content-type': 'text/plain' });
    response.end(verified ? 'ok' : 'signature not verified');
    if (verified && status >= 200 && status < 300) {
      receiver.accepted.push(received);
      for (const waiter of [...waiters]) waiter();
    }
  }

  await receiver.start();
  return receiver;
}
