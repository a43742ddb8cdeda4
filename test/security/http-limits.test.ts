// HTTP framing and limits, over raw TCP against a real server process: request smuggling
// (Content-Length with Transfer-Encoding), oversized headers, a very long URL, a client that trickles
// its headers, and a client that stalls in the middle of its body. The server must refuse cleanly
// and keep serving everyone else. The HTTP parser is the same whatever the store, so one server on a
// SQLite file is enough here.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type ServerProcess, startServer } from '../helpers/process.ts';
import { freshDatabaseUrl } from '../helpers/stores.ts';

const REQUEST_TIMEOUT_MS = 5_000;
/** src/app.ts sets headersTimeout to 10 s. */
const HEADERS_TIMEOUT_MS = 10_000;
/** What the test waits for a trickling client to be cut off; see the TODO below for the 15 s goal. */
const SLOW_CLIENT_BOUND_MS = 45_000;
const SLOW_CLIENT_GOAL_MS = 15_000;

interface Exchange {
  /** Everything the server wrote, as latin1 text. */
  text: string;
  /** The server closed (or reset) the connection before the deadline. */
  closedByServer: boolean;
  /** Milliseconds from connect to close (or to the deadline). */
  ms: number;
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Status lines in `text`: how many responses the server wrote. */
function responses(text: string): RawResponse[] {
  const found: RawResponse[] = [];
  let rest = text;
  for (;;) {
    const start = rest.search(/HTTP\/1\.[01] \d{3}/);
    if (start < 0) return found;
    rest = rest.slice(start);
    const end = rest.indexOf('\r\n\r\n');
    if (end < 0) return found;
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    found.push({
      status: Number(statusLine.split(' ')[1]),
      headers,
      body: rest.slice(end + 4, end + 4 + length),
    });
    rest = rest.slice(end + 4 + length);
  }
}

/**
 * Opens a socket, lets `drive` write to it, and collects what comes back until the server closes
 * the connection or `waitMs` passes (then the socket is destroyed here).
 */
function exchange(
  port: number,
  drive: (socket: Socket) => void | Promise<void>,
  waitMs = REQUEST_TIMEOUT_MS,
): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const started = Date.now();
    let text = '';
    let settled = false;
    const settle = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closedByServer, ms: Date.now() - started });
    };
    const timer = setTimeout(() => settle(false), waitMs);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', () => settle(true));
    socket.on('close', () => settle(true));
    socket.on('connect', () => {
      Promise.resolve(drive(socket)).catch(() => settle(false));
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('HTTP framing and limits on a real server', () => {
  let server: ServerProcess;
  let port: number;
  let dropDatabase: () => Promise<void> = async () => {};
  /** A client that trickles headers, started first so its wait overlaps the other tests. */
  let slowClient: Promise<Exchange>;

  before(async () => {
    const fresh = await freshDatabaseUrl('sqlite');
    dropDatabase = fresh.drop;
    server = await startServer({ DATABASE_URL: fresh.url, PROFILE: 'b' });
    port = Number(new URL(server.url).port);
    slowClient = exchange(
      port,
      async (socket) => {
        socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        // One header line a second: never idle, never finished.
        for (let i = 0; !socket.destroyed && i < 60; i++) {
          await sleep(1000);
          if (!socket.destroyed) socket.write(`X-Slow-${i}: ${'a'.repeat(10)}\r\n`);
        }
      },
      SLOW_CLIENT_BOUND_MS,
    );
  });
  after(async () => {
    if (server) assert.equal(await server.stop('SIGTERM'), 0, server.output());
    await dropDatabase();
  });

  const healthy = async () => {
    assert.equal(server.child.exitCode, null, `the server exited: ${server.output()}`);
    const res = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok' });
  };

  /** Whether a user with that email exists (profile B lists users). */
  const userExists = async (email: string) => {
    const res = await fetch(`${server.url}/api/users?size=100&sort=-id`);
    const users = (await res.json()) as { email: string }[];
    return users.some((u) => u.email === email);
  };

  const smuggled = (email: string) => {
    const hidden = JSON.stringify({ email, name: 'Smuggled', password: 'smuggled-pass-1' });
    return (
      'POST /api/users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      `Content-Length: ${Buffer.byteLength(hidden)}\r\n\r\n${hidden}`
    );
  };

  const smugglingVariants = (email: string): Record<string, string> => {
    const hidden = smuggled(email);
    const chunkedBody = `0\r\n\r\n${hidden}`;
    const head = 'POST /api/signin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n';
    return {
      'CL then TE': `${head}Content-Length: ${chunkedBody.length}\r\nTransfer-Encoding: chunked\r\n\r\n${chunkedBody}`,
      'TE then CL': `${head}Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n${chunkedBody}`,
      'CL with TE in odd case': `${head}Content-Length: ${chunkedBody.length}\r\nTransfer-Encoding: ChUnKeD\r\n\r\n${chunkedBody}`,
      'two different Content-Lengths': `${head}Content-Length: 5\r\nContent-Length: ${5 + hidden.length}\r\n\r\n{"a":${hidden}`,
      'TE chunked, identity with CL': `${head}Content-Length: ${chunkedBody.length}\r\nTransfer-Encoding: chunked, identity\r\n\r\n${chunkedBody}`,
    };
  };

  test('ISSUE 5: a request with both Content-Length and Transfer-Encoding (smuggling) is refused with 400, the connection closed, and the request hidden in its body is neither answered nor run', async () => {
    for (const variant of Object.keys(smugglingVariants('x@example.com'))) {
      const email = `smuggled.${randomBytes(4).toString('hex')}@example.com`;
      const raw = smugglingVariants(email)[variant]!;
      const result = await exchange(port, (socket) => {
        socket.write(raw);
      });
      const answers = responses(result.text);
      assert.equal(answers.length, 1, `${variant}: ${answers.length} responses: ${result.text}`);
      assert.equal(answers[0]!.status, 400, `${variant}: ${result.text}`);
      assert.ok(result.closedByServer, `${variant}: the server kept the connection open`);
      assert.equal(await userExists(email), false, `${variant}: the hidden registration ran`);
    }
    await healthy();
  });

  test("CONTRACT: the 400 for a request the HTTP parser refuses is in Usher's error shape ({error: CODE, message})", {}, async () => {
    const result = await exchange(port, (socket) => {
      socket.write(
        'POST /api/users HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      );
    });
    const [answer] = responses(result.text);
    assert.equal(answer?.status, 400);
    const body = JSON.parse(answer!.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], answer!.body);
    assert.match(String(body.error), /^[A-Z][A-Z_]*$/);
  });

  test('ISSUE 5: a request with 20 KB of headers is refused with 431 and the server stays up', async () => {
    for (const [what, headers] of [
      ['one 20 KB header', `X-Big: ${'a'.repeat(20 * 1024)}\r\n`],
      [
        '200 headers of 100 bytes',
        Array.from({ length: 200 }, (_, i) => `X-H${i}: ${'b'.repeat(94)}\r\n`).join(''),
      ],
      ['a 20 KB cookie', `Cookie: usher_session=${'c'.repeat(20 * 1024)}\r\n`],
    ] as const) {
      const result = await exchange(port, (socket) => {
        socket.write(`GET /api/users/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}\r\n`);
      });
      const answers = responses(result.text);
      assert.equal(answers.length, 1, `${what}: ${result.text.slice(0, 300)}`);
      assert.equal(answers[0]!.status, 431, what);
      assert.ok(result.closedByServer, `${what}: connection left open`);
      await healthy();
    }
    // And an ordinary request on a new connection is served as usual.
    const res = await fetch(`${server.url}/api/users/1`);
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), { error: 'USER_NOT_FOUND' });
  });

  test('CONTRACT: a 10 KB URL to /api/users/<digits> is a JSON 404 USER_NOT_FOUND (not a 414 or 5xx); likewise the product routes', async () => {
    const digits = '1'.repeat(10 * 1024);
    for (const [path, body] of [
      [`/api/users/${digits}`, { error: 'USER_NOT_FOUND' }],
      [`/api/products/${digits}`, undefined],
      [`/api/products/${digits}/reviews`, undefined],
      [`/api/products/1/reviews/${digits}`, undefined],
    ] as const) {
      const result = await exchange(port, (socket) => {
        socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
      });
      const [answer] = responses(result.text);
      assert.ok(answer, `no answer for ${path.slice(0, 40)}…: ${result.text}`);
      assert.equal(answer.status, 404, answer.body);
      assert.match(answer.headers['content-type'] ?? '', /^application\/json/);
      const json = JSON.parse(answer.body);
      if (body) assert.deepEqual(json, body);
      else assert.equal(json.error, 'NOT_FOUND');
    }
    // A 10 KB query value is a 400 INVALID_QUERY, not a 5xx.
    const res = await fetch(`${server.url}/api/users?page=${digits}`);
    assert.ok(res.status < 500, `status ${res.status}`);
    assert.equal(typeof ((await res.json()) as { error: unknown }).error, 'string');
    await healthy();
  });

  test('ISSUE 5: a client that stalls with an invalid JSON body shorter than its Content-Length does not hurt the server', async () => {
    // One stalled client, closed by us after a second.
    const stalled = await exchange(
      port,
      (socket) => {
        socket.write(
          'POST /api/signin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
            'Content-Length: 1000\r\n\r\n{"email":"stall@example.com","password":',
        );
      },
      1000,
    );
    assert.equal(stalled.closedByServer, false, 'the server should wait for the rest of the body');
    await healthy();

    // Fifty at once, half of them closed abruptly, half half-closed (EOF in the middle of the body).
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        exchange(
          port,
          async (socket) => {
            socket.write(
              `POST ${i % 2 ? '/api/users' : '/api/products'} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
                'Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{bad',
            );
            await sleep(500);
            if (i % 2) socket.end();
            else socket.destroy();
          },
          1500,
        ),
      ),
    );
    await healthy();
    const res = await fetch(`${server.url}/api/products`);
    assert.equal(res.status, 200);
  });

  test(`ISSUE 5: a client that sends its headers slowly is cut off (408, connection closed) within ${SLOW_CLIENT_BOUND_MS / 1000} s`, {
    timeout: SLOW_CLIENT_BOUND_MS + 10_000,
  }, async (t) => {
    await healthy(); // others were served while it trickled
    const result = await slowClient;
    t.diagnostic(`cut off after ${result.ms} ms (headersTimeout ${HEADERS_TIMEOUT_MS} ms)`);
    assert.ok(result.closedByServer, `still open after ${result.ms} ms`);
    assert.ok(result.ms >= HEADERS_TIMEOUT_MS - 500, `cut off too early: ${result.ms} ms`);
    const [answer] = responses(result.text);
    assert.equal(answer?.status, 408, result.text);
    await healthy();
  });

  test(`ISSUE 5: a client that sends its headers slowly is cut off within ${SLOW_CLIENT_GOAL_MS / 1000} s (headersTimeout 10 s)`, {}, async () => {
    const result = await slowClient;
    assert.ok(result.closedByServer && result.ms <= SLOW_CLIENT_GOAL_MS, `cut off after ${result.ms} ms`);
  });
});
