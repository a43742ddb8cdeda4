// One POST to a receiver, carefully (OWASP's SSRF prevention): the address actually connected to
// is checked against private, loopback and link-local ranges unless they are allowed (checked on
// the socket, after DNS, so a name that resolves to an inner address, or re-resolves to one, gets
// nowhere); redirects are not followed; the whole exchange has a deadline; and no more than a
// small part of the answer is read.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { BlockList, isIP, type LookupFunction, type Socket } from 'node:net';

/** What an attempt came to: the receiver's status (any), or why there was none. */
export type PostResult = { ok: true; status: number; body: string } | { ok: false; error: string };

export interface TransportOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

/** How much of a receiver's answer is read (kept with the delivery, for the admin who looks). */
export const RESPONSE_CAP = 1024;

// IANA's special-purpose ranges that are not the public internet (RFC 6890 and its updates).
const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  PRIVATE.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::1', 128],
  // IPv4-compatible (deprecated, ::a.b.c.d) and SIIT's IPv4-translated forms.
  ['::', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  PRIVATE.addSubnet(network, prefix, 'ipv6');

/** An address that is not on the public internet (an IPv4-mapped IPv6 address by its IPv4 part). */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return PRIVATE.check(mapped[1]!, 'ipv4');
  const family = isIP(address);
  if (family === 4) return PRIVATE.check(address, 'ipv4');
  if (family === 6) return PRIVATE.check(address, 'ipv6');
  return true;
}

/** The host of a URL as a name or a bare address (IPv6 without its brackets). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/** DNS, with every inner address left out (none left: an error that says so). */
const publicLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
    if (error) return callback(error, '', 0);
    const usable = addresses.filter((a) => !isPrivateAddress(a.address));
    if (usable.length === 0)
      return callback(
        Object.assign(new Error(`${hostname} resolves only to private or loopback addresses`), {
          code: 'EPRIVATE',
        }),
        '',
        0,
      );
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable);
    return callback(null, usable[0]!.address, usable[0]!.family);
  });
};

export class WebhookTransport {
  readonly #options: TransportOptions;
  // Kept-alive connections per receiver: each was checked when it connected.
  readonly #http = new HttpAgent({ keepAlive: true, maxSockets: 64 });
  readonly #https = new HttpsAgent({ keepAlive: true, maxSockets: 64 });

  constructor(options: TransportOptions) {
    this.#options = options;
  }

  post(target: string, headers: Record<string, string>, body: string): Promise<PostResult> {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return Promise.resolve({ ok: false, error: 'the URL cannot be read' });
    }
    const allowPrivate = this.#options.allowPrivate;
    const host = hostOf(url);
    if (!allowPrivate && isIP(host) !== 0 && isPrivateAddress(host))
      return Promise.resolve({ ok: false, error: `refused: ${host} is a private or loopback address` });
    const secure = url.protocol === 'https:';
    return new Promise<PostResult>((resolve) => {
      let settled = false;
      const finish = (result: PostResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve(result);
      };
      const request = (secure ? httpsRequest : httpRequest)(url, {
        method: 'POST',
        agent: secure ? this.#https : this.#http,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        ...(allowPrivate ? {} : { lookup: publicLookup }),
      });
      const deadline = setTimeout(() => {
        finish({ ok: false, error: `no answer within ${this.#options.timeoutMs / 1000} s` });
        request.destroy();
      }, this.#options.timeoutMs);
      if (!allowPrivate) {
        // The address connected to, whatever DNS said: the last word before a byte is sent
        // (Node writes a request's first bytes only once its socket has connected).
        request.on('socket', (socket: Socket) => {
          const check = () => {
            const address = socket.remoteAddress;
            if (address === undefined || isPrivateAddress(address)) {
              finish({
                ok: false,
                error: `refused: connected to a private or loopback address (${address})`,
              });
              request.destroy();
            }
          };
          if (socket.connecting) socket.prependOnceListener('connect', check);
          else check();
        });
      }
      request.on('error', (error: NodeJS.ErrnoException) => {
        finish({ ok: false, error: error.code === 'EPRIVATE' ? `refused: ${error.message}` : error.message });
      });
      request.on('response', (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () =>
          finish({ ok: true, status, body: Buffer.concat(chunks).toString('utf8').slice(0, RESPONSE_CAP) });
        response.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          size += chunk.length;
          // Enough: the rest of a large answer is never read (the connection is dropped).
          if (size >= RESPONSE_CAP) {
            done();
            response.destroy();
          }
        });
        response.on('end', done);
        response.on('error', () => done());
      });
      request.end(body);
    });
  }

  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }
}
