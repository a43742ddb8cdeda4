// Fastify's response serializers, compiled once per process for each schema instead of once per app.
// Compiling them (fast-json-stringify) was three quarters of building an app: about a second of CPU
// on this 2-core machine, paid by every app a test file starts (hundreds in `npm test`). A server
// builds one app, so for it nothing changes; the tests' apps share what the first one compiled.
// The key is everything the default compiler reads: the route's schema, the shared schemas and the
// serializer options, as JSON (a TypeBox schema's symbols are TypeBox's own; the compiler reads
// only the JSON Schema keywords). A serializer is a pure function of its input, so sharing one
// between apps cannot carry anything from one to the other.
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';

type Factory = ReturnType<typeof SerializerSelector>;
type Serializer = ReturnType<ReturnType<Factory>>;

const compileDefault: Factory = SerializerSelector();
const compiled = new Map<string, Serializer>();

function asJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}

/** Fastify's default `buildSerializer`, with its compilations kept for the process's later apps. */
export const sharedSerializers: Factory = (externalSchemas, options) => {
  const compile = compileDefault(externalSchemas, options);
  const context = asJson([externalSchemas ?? null, options ?? null]);
  return (route) => {
    const schema = asJson(route.schema);
    // Not JSON (a cycle, a bigint): compiled for this app alone, as Fastify would.
    if (context === undefined || schema === undefined) return compile(route);
    const key = `${context}\n${schema}`;
    let serializer = compiled.get(key);
    if (serializer === undefined) {
      serializer = compile(route);
      compiled.set(key, serializer);
    }
    return serializer;
  };
};
