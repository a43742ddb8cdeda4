// Prometheus metrics at GET /metrics: the registry, requests by route and status, latency, sign-in
// outcomes, database pool usage and Node's process metrics; a feature's own metrics are registered
// by that feature (passwords/metrics.ts, mail/metrics.ts) on the same registry. With WORKERS=N a
// scrape answers for every worker: the worker that took it asks the primary, which gathers each
// worker's metrics and sums them with prom-client's cluster aggregator (see serveClusterMetrics).

import cluster, { type Worker } from 'node:cluster';
import fp from 'fastify-plugin';
import { AggregatorRegistry, collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';
import { Type } from 'typebox';
import type { Database } from '../db/database.ts';
import { AppError } from '../shared/errors.ts';
import { failures } from '../shared/schemas.ts';

export type SigninOutcomeLabel =
  | 'success'
  | 'failure'
  | 'throttled'
  | 'unverified'
  | 'disabled'
  | 'invalid'
  | 'unavailable';

/** How a sign-in proved itself (CONTRACT: password, passkey, oauth, email_link, email_code). */
export type SigninMethodLabel = string;
/** The second factor a successful sign-in also used. */
export type SecondFactorLabel = 'totp' | 'recovery_code';

// Every label value a counter can take is exported at 0 from the start (features zero theirs with
// these lists): a series that appears only with its first event makes rate() and alerts on it
// blind until then, and a dashboard shows "no data" instead of 0.
export const SIGNIN_OUTCOMES: readonly SigninOutcomeLabel[] = [
  'success',
  'failure',
  'throttled',
  'unverified',
  'disabled',
  'invalid',
  'unavailable',
];
export const SIGNIN_METHODS: readonly SigninMethodLabel[] = [
  'password',
  'passkey',
  'oauth',
  'email_link',
  'email_code',
];
export const SECOND_FACTORS: readonly SecondFactorLabel[] = ['totp', 'recovery_code'];
/** Mail and webhook delivery outcomes. */
export const DELIVERY_OUTCOMES = ['sent', 'retry', 'failed'] as const;
/** The hash lanes (passwords/hasher.ts's HashLane). */
export const HASH_LANES = ['signin', 'account'] as const;
/**
 * How accounts are made: `registration` (POST /api/users), a provider, a mail sign-up, an admin's
 * invitation. The admin CLI's accounts are made in a process of their own, which no scrape reads.
 */
export const REGISTRATION_VIA = ['registration', 'oauth', 'email_link', 'email_code', 'invitation'] as const;

/** The app's own metrics: the registry the features register theirs on, and the requests. */
export interface Metrics {
  readonly registry: Registry;
  /** Requests by route and status, and their latency (plugins/pipeline.ts records each one). */
  readonly requests: RequestMetrics;
}

/** Registers metric families on the shared registry; returns the observers that feed them. */
export type MetricFamilies<O = object> = (registry: Registry) => O;

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/** The requests of one method on one route pattern: counts by status, and a latency histogram. */
export interface RequestSeries {
  readonly method: string;
  readonly route: string;
  readonly statuses: Map<number, StatusCount>;
  /** Observations per bucket (not cumulative), the last one past the largest bound. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

interface StatusCount {
  readonly series: RequestSeries;
  readonly status: number;
  value: number;
}

/**
 * `usher_http_requests_total` and `usher_http_request_duration_seconds`, with prom-client's names,
 * labels, buckets and text, but counted in plain numbers held per route: prom-client's own
 * `inc(labels)` and `observe(labels, value)` hash and validate a label object on every call, a
 * measurable share of a cheap request (docs/benchmarks.md). Series appear in the order they were
 * first seen, as prom-client's do.
 */
export class RequestMetrics {
  readonly #byKey = new Map<string, RequestSeries>();
  readonly #series: RequestSeries[] = [];
  readonly #counts: StatusCount[] = [];

  constructor(registry: Registry) {
    register(registry, {
      name: 'usher_http_requests_total',
      help: 'HTTP requests by method, route pattern and status.',
      type: 'counter',
      values: () =>
        this.#counts.map((c) => ({
          value: c.value,
          labels: { method: c.series.method, route: c.series.route, status: c.status },
        })),
      reset: () => {
        for (const c of this.#counts) c.value = 0;
      },
    });
    const name = 'usher_http_request_duration_seconds';
    register(registry, {
      name,
      help: 'HTTP request latency by method and route pattern.',
      type: 'histogram',
      values: () =>
        this.#series.flatMap((s) => {
          const labels = { method: s.method, route: s.route };
          let cumulative = 0;
          return [
            ...LATENCY_BUCKETS.map((le, i) => {
              cumulative += s.buckets[i]!;
              return { value: cumulative, labels: { le, ...labels }, metricName: `${name}_bucket` };
            }),
            { value: s.count, labels: { le: '+Inf', ...labels }, metricName: `${name}_bucket` },
            { value: s.sum, labels, metricName: `${name}_sum` },
            { value: s.count, labels, metricName: `${name}_count` },
          ];
        }),
      reset: () => {
        for (const s of this.#series) {
          s.buckets.fill(0);
          s.sum = 0;
          s.count = 0;
        }
      },
    });
  }

  /** The series of `method` on `route`; callers keep it per route rather than looking it up per request. */
  series(method: string, route: string): RequestSeries {
    const key = `${method} ${route}`;
    let series = this.#byKey.get(key);
    if (!series) {
      series = {
        method,
        route,
        statuses: new Map(),
        buckets: new Float64Array(LATENCY_BUCKETS.length + 1),
        sum: 0,
        count: 0,
      };
      this.#byKey.set(key, series);
      this.#series.push(series);
    }
    return series;
  }

  record(series: RequestSeries, status: number, seconds: number): void {
    let counted = series.statuses.get(status);
    if (!counted) {
      counted = { series, status, value: 0 };
      series.statuses.set(status, counted);
      this.#counts.push(counted);
    }
    counted.value++;
    let bucket = 0;
    while (bucket < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[bucket]!) bucket++;
    series.buckets[bucket]!++;
    series.sum += seconds;
    series.count++;
  }
}

/**
 * A metric whose values are computed at scrape time, in the shape prom-client's registry formats
 * (the same as its own Counter's and Histogram's `get()`), so the text is what prom-client writes.
 */
function register(
  registry: Registry,
  metric: {
    name: string;
    help: string;
    type: 'counter' | 'histogram';
    values: () => Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>;
    reset: () => void;
  },
): void {
  const { name, help, type, values, reset } = metric;
  const get = async () => ({ name, help, type, values: values(), aggregator: 'sum' as const });
  registry.registerMetric({ name, help, type, get, reset } as unknown as Metric);
}

/** `usher_db_pool_connections`: the database pool by state, read at each scrape. */
export function poolMetrics(database: Database): MetricFamilies {
  return (registry) => {
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
    return {};
  };
}

/** The registry, with Node's process metrics: the features register theirs on it as they are built. */
export function createRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'usher_' });
  // 1 in each process, so the sum over WORKERS says how many workers a scrape added up.
  new Gauge({
    name: 'usher_workers',
    help: 'Worker processes whose metrics this scrape sums (1 without WORKERS).',
    registers: [registry],
  }).set(1);
  return registry;
}

/**
 * The app's metrics, after the features' families (the order of the families in the text): the
 * database pool, then the requests.
 */
export function createMetrics(registry: Registry, database: Database): Metrics {
  poolMetrics(database)(registry);
  return { registry, requests: new RequestMetrics(registry) };
}

// WORKERS=N. The workers share the port, so a scrape reaches one of them at random: that one asks
// the primary for the sum (SCRAPE), the primary asks every listening worker for its metrics
// (COLLECT), adds up their answers (PART) with prom-client's AggregatorRegistry.aggregate and
// hands the text back (SUM). Messages, not a port of the primary's own: one scrape target per
// machine, on the port already served, with no setting to add.
const SCRAPE = 'usher:metrics-scrape';
const COLLECT = 'usher:metrics-collect';
const PART = 'usher:metrics-part';
const SUM = 'usher:metrics-sum';
/** How long the primary waits for every worker's part; a worker stuck longer fails the scrape. */
const COLLECT_TIMEOUT_MS = 5_000;
/** The worker's wait for the sum: the primary's, and a margin for the messages. */
const SCRAPE_TIMEOUT_MS = COLLECT_TIMEOUT_MS + 1_000;

interface ClusterMessage {
  type?: unknown;
  id?: unknown;
  text?: unknown;
  error?: unknown;
  metrics?: unknown;
}

/**
 * The primary's side: answers a worker's SCRAPE with the sum over the workers that listen (a
 * worker still starting has no metrics to give yet, and is not waited for). A worker that does
 * not answer in time fails the scrape (503 to Prometheus, a gap in the graph) rather than
 * leaving its counts out: a sum missing a worker would read as a counter reset.
 */
export function serveClusterMetrics(): void {
  const listening = new Set<Worker>();
  cluster.on('listening', (worker) => listening.add(worker));
  cluster.on('exit', (worker) => listening.delete(worker));
  let nextId = 0;
  const gathering = new Map<number, { parts: unknown[]; left: Set<Worker>; done: (error?: Error) => void }>();

  const gather = (): Promise<string> => {
    const id = nextId++;
    const workers = [...listening].filter((worker) => worker.isConnected());
    const parts: unknown[] = [];
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => done(new Error('a worker did not give its metrics in time')),
        COLLECT_TIMEOUT_MS,
      );
      const done = (error?: Error) => {
        clearTimeout(timer);
        gathering.delete(id);
        if (error) reject(error);
        else resolve();
      };
      gathering.set(id, { parts, left: new Set(workers), done });
      for (const worker of workers) worker.send({ type: COLLECT, id });
      if (workers.length === 0) done();
    }).then(() =>
      AggregatorRegistry.aggregate(parts as Parameters<typeof AggregatorRegistry.aggregate>[0]).metrics(),
    );
  };

  cluster.on('message', (worker: Worker, message: ClusterMessage) => {
    if (message?.type === SCRAPE) {
      gather().then(
        (text) => worker.isConnected() && worker.send({ type: SUM, id: message.id, text }),
        (error: Error) =>
          worker.isConnected() && worker.send({ type: SUM, id: message.id, error: error.message }),
      );
    } else if (message?.type === PART && typeof message.id === 'number') {
      const pending = gathering.get(message.id);
      if (!pending?.left.delete(worker)) return;
      if (typeof message.error === 'string') {
        pending.done(new Error(message.error));
        return;
      }
      pending.parts.push(message.metrics);
      if (pending.left.size === 0) pending.done();
    }
  });
  // A worker that exits while its part is awaited fails that scrape now, not at the timeout.
  cluster.on('exit', (worker) => {
    for (const pending of gathering.values())
      if (pending.left.has(worker)) pending.done(new Error('a worker exited during the scrape'));
  });
}

/** A worker's side: gives its own metrics to the primary, and asks the primary for the sum. */
function clusterWorker(registry: Registry): { sum(): Promise<string>; stop(): void } {
  let nextId = 0;
  const asked = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  const send = (message: object) => {
    if (process.connected) process.send!(message);
  };
  const onMessage = (message: ClusterMessage) => {
    if (message?.type === COLLECT) {
      registry.getMetricsAsJSON().then(
        (metrics) => send({ type: PART, id: message.id, metrics }),
        (error: Error) => send({ type: PART, id: message.id, error: error.message }),
      );
    } else if (message?.type === SUM && typeof message.id === 'number') {
      const waiting = asked.get(message.id);
      asked.delete(message.id);
      if (typeof message.text === 'string') waiting?.resolve(message.text);
      else waiting?.reject(new Error(String(message.error)));
    }
  };
  process.on('message', onMessage);
  return {
    sum: () =>
      new Promise<string>((resolve, reject) => {
        if (!process.connected) {
          reject(new Error('the primary is gone'));
          return;
        }
        const id = nextId++;
        const timer = setTimeout(() => {
          asked.delete(id);
          reject(new Error('the primary did not answer'));
        }, SCRAPE_TIMEOUT_MS);
        asked.set(id, {
          resolve: (text) => {
            clearTimeout(timer);
            resolve(text);
          },
          reject: (error) => {
            clearTimeout(timer);
            reject(error);
          },
        });
        send({ type: SCRAPE, id });
      }),
    stop: () => process.off('message', onMessage),
  };
}

/** GET /metrics (each request is counted by plugins/pipeline.ts). */
export const metricsPlugin = fp<{ metrics: Metrics }>(
  async (app, { metrics }) => {
    // A worker of WORKERS=N (run.ts's primary forks them); a process on its own answers for itself.
    const workers = cluster.isWorker && process.send ? clusterWorker(metrics.registry) : undefined;
    if (workers) app.addHook('onClose', async () => workers.stop());
    app.get(
      '/metrics',
      {
        schema: {
          summary: 'Prometheus metrics (text exposition format)',
          operationId: 'metrics',
          description:
            'Requests by route pattern and status, latency, sign-ins by outcome and method, registrations, ' +
            'password resets, passkeys, the mail outbox, the hash queue and the process; with WORKERS > 1, ' +
            'the sum over the workers. Keep it off the public internet (README, "Operating it").',
          response: {
            200: {
              description: 'The metrics.',
              content: {
                'text/plain': {
                  schema: Type.String({ description: 'Prometheus text format, version 0.0.4.' }),
                },
              },
            },
            ...failures([], {
              notes: {
                UNAVAILABLE:
                  'The server is shutting down, or (WORKERS > 1) a worker did not give its metrics in time.',
              },
            }),
          },
        },
        config: { usesDatabase: false },
      },
      async (request, reply) => {
        let text: string;
        if (workers) {
          try {
            text = await workers.sum();
          } catch (error) {
            request.log.warn({ err: error }, "metrics: the workers' sum could not be gathered");
            throw new AppError('UNAVAILABLE', "The workers' metrics could not be gathered; try again.");
          }
        } else {
          text = await metrics.registry.metrics();
        }
        reply.header('content-type', metrics.registry.contentType);
        return text;
      },
    );
  },
  { name: 'usher-metrics', dependencies: ['usher-openapi'] },
);
