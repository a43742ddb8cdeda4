// Every request's own work, in one onRequest and one onResponse hook rather than a hook per concern:
// the refusals that need no route (shutting down, no Host, schema not ready), the security headers,
// then, once the response is sent, the metrics and the access-log line. What each of them needs to
// know about the route is worked out once per route, not per request (docs/benchmarks.md).
import type { IncomingMessage } from 'node:http';
import type { FastifyContextConfig, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { SchemaReadiness } from '../db/schema-readiness.ts';
import { AppError } from '../shared/errors.ts';
import { type AccessLog, createAccessLog, isProbeRoute, type LoggedRoute } from './access-log.ts';
import type { RequestMetrics, RequestSeries } from './metrics.ts';
import { DOCS_PREFIX } from './openapi.ts';
import { type HeaderList, HSTS, securityHeaders, underDocs } from './security-headers.ts';
import type { ShutdownState } from './shutdown.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the pipeline knows about this request's route; set by its onRequest hook. */
    usherRoute: RouteInfo | null;
  }
}

/** A HeaderList as names and values side by side: set by an indexed loop, with no iterator per request. */
class RouteHeaders {
  readonly names: readonly string[];
  readonly values: readonly string[];
  constructor(list: HeaderList) {
    this.names = list.map(([name]) => name);
    this.values = list.map(([, value]) => value);
  }
}

/** A route as the pipeline sees it; one per route (Fastify's per-route config object). */
class RouteInfo implements LoggedRoute {
  /** The route's pattern, the metrics' `route` label; `unmatched` for the not-found handler. */
  readonly label: string;
  readonly matched: boolean;
  /** The access log writes the path only: a page's link or a provider's answer may carry a credential. */
  readonly pathOnly: boolean;
  readonly probe: boolean;
  readonly usesDatabase: boolean;
  readonly headers: RouteHeaders;
  /** The not-found handler's headers for a URL under the docs (they bring their own policy). */
  readonly docsHeaders: RouteHeaders;
  readonly #metrics: RequestMetrics;
  /** The series of the route's own method; other methods (not-found, multi-method routes) in #others. */
  readonly #method: string | undefined;
  #series: RequestSeries | undefined;
  readonly #others = new Map<string, RequestSeries>();

  constructor(config: FastifyContextConfig & { url?: string; method?: unknown }, metrics: RequestMetrics) {
    this.matched = config.url !== undefined;
    this.label = config.url ?? 'unmatched';
    this.pathOnly = config.page === true || config.secretQuery === true;
    this.probe = this.matched && isProbeRoute(this.label);
    this.usesDatabase = config.usesDatabase !== false;
    this.headers = new RouteHeaders(securityHeaders(config, config.url ?? ''));
    this.docsHeaders = new RouteHeaders(securityHeaders(config, DOCS_PREFIX));
    this.#metrics = metrics;
    this.#method = typeof config.method === 'string' ? config.method : undefined;
  }

  headersFor(url: string): RouteHeaders {
    return this.matched || !underDocs(url) ? this.headers : this.docsHeaders;
  }

  series(method: string): RequestSeries {
    if (method === this.#method) {
      this.#series ??= this.#metrics.series(method, this.label);
      return this.#series;
    }
    let series = this.#others.get(method);
    if (!series) {
      series = this.#metrics.series(method, this.label);
      this.#others.set(method, series);
    }
    return series;
  }
}

const ROUTE_INFO = Symbol('usher.routeInfo');
const RAW_LABEL = Symbol('usher.routeLabel');
const RAW_LOGGED = Symbol('usher.loggedPath');

type Labelled = IncomingMessage & { [RAW_LABEL]?: string; [RAW_LOGGED]?: string };

/**
 * The route label of a request a route hands on to an application of its own (the OpenID Connect
 * provider under /oidc), which answers many endpoints: one of a fixed set its caller picks from
 * the URL, never the URL itself. `loggedUrl`: the URL whose path (never its query) the access
 * line shows, when the request's own URL is rewritten for that application.
 */
export function labelRoute(raw: IncomingMessage, label: string, loggedUrl?: string): void {
  (raw as Labelled)[RAW_LABEL] = label;
  if (loggedUrl !== undefined) (raw as Labelled)[RAW_LOGGED] = loggedUrl;
}
type ConfigWithInfo = FastifyContextConfig & { [ROUTE_INFO]?: RouteInfo };

export interface PipelineOptions {
  schema: SchemaReadiness;
  shutdown: ShutdownState;
  metrics: RequestMetrics;
}

export const pipelinePlugin = fp<PipelineOptions>(
  async (app, { schema, shutdown, metrics }) => {
    const accessLog: AccessLog | undefined = createAccessLog(app.log);
    app.decorateRequest('usherRoute', null);

    /** The route's info, made on its first request and kept on Fastify's config object of the route. */
    const routeOf = (request: FastifyRequest): RouteInfo => {
      // routeOptions builds a new object on every read: read once per request.
      const config = request.routeOptions.config as ConfigWithInfo;
      let info = config[ROUTE_INFO];
      if (!info) {
        info = new RouteInfo(config, metrics);
        config[ROUTE_INFO] = info;
      }
      return info;
    };

    // Callback style: no promise per request. During app.close() a request that still arrives is
    // refused first; every other answer, refusals included, carries the security headers. A
    // missing Host is refused here rather than by Node, in Usher's shape; until the schema is in
    // place every route that needs the database is a 503, not a 500.
    app.addHook('onRequest', (request, reply, done) => {
      // The request's id (plugins/request-logger.ts), on every answer, refusals included: what a
      // client quotes to an operator, who finds it in the access line.
      reply.header('x-request-id', request.id);
      if (shutdown.closing) {
        done(new AppError('UNAVAILABLE', 'The server is shutting down; retry on another instance.'));
        return;
      }
      const route = routeOf(request);
      request.usherRoute = route;
      const { names, values } = route.headersFor(request.url);
      for (let i = 0; i < names.length; i++) reply.header(names[i]!, values[i]!);
      if (request.protocol === 'https') reply.header('strict-transport-security', HSTS);
      if (!request.headers.host && request.raw.httpVersion !== '1.0') {
        done(new AppError('BAD_REQUEST', 'An HTTP/1.1 request needs a Host header.'));
        return;
      }
      if (!schema.ready && route.usesDatabase) {
        done(new AppError('UNAVAILABLE', 'The database is not ready yet; try again shortly.'));
        return;
      }
      done();
    });

    // Route patterns, not raw URLs, label the metrics, so their cardinality stays bounded whatever
    // clients send.
    app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
      // Null when the request never reached onRequest (refused by the router, or by the shutdown check).
      const route = request.usherRoute ?? routeOf(request);
      const raw = request.raw as Labelled;
      const label = raw[RAW_LABEL];
      // Each read once: elapsedTime reads the clock, statusCode the raw response's.
      const status = reply.statusCode;
      const elapsedMs = reply.elapsedTime;
      metrics.record(
        label ? metrics.series(request.method, label) : route.series(request.method),
        status,
        elapsedMs / 1000,
      );
      accessLog?.(request, status, elapsedMs, route, raw[RAW_LOGGED]);
      done();
    });
  },
  { name: 'usher-pipeline', dependencies: ['usher-errors'] },
);
