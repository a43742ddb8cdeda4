import cors from '@fastify/cors';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController } from 'fastify';
import type { DestinationStream } from 'pino';
import type { Config } from './config.ts';
import { type Database, openDatabase } from './db/database.ts';
import { migrateOnStart, type SchemaReadiness } from './db/schema-readiness.ts';
import type { FeatureContext } from './feature.ts';
import {
  type Built,
  FEATURES,
  type Features,
  featuresOf,
  housekeeping,
  schemaMigrations,
} from './features.ts';
import type { Clock } from './kernel/composition.ts';
import { keySource } from './kernel/sealing.ts';
import { composePageTexts } from './pages/i18n.ts';
import { auditContextPlugin } from './plugins/audit-context.ts';
import { clientErrorHandler } from './plugins/client-errors.ts';
import {
  errorsPlugin,
  frameworkError,
  MAX_SEGMENT_LENGTH,
  neutraliseUnroutableSegments,
} from './plugins/errors.ts';
import { jsonBodyPlugin } from './plugins/json-body.ts';
import { logDestination } from './plugins/log-destination.ts';
import { createMetrics, createRegistry, metricsPlugin } from './plugins/metrics.ts';
import { componentsPlugin, docsPlugin, openApiPlugin } from './plugins/openapi.ts';
import { pipelinePlugin } from './plugins/pipeline.ts';
import { lazyChildLogger, requestId } from './plugins/request-logger.ts';
import { shutdownPlugin } from './plugins/shutdown.ts';
import { wireProfile } from './profiles/index.ts';
import { Authenticator, SESSION_COOKIE } from './sessions/guard.ts';
import { sessionPlugin } from './sessions/plugin.ts';
import { BODY_LIMITS } from './shared/body-limits.ts';
import { rememberedCompilers } from './shared/compilers.ts';
import { ErrorTable, serveErrorCodes } from './shared/errors.ts';
import type { App } from './shared/fastify.ts';

export interface AppOptions {
  /** Where log lines go (stdout by default); tests pass a stream to read them. */
  logStream?: DestinationStream;
  /** An already-open database; by default one is opened from config.databaseUrl. */
  database?: Database;
  /** The clock of sessions and the throttle (tests move it instead of sleeping); Date.now by default. */
  clock?: Clock;
  /** The features served (features.ts's FEATURES by default); tests add one of their own with `.with(…)`. */
  features?: Features;
}

const HOUSEKEEPING_INTERVAL_MS = 60 * 1000;

// Never written to a log line. Exact paths, not wildcards: a wildcard makes pino walk every
// logged object, which cost a tenth of a request's CPU (docs/benchmarks.md). Usher never logs
// request bodies; these guard the places a secret could appear if someone logged one.
const REDACT = [
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'req.headers["usher-device"]',
  'res.headers["usher-device"]',
  'password',
  'currentPassword',
  'body.currentPassword',
  'passwordHash',
  'password_hash',
  'token',
  'body.password',
  'secret',
  'body.code',
  'recoveryCodes',
  'err.rawPacket',
  // Config.environment: every setting, secrets included (it also shows nothing of itself in JSON).
  'environment',
  'config.environment',
];

/** Builds the whole service for a configuration; the server and the tests share it. */
export async function buildApp(config: Config, options: AppOptions = {}): Promise<App> {
  const features = options.features ?? FEATURES;
  // Two features declaring one error code stop the start; errors and route schemas read the table.
  serveErrorCodes(ErrorTable.of(featuresOf(features)));
  // So are the features' own settings sections (a feature outside the built-in set reads its own).
  features.settings(config.environment);
  // Before anything is opened: a page text group declared twice stops the start here.
  const pageTexts = composePageTexts(featuresOf(features));
  const app: App = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: REDACT, censor: '[redacted]' },
      // Asynchronous writes: lines written while a write is in flight go out together in the next.
      // The buffer is flushed on shutdown (run.ts) and at process exit.
      stream: options.logStream ?? logDestination(),
    },
    // One access-log line per request, written when the response is done (plugins/access-log.ts),
    // instead of Fastify's two ("incoming request" and "request completed").
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: lazyChildLogger,
    // The client's X-Request-Id when it is one (checked), else a new one; echoed by the pipeline.
    genReqId: requestId,
    schemaController: { compilersFactory: rememberedCompilers },
    ajv: {
      // Fastify's defaults coerce ("12345678901" ⇄ 12345678901, null → "") and silently drop
      // unknown fields; Usher refuses both instead.
      customOptions: {
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allErrors: false,
        verbose: true,
      },
    },
    // The routes that take larger bodies say so themselves (shared/body-limits.ts).
    bodyLimit: BODY_LIMITS.small,
    // Node's parser refuses larger header blocks (431) and ambiguous framing (smuggling) itself.
    // headersTimeout is only checked every connectionsCheckingInterval (30 s by default).
    // requireHostHeader: Node would answer a missing Host with a bare 400 (no JSON, no headers,
    // no log line); the onRequest hook below answers it in Usher's shape instead.
    http: { maxHeaderSize: 16 * 1024, connectionsCheckingInterval: 1000, requireHostHeader: false },
    clientErrorHandler,
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    requestTimeout: 30_000,
    connectionTimeout: 60_000,
    keepAliveTimeout: 5_000,
    return503OnClosing: false,
    routerOptions: { maxParamLength: MAX_SEGMENT_LENGTH },
    // The client address (throttling, logs) is the socket's unless a trusted proxy forwarded it.
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    rewriteUrl: (request) => neutraliseUnroutableSegments(request.url ?? '/'),
    frameworkErrors: frameworkError,
  }).withTypeProvider<TypeBoxTypeProvider>();
  // A client that trickles its headers is cut off instead of holding a socket.
  app.server.headersTimeout = 10_000;

  const database = options.database ?? openDatabase(config.databaseUrl, config.database);
  let schema: SchemaReadiness;
  try {
    schema = await migrateOnStart(database, schemaMigrations(features), app.log);
  } catch (error) {
    await database.close();
    throw error;
  }
  app.addHook('onClose', async () => {
    schema.stop();
    await database.close();
  });
  // Only JSON bodies are read; anything else is a 415 before it reaches a handler.
  app.removeContentTypeParser('text/plain');
  await app.register(jsonBodyPlugin);
  // Each feature registers its metrics as it is built (the services are built with what they
  // are told); the app's own (the pool, the requests) come after them in the text.
  const registry = createRegistry();
  const now = options.clock ?? Date.now;
  const built = features.build({
    config,
    database,
    now,
    registry,
    log: app.log,
    sealingKey: keySource(config.encryptionKey, config.databaseUrl),
    environment: config.environment,
  }) as Record<string, unknown> & Built;
  const metrics = createMetrics(registry, database);
  await app.register(errorsPlugin);
  const shutdown = { closing: false };
  await app.register(shutdownPlugin, { state: shutdown });
  // Shutdown refusals, security headers, the Host and readiness checks, metrics and the access log:
  // before CORS and sessions, so the refusals here carry the security headers but not CORS ones.
  await app.register(pipelinePlugin, { schema, shutdown, metrics: metrics.requests });

  if (config.corsOrigins.length > 0) {
    // CORS stays off unless origins are listed; listed origins may send credentials.
    await app.register(cors, {
      origin: config.corsOrigins,
      credentials: true,
      methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
      allowedHeaders: ['content-type', 'authorization', 'usher-device', 'x-request-id'],
      exposedHeaders: [
        'location',
        'link',
        'x-total-count',
        'x-total-count-capped',
        'retry-after',
        'usher-second-factor',
        'usher-second-factor-ticket',
        'usher-redirect-to',
        'usher-device',
        'x-request-id',
      ],
      maxAge: 600,
    });
  }

  const profile = wireProfile(config.profile);
  if (!config.encryptionKey && database.dialect === 'postgres') {
    app.log.warn(
      'ENCRYPTION_KEY is not set: two-step sign-in (TOTP) cannot be set up on PostgreSQL (503) until it is',
    );
  }
  const guard = new Authenticator({
    sessions: built.sessions.sessions,
    cookie: { secure: config.session.cookieSecure },
    allowedOrigins: config.corsOrigins,
  });
  await app.register(sessionPlugin, { guard });
  // After the sessions' hooks: a write's actor is its session's user.
  await app.register(auditContextPlugin, { journal: built.audit.journal });
  await app.register(openApiPlugin, {
    profile: config.profile,
    publicUrl: config.publicUrl,
    contactUrl: config.contactUrl,
    components: featuresOf(features).flatMap((feature) => feature.components?.(profile) ?? []),
    sessionCookie: SESSION_COOKIE,
  });
  await app.register(metricsPlugin, { metrics });

  const shared: Omit<FeatureContext, 'own' | 'needs'> = {
    config,
    guard,
    profile,
    metrics,
    database,
    schema,
    log: app.log,
    now,
    pageTexts,
  };
  const contextOf = (name: string): FeatureContext => ({ ...shared, own: built[name], needs: built });
  for (const feature of featuresOf(features)) await feature.routes?.(app, contextOf(feature.name));
  await app.register(componentsPlugin);
  await app.register(docsPlugin);

  // What expires is removed in the background, never by a request: each feature its own.
  const sweeping = setInterval(() => {
    if (!schema.ready) return;
    housekeeping(built, features).catch((err: unknown) => app.log.warn({ err }, 'housekeeping failed'));
  }, HOUSEKEEPING_INTERVAL_MS);
  sweeping.unref();
  const background = featuresOf(features).flatMap((feature) =>
    feature.background ? [feature.background(contextOf(feature.name))] : [],
  );
  // preClose: before the database closes (onClose), so background work in progress can record itself.
  app.addHook('preClose', async () => {
    clearInterval(sweeping);
    await Promise.all(background.map((work) => work.stop()));
  });

  await app.ready();
  return app;
}
