// Response serializers shared by every app built in one process. Compiling them (fast-json-stringify)
// is most of what building an app costs, and a process builds many apps only in the tests, where
// each file starts several over the same routes. An app builds its route schemas afresh (new
// objects, the same content), so they are remembered by their content.
import { createRequire } from 'node:module';

type Serializer = (doc: unknown) => string;
type Compile = (route: { method: string; url: string; httpStatus: string; schema?: unknown }) => Serializer;
type Factory = (externalSchemas?: unknown, serializerOpts?: object) => Compile;

// Fastify's own default (what it uses when given no factory), resolved from Fastify itself.
const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
const defaultFactory = (
  fromFastify('@fastify/fast-json-stringify-compiler') as { SerializerSelector: () => Factory }
).SerializerSelector();

/** By the shared schemas and options (as JSON), then by the route's schema (as JSON). */
const compiled = new Map<string, Map<string, Serializer>>();

/** The last context's schemas (the same objects) and options, and its key. */
let last: { schemas: unknown[]; options: unknown; key: string } | undefined;

/**
 * The shared schemas and options as JSON. Fastify asks for a serializer factory again for every
 * route of a context that added schemas, each time with the same schema objects: the JSON of the
 * last ones is kept while they are the same.
 */
function contextKey(externalSchemas: unknown, serializerOpts: unknown): string {
  const schemas = Object.values(externalSchemas ?? {});
  if (
    last !== undefined &&
    last.options === serializerOpts &&
    last.schemas.length === schemas.length &&
    last.schemas.every((schema, i) => schema === schemas[i])
  ) {
    return last.key;
  }
  const key = JSON.stringify([externalSchemas, serializerOpts]);
  last = { schemas, options: serializerOpts, key };
  return key;
}

/**
 * Fastify's default serializer factory, remembering what it compiled: a serializer depends only on
 * the route's schema, the shared schemas and the options, so an app built over the same ones
 * reuses the one compiled for an app before it.
 */
export const cachedSerializers: Factory = (externalSchemas, serializerOpts) => {
  const compile = defaultFactory(externalSchemas, serializerOpts);
  const context = contextKey(externalSchemas, serializerOpts);
  let serializers = compiled.get(context);
  if (!serializers) {
    serializers = new Map();
    compiled.set(context, serializers);
  }
  const own = serializers;
  return (route) => {
    const key = JSON.stringify(route.schema);
    let serializer = own.get(key);
    if (serializer === undefined) {
      serializer = compile(route);
      own.set(key, serializer);
    }
    return serializer;
  };
};
