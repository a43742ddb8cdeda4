// The OpenAPI 3.1 document, generated from the route schemas (so it cannot drift from what is
// validated and serialised), at GET /openapi.json, and a browsable Swagger UI at /docs served from
// the npm package's own assets: no CDN, so it works offline.
import { readFile } from 'node:fs/promises';
import swagger from '@fastify/swagger';
import swaggerUi, { type FastifySwaggerUiConfigOptions } from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import type { Profile } from '../config.ts';
import { ID_PATTERN } from '../shared/ids.ts';
import { MAX_PAGE_SIZE } from '../shared/paging.ts';
import {
  bodyOptional,
  type Component,
  errorComponentById,
  MAX_ID,
  MAX_ID_IN_DOCUMENT,
  MESSAGE_MAX,
  referencedComponents,
} from '../shared/schemas.ts';
import { PAGE_PATTERN, SIZE_PATTERN } from './paging.ts';

export const DOCS_PREFIX = '/docs';
/** The docs page's viewport: the page is read at phone width too. */
const VIEWPORT = '<meta name="viewport" content="width=device-width, initial-scale=1">';

/** The document's tags, in the order the docs page shows them: operations (probes, metrics) last. */
const TAGS = [
  { name: 'users', description: 'Look up, register, change and delete users.' },
  {
    name: 'sessions',
    description:
      'Sign in (password, TOTP code, passkey), who am I, list and revoke sessions, and a JWT access token ' +
      "for your APIs from a session. Usher's OpenID Connect provider (for other apps) is described by its " +
      'own discovery document, /oidc/.well-known/openid-configuration, not here.',
  },
  {
    name: 'provider sign-in',
    description:
      'Sign in with Google, Microsoft, Apple, GitLab, GitHub or any OpenID Connect provider; linked identities.',
  },
  { name: 'account recovery', description: 'Password reset and email verification through mailed links.' },
  { name: 'second factors', description: 'Two-step sign-in with a TOTP app, and passkeys.' },
  {
    name: 'products and reviews',
    description: 'Products and their nested reviews: the REST collection conventions.',
  },
  { name: 'rest probe', description: 'The profile B probe of SPEC 4.2.' },
  {
    name: 'administration',
    description:
      'For support staff and admins: find users, see why someone cannot sign in, end sessions, remove lost ' +
      'second factors, disable, invite; the audit log; webhooks. Needs a session of a `support` or `admin` user.',
  },
  { name: 'operations', description: 'Liveness, readiness and Prometheus metrics, for operators.' },
] as const;
type Tag = (typeof TAGS)[number]['name'];

/** Groups operations in the document by the first path segment that names a feature. */
function tagFor(url: string): Tag {
  if (url.startsWith('/api/admin')) return 'administration';
  if (url.startsWith('/api/users') || url === '/api/account' || url.startsWith('/api/account/'))
    return 'users';
  if (url.startsWith('/api/oauth') || url.startsWith('/api/identities') || url === '/api/sessions/oauth')
    return 'provider sign-in';
  if (url.startsWith('/api/sign') || url.startsWith('/api/session')) return 'sessions';
  if (url.startsWith('/api/password') || url.startsWith('/api/email')) return 'account recovery';
  if (url.startsWith('/api/mfa') || url.startsWith('/api/passkeys')) return 'second factors';
  if (url.startsWith('/api/products')) return 'products and reviews';
  if (url === '/rest') return 'rest probe';
  return 'operations';
}

/**
 * How the document shows a parameter the route validates as text. A path id or a page number
 * arrives as text and is checked by a pattern (so "007" or "1e3" never name a row); the document
 * says what that text is, an integer with its bounds, which is what generators and clients need.
 */
const AS_INTEGER: Record<string, object> = {
  [ID_PATTERN]: { type: 'integer', format: 'int64', minimum: 1, maximum: MAX_ID_IN_DOCUMENT },
  [PAGE_PATTERN]: { type: 'integer', format: 'int32', minimum: 1, maximum: 999_999_999 },
  [SIZE_PATTERN]: { type: 'integer', format: 'int32', minimum: 1, maximum: MAX_PAGE_SIZE },
};

function documentedParameters(schema: unknown): unknown {
  if (schema === null || typeof schema !== 'object') return schema;
  const object = schema as { properties?: Record<string, { pattern?: string; description?: string }> };
  if (!object.properties) return schema;
  const properties = Object.fromEntries(
    Object.entries(object.properties).map(([name, property]) => {
      const integer = property.pattern === undefined ? undefined : AS_INTEGER[property.pattern];
      return [name, integer ? { ...integer, description: property.description } : property];
    }),
  );
  return { ...object, properties };
}

/** Marks, between `transform` and `transformObject`, an operation whose body may be left out. */
const BODY_OPTIONAL = 'x-usher-body-optional';

/** A route's hooks of one kind, as a list (Fastify takes one or an array). */
const hooksOf = (hooks: unknown): unknown[] => (hooks === undefined ? [] : [hooks].flat());

/**
 * @fastify/swagger marks every request body required (Fastify needs one where a body schema is
 * set); a route with the `bodyOptional` hook needs none, so its body is marked optional here, and
 * generated clients may call it without one.
 */
function markOptionalBodies(document: { paths?: Record<string, unknown> }): void {
  for (const path of Object.values(document.paths ?? {})) {
    for (const operation of Object.values((path ?? {}) as Record<string, Record<string, unknown>>)) {
      if (operation === null || typeof operation !== 'object' || !(BODY_OPTIONAL in operation)) continue;
      delete operation[BODY_OPTIONAL];
      const body = operation.requestBody as { required?: boolean } | undefined;
      if (body) body.required = false;
    }
  }
}

/** Says which environment the server is, as far as its address tells. */
function serverDescription(publicUrl: string): string {
  const host = new URL(publicUrl).hostname;
  return host === 'localhost' || host === '127.0.0.1' || host === '[::1]'
    ? 'This server, local (PUBLIC_URL is not set to a public address).'
    : 'This server at its PUBLIC_URL: the production or staging deployment its operators run.';
}

/** A response's JSON body schema, as the document has it. */
interface MediaType {
  schema?: { $ref?: string };
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}
type Operation = {
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, { description?: string; content?: Record<string, MediaType> }>;
};

/** The operations of the document, each once. */
function operationsOf(document: { paths?: Record<string, unknown> }): Operation[] {
  const found: Operation[] = [];
  for (const path of Object.values(document.paths ?? {})) {
    for (const operation of Object.values((path ?? {}) as Record<string, unknown>)) {
      if (operation !== null && typeof operation === 'object' && 'responses' in operation)
        found.push(operation as Operation);
    }
  }
  return found;
}

/** The error components' names: Error401, CodeOnlyError404… (shared/schemas.ts errorComponent). */
const ERROR_REF = /^#\/components\/schemas\/(CodeOnlyError|Error)(\d{3})$/;
/** How failures() (shared/schemas.ts) writes each of a status's codes in its description: "`CODE`: when". */
const CODE_LINE = /^`([A-Z][A-Z0-9_]*)`: ([\s\S]*)$/;

/**
 * Each failure response gets examples of its own route's codes. The error bodies are shared
 * components, one per status, so the example Swagger UI would build from the component is the
 * first code of every route's status (SIGNIN_FAILED for the 401 of GET /api/session): instead the
 * codes the route lists in its description (failures() writes one "`CODE`: when" paragraph each)
 * become its examples, with that text as the message. A description that names no code is a
 * mistake in a route's schema: the document is not served rather than served wrong.
 */
export function addErrorExamples(document: { paths?: Record<string, unknown> }): void {
  for (const operation of operationsOf(document)) {
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      const json = response.content?.['application/json'];
      const ref = ERROR_REF.exec(json?.schema?.$ref ?? '');
      if (!json || !ref || json.example !== undefined || json.examples !== undefined) continue;
      const codeOnly = ref[1] === 'CodeOnlyError';
      const examples: NonNullable<MediaType['examples']> = {};
      for (const paragraph of (response.description ?? '').split('\n\n')) {
        const line = CODE_LINE.exec(paragraph.trim());
        if (!line) continue;
        const [, code, when] = line as unknown as [string, string, string];
        const message = when.replace(/`/g, '').slice(0, MESSAGE_MAX);
        examples[code] = { summary: code, value: codeOnly ? { error: code } : { error: code, message } };
      }
      if (Object.keys(examples).length === 0)
        throw new Error(`the ${status} response "${response.description}" names no error code`);
      // One code: a plain example (Swagger UI shows it without a list to pick from).
      const values = Object.values(examples);
      if (values.length === 1) json.example = values[0]?.value;
      else json.examples = examples;
    }
  }
}

/** Sample values of a request body's fields, by name, for the examples below. */
const SAMPLES: Record<string, unknown> = {
  email: 'ada@example.com',
  password: 'correct horse battery staple',
  currentPassword: 'correct horse battery staple',
  code: '123456',
  name: 'Ada Lovelace',
  token: 'the-token-from-the-mail-link',
  ticket: 'the-ticket-from-#second-factor',
  redirectTo: '/account',
  // A passkey's credential is what the browser's navigator.credentials gives, sent as it is.
  id: 'AQIDBAUGBwgJCgsMDQ4PEA',
  rawId: 'AQIDBAUGBwgJCgsMDQ4PEA',
  type: 'public-key',
};

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: unknown;
  enum?: unknown[];
  const?: unknown;
  items?: JsonSchema;
  examples?: unknown[];
  example?: unknown;
};

/** An example value of a schema: its own example, a sample by field name, or one of its type. */
function exampleOf(schema: JsonSchema, name = ''): unknown {
  if (schema.example !== undefined) return schema.example;
  if (schema.examples?.length) return schema.examples[0];
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  if (name in SAMPLES) return SAMPLES[name];
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (type === 'object' || schema.properties)
    return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, exampleOf(v, k)]));
  if (type === 'array') return schema.items ? [exampleOf(schema.items, name)] : [];
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'boolean') return true;
  return 'string';
}

function opensProperties(schema: JsonSchema | undefined): boolean {
  if (!schema || typeof schema !== 'object') return false;
  if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) return true;
  return Object.values(schema.properties ?? {}).some(opensProperties);
}

/**
 * A request body whose schema lets other fields through (the sign-in bodies: the documented
 * endpoint must answer any JSON object as a failed sign-in, never a 400 of its own) would be shown
 * by Swagger UI as `{"additionalProp1": {}}`: such a body gets an example built from its fields.
 */
export function addBodyExamples(document: { paths?: Record<string, unknown> }): void {
  for (const operation of operationsOf(document)) {
    const json = operation.requestBody?.content?.['application/json'];
    if (!json || json.example !== undefined || json.examples !== undefined) continue;
    const schema = json.schema as JsonSchema | undefined;
    if (schema && opensProperties(schema)) json.example = exampleOf(schema);
  }
}

export interface OpenApiOptions {
  profile: Profile;
  /** Where clients reach this server (PUBLIC_URL): the document's server. */
  publicUrl: string;
  /** Where API users reach the operators (CONTACT_URL). */
  contactUrl: string;
  /** The named shapes the routes reference; error bodies are added as the routes use them. */
  components: readonly Component[];
  /** The session cookie's name (sessions/guard.ts): the document's `sessionCookie` scheme. */
  sessionCookie: string;
}

/** The security requirement of routes that need a session: the cookie or a Bearer token. */
/**
 * A route's security requirement: a session, by cookie or Bearer token. For the staff routes it
 * names the role the session's account needs (OpenAPI 3.1 lets a non-OAuth scheme list "role
 * names which are required for the execution"): `support` (support or admin) or `admin`.
 */
function sessionSecurity(auth: 'session' | 'support' | 'admin'): Array<Record<string, string[]>> {
  const roles = auth === 'session' ? [] : auth === 'support' ? ['support', 'admin'] : ['admin'];
  return [{ sessionCookie: roles }, { bearerToken: roles }];
}

const kReferenced = Symbol('usher.referencedComponents');
declare module 'fastify' {
  interface FastifyInstance {
    [kReferenced]: Set<string>;
  }
}

/**
 * Must be registered before any route: @fastify/swagger collects routes as they are added. A
 * route that needs a session (config.auth) is documented with the session security schemes.
 */
export const openApiPlugin = fp<OpenApiOptions>(
  async (app, { profile, publicUrl, contactUrl, components, sessionCookie }) => {
    const referenced = new Set<string>();
    app.decorate(kReferenced, referenced);
    app.addHook('onRoute', (route) => {
      referencedComponents(route.schema, referenced);
    });
    const byId = new Map(components.map((c) => [c.id, c]));
    app.decorate('usherComponent', (id: string) => byId.get(id) ?? errorComponentById(id));

    await app.register(swagger, {
      transform: ({ schema, url, route }) => ({
        schema: {
          ...schema,
          ...(schema.params ? { params: documentedParameters(schema.params) } : {}),
          ...(schema.querystring ? { querystring: documentedParameters(schema.querystring) } : {}),
          tags: [tagFor(url)],
          ...(route.config?.auth !== undefined ? { security: sessionSecurity(route.config.auth) } : {}),
          ...(hooksOf(route.preValidation).includes(bodyOptional) ? { [BODY_OPTIONAL]: true } : {}),
        },
        url,
      }),
      transformObject: (documents) => {
        if ('openapiObject' in documents) {
          markOptionalBodies(documents.openapiObject);
          addErrorExamples(documents.openapiObject);
          addBodyExamples(documents.openapiObject);
        }
        return 'openapiObject' in documents ? documents.openapiObject : documents.swaggerObject;
      },
      // Named components keep their names ("User", "Error404") instead of def-0, def-1…
      refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => String(json.$id ?? `def-${i}`) },
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Usher',
          version: '0.1.0',
          description:
            `User lookup, registration, sign-in and sessions, plus products with nested reviews. This server runs ` +
            `profile ${profile.toUpperCase()}, which fixes the wire format of the documented endpoints ` +
            '(GET /api/users/{id}, GET /api/users, POST /api/signin, POST /rest). Every failure has a top-level ' +
            '`error` code; each response lists the codes that route gives with that status. Any request can ' +
            'also be refused before it reaches a route: 400 `BAD_REQUEST` (not valid HTTP/1.1), 408 ' +
            '`REQUEST_TIMEOUT`, 431 `HEADERS_TOO_LARGE`. Every answer carries `X-Request-Id`: the id the request ' +
            'sent when it is 1 to 128 characters of `[A-Za-z0-9._:-]`, else a new one; it is the `reqId` of the ' +
            "server's log line for the request (quote it when reporting a problem), and CORS callers may send " +
            'and read it. To call protected routes from the docs page, sign in with ' +
            'POST /api/sessions and paste its token under Authorize → bearerToken.',
          contact: { name: 'The operators of this server', url: contactUrl },
          license: { name: 'MIT', identifier: 'MIT' },
        },
        servers: [
          {
            url: publicUrl,
            description: serverDescription(publicUrl),
            'x-internal': false,
          } as { url: string; description: string },
        ],
        tags: TAGS.filter((t) => t.name !== 'rest probe' || profile === 'b').map((t) => ({ ...t })),
        components: {
          securitySchemes: {
            sessionCookie: {
              type: 'apiKey',
              in: 'cookie',
              name: sessionCookie,
              description:
                'The HttpOnly session cookie that POST /api/signin sets (SameSite=Lax). A browser keeps it and ' +
                'sends it by itself: on the docs page, sign in with POST /api/signin and the calls after it carry ' +
                'it. A value typed here is not sent (a page cannot set the Cookie header); use the bearer scheme ' +
                'with a token instead.',
            },
            bearerToken: {
              type: 'http',
              scheme: 'bearer',
              description:
                'A session token, sent as `Authorization: Bearer <token>`, for clients that do not keep cookies. ' +
                'POST /api/sessions answers with one in `token`. On the docs page: "Try it out" on POST ' +
                '/api/sessions with your email and password, copy `token` from the response, and paste it here.',
            },
          },
        },
      },
    });
  },
  { name: 'usher-openapi' },
);

declare module 'fastify' {
  interface FastifyInstance {
    usherComponent(id: string): Component | undefined;
  }
}

/**
 * Registers the named components the routes referenced (and those they reference in turn), so
 * the document holds each shape once and none it does not use. After every route, before ready.
 */
export const componentsPlugin = fp(
  async (app) => {
    const pending = [...app[kReferenced]];
    const registered = new Set<string>();
    while (pending.length > 0) {
      const id = pending.pop() as string;
      if (registered.has(id)) continue;
      const found = app.usherComponent(id);
      if (!found) throw new Error(`a route references ${id}, which no component defines`);
      app.addSchema(found.schema);
      registered.add(id);
      pending.push(...referencedComponents(found.schema));
    }
  },
  { name: 'usher-components', dependencies: ['usher-openapi'] },
);

/**
 * The document as JSON. An id's maximum, 2^63-1, is written with its exact digits: as a number it
 * would be rounded to 2^63, one past the largest id.
 */
export function documentJson(document: unknown): string {
  return JSON.stringify(document, (key, value) =>
    key === 'maximum' && value === MAX_ID_IN_DOCUMENT ? rawJson(String(MAX_ID)) : value,
  );
}

// JSON.rawJSON (Node 21+) is not in TypeScript's lib yet.
const rawJson = (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON;

const ASSETS = new URL('./docs-assets/', import.meta.url);
const asset = (name: string) => readFile(new URL(name, ASSETS));

/**
 * Swagger UI's plugins on the docs page. @fastify/swagger-ui writes a function in `uiConfig` into
 * the page's script by its source text, so this one only names them: DownloadUrl, the default this
 * list replaces (it loads the document), and Usher's, from the page's theme script
 * (docs-assets/docs.js).
 */
const UI_PLUGINS = new Function(
  'return [SwaggerUIBundle.plugins.DownloadUrl, window.usherDocsPlugin];',
) as NonNullable<FastifySwaggerUiConfigOptions['plugins']>[number];

// The package's own copies of the document serialise app.swagger() themselves, so they would
// write the id maximum rounded up to 2^63: they send readers to /openapi.json instead, whose JSON
// is also valid YAML.
const PACKAGE_COPIES = new Set([`${DOCS_PREFIX}/json`, `${DOCS_PREFIX}/yaml`]);

/**
 * GET /openapi.json, the one address of the document, and the browsable docs at /docs, which
 * load it; registered after every route.
 */
export const docsPlugin = fp(
  async (app) => {
    app.get(
      '/openapi.json',
      { schema: { hide: true }, config: { usesDatabase: false } },
      async (_request, reply) =>
        reply.type('application/json; charset=utf-8').send(documentJson(app.swagger())),
    );
    // @fastify/swagger-ui points Swagger UI at its own /docs/json whatever `uiConfig.url` says; a
    // config document the page fetches (`configUrl`) is what Swagger UI lets override that with.
    const pageConfig = { url: '/openapi.json' };
    app.get(
      `${DOCS_PREFIX}/config.json`,
      { schema: { hide: true }, config: { usesDatabase: false } },
      async () => pageConfig,
    );
    const [icon, logo, css, js] = await Promise.all([
      readFile(new URL('../pages/assets/icon.svg', import.meta.url)),
      asset('logo.svg'),
      asset('docs.css'),
      asset('docs.js'),
    ]);
    // The package's page has no viewport (unreadable at phone width): added to its head here, in
    // a scope of its own so that no other response is looked at.
    await app.register(async (docs) => {
      docs.addHook('onSend', async (request, _reply, payload) => {
        const url = request.routeOptions.url;
        const page = url === DOCS_PREFIX || url === `${DOCS_PREFIX}/`;
        return page && typeof payload === 'string'
          ? payload.replace(/<meta charset="UTF-8">/i, `$&\n      ${VIEWPORT}`)
          : payload;
      });
      await docs.register(swaggerUi, {
        routePrefix: DOCS_PREFIX,
        // The policy is security-headers.ts's DOCS_CSP, set on every response under /docs.
        staticCSP: false,
        theme: {
          title: 'Usher API reference',
          favicon: [
            { filename: 'icon.svg', rel: 'icon', type: 'image/svg+xml', sizes: 'any', content: icon },
          ],
          css: [{ filename: 'usher.css', content: css.toString('utf8') }],
          js: [{ filename: 'usher.js', content: js.toString('utf8') }],
        },
        logo: { type: 'image/svg+xml', content: logo },
        uiHooks: {
          onRequest: (request, reply, done) => {
            if (PACKAGE_COPIES.has(request.routeOptions.url ?? '')) reply.redirect('/openapi.json', 301);
            else done();
          },
        },
        uiConfig: {
          configUrl: `${DOCS_PREFIX}/config.json`,
          plugins: [UI_PLUGINS],
          // Off: with deep links Swagger UI puts a link inside each operation's expand button, a
          // control inside a control that screen readers cannot reach (axe-core nested-interactive).
          deepLinking: false,
          defaultModelsExpandDepth: 0,
          // No tagsSorter or operationsSorter: the document's order is the page's (operations last).
        },
      });
    });
  },
  { name: 'usher-docs', dependencies: ['usher-openapi'] },
);
