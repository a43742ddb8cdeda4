// Prometheus metrics at GET /metrics: the registry, requests by route and status, latency, sign-in
// outcomes, database pool usage and Node's process metrics; a feature's own metrics are registered
// by that feature (passwords/metrics.ts, mail/metrics.ts) on the same registry. Per process: with
// WORKERS=N, each scrape answers for the worker that took the connection (see README).

import fp from 'fastify-plugin';
import { collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';
import { Type } from 'typebox';
import type { Database } from '../db/database.ts';
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

/**
 * What the counted code tells the metrics: sign-in routes their attempts, the hasher its times,
 * the mail sender its outcomes. Each is made by the feature whose metric it feeds (its
 * `metrics` in features.ts) and handed to the code it observes when that is built.
 */
export interface MetricObservers {
  /** A sign-in attempt by its method and outcome, and the second factor a success also used. */
  signin(outcome: SigninOutcomeLabel, method: SigninMethodLabel, factor?: SecondFactorLabel): void;
  /** The seconds of one argon2id run. */
  hashSeconds(seconds: number): void;
  /** One mail delivery attempt's outcome. */
  mailOutcome(outcome: 'sent' | 'retry' | 'failed'): void;
  /** One webhook delivery attempt's outcome. */
  webhookOutcome(outcome: 'sent' | 'retry' | 'failed'): void;
  /** Audit records one purge round removed. */
  auditPurged(count: number): void;
}

export interface Metrics extends MetricObservers {
  readonly registry: Registry;
  /** Requests by route and status, and their latency (plugins/pipeline.ts records each one). */
  readonly requests: RequestMetrics;
}

/** Registers one feature's metric families on the shared registry; returns the observers that feed them. */
export type MetricFamilies = (registry: Registry) => Partial<MetricObservers>;

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

const ignore = () => {};

/**
 * The registry: Node's process metrics, then `families` in their order, then the request
 * metrics (the order of the families in the text). An observer no family provides does nothing.
 */
export function createMetrics(families: readonly MetricFamilies[]): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'usher_' });
  const observers: MetricObservers = {
    signin: ignore,
    hashSeconds: ignore,
    mailOutcome: ignore,
    webhookOutcome: ignore,
    auditPurged: ignore,
  };
  for (const register of families) Object.assign(observers, register(registry));
  // Registered last, as the plugin used to: the families keep their order in the text.
  return { registry, requests: new RequestMetrics(registry), ...observers };
}

/** GET /metrics (each request is counted by plugins/pipeline.ts). */
export const metricsPlugin = fp<{ metrics: Metrics }>(
  async (app, { metrics }) => {
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
