// Prometheus metrics at GET /metrics: requests by route and status, latency, sign-in outcomes,
// password-hash time, database pool usage, and Node's process metrics. Per process: with
// WORKERS=N, each scrape answers for the worker that took the connection (see README).

import fp from 'fastify-plugin';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { Type } from 'typebox';
import type { Database } from '../db/database.ts';
import type { MailOutcome } from '../mail/service.ts';
import { failures } from '../shared/schemas.ts';

export type SigninOutcomeLabel =
  | 'success'
  | 'failure'
  | 'throttled'
  | 'unverified'
  | 'invalid'
  | 'unavailable';

/** How a successful sign-in proved itself; `passkey` is kept for passkey sign-in. */
export type SigninMethodLabel = 'password' | 'totp' | 'recovery_code' | 'passkey';

export interface Metrics {
  readonly registry: Registry;
  signin(outcome: SigninOutcomeLabel): void;
  /** A successful sign-in, by what it was proven with. */
  signedIn(method: SigninMethodLabel): void;
  hashSeconds(seconds: number): void;
  mail(outcome: MailOutcome): void;
}

/** `mailWaiting`: how many messages are not yet sent nor given up on (read at each scrape). */
export function createMetrics(database: Database, mailWaiting: () => Promise<number>): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'usher_' });

  const signins = new Counter({
    name: 'usher_signin_attempts_total',
    help: 'Sign-in attempts by outcome.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const signinMethods = new Counter({
    name: 'usher_signins_total',
    help: 'Successful sign-ins by method: password alone, password and TOTP code, password and recovery code.',
    labelNames: ['method'],
    registers: [registry],
  });
  const hashes = new Histogram({
    name: 'usher_password_hash_seconds',
    help: 'Time of one argon2id hash (hashing or verifying), queueing excluded.',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  new Gauge({
    name: 'usher_db_pool_connections',
    help: 'Database pool connections by state (PostgreSQL; SQLite has one connection).',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const stats = database.poolStats();
      this.set({ state: 'total' }, stats.total);
      this.set({ state: 'idle' }, stats.idle);
      this.set({ state: 'waiting' }, stats.waiting);
    },
  });

  const mails = new Counter({
    name: 'usher_mail_deliveries_total',
    help: 'Mail delivery attempts by outcome: sent, retry (failed this time), failed (given up).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  new Gauge({
    name: 'usher_mail_waiting',
    help: 'Messages in the outbox not yet sent nor given up on (all instances).',
    registers: [registry],
    async collect() {
      try {
        this.set(await mailWaiting());
      } catch {
        // The database is down: /readyz says so; the scrape still answers with the rest.
      }
    },
  });

  return {
    registry,
    signin: (outcome) => signins.inc({ outcome }),
    signedIn: (method) => signinMethods.inc({ method }),
    hashSeconds: (seconds) => hashes.observe(seconds),
    mail: (outcome) => mails.inc({ outcome }),
  };
}

/** Request metrics for every route, and GET /metrics. */
export const metricsPlugin = fp<{ metrics: Metrics }>(
  async (app, { metrics }) => {
    const requests = new Counter({
      name: 'usher_http_requests_total',
      help: 'HTTP requests by method, route pattern and status.',
      labelNames: ['method', 'route', 'status'],
      registers: [metrics.registry],
    });
    const latency = new Histogram({
      name: 'usher_http_request_duration_seconds',
      help: 'HTTP request latency by method and route pattern.',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [metrics.registry],
    });

    // Route patterns, not raw URLs, so label cardinality stays bounded whatever clients send.
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unmatched';
      requests.inc({ method: request.method, route, status: reply.statusCode });
      latency.observe({ method: request.method, route }, reply.elapsedTime / 1000);
      done();
    });

    app.get(
      '/metrics',
      {
        schema: {
          summary: 'Prometheus metrics (text exposition format)',
          operationId: 'metrics',
          description:
            'Requests by route pattern and status, latency, sign-ins by outcome and method, the mail outbox, ' +
            'the hash queue and the process. Keep it off the public internet (README, "Operating it").',
          response: {
            200: {
              description: 'The metrics.',
              content: {
                'text/plain': {
                  schema: Type.String({ description: 'Prometheus text format, version 0.0.4.' }),
                },
              },
            },
            ...failures([]),
          },
        },
        config: { usesDatabase: false },
      },
      async (_request, reply) => {
        reply.header('content-type', metrics.registry.contentType);
        return metrics.registry.metrics();
      },
    );
  },
  { name: 'usher-metrics', dependencies: ['usher-openapi'] },
);
