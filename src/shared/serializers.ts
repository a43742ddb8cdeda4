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

/**
 * Fastify's default serializer factory, remembering what it compiled: a serializer depends only on
 * the route's schema, the shared schemas and the options, so an app built over the same ones
 * reuses the one compiled for an app before it.
 */
export const cachedSerializers: Factory = (externalSchemas, serializerOpts) => {
  const compile = defaultFactory(externalSchemas, serializerOpts);
  const context = JSON.stringify([externalSchemas, serializerOpts]);
  let bySchema = compiled.get(context);
  if (!bySchema) {
    bySchema = new Map();
    compiled.set(context, bySchema);
  }
  const serializers = bySchema;
  return (route) => {
    const key = JSON.stringify(route.schema);
    let serializer = serializers.get(key);
    if (serializer === undefined) {
      serializer = compile(route);
      serializers.set(key, serializer);
    }
    return serializer;
  };
};
