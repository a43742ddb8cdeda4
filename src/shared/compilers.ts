// Response serializers and request validators shared by every app built in one process. Compiling
// them (fast-json-stringify, Ajv) was nine tenths of what building an app costs, and a process
// builds many apps only in the tests, where each file starts several over the same routes. An app
// builds its route schemas afresh (new objects, the same content), so they are remembered by
// their content.
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

interface RouteSchema {
  method: string;
  url: string;
  schema?: unknown;
  httpStatus?: string;
  httpPart?: string;
}
type Compile<F> = (route: RouteSchema) => F;
type Factory<F> = (externalSchemas?: unknown, options?: object) => Compile<F>;

// Fastify's own defaults (what it uses when given no factory), resolved from Fastify itself.
const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
const defaultSerializers = (
  fromFastify('@fastify/fast-json-stringify-compiler') as {
    SerializerSelector: () => Factory<(doc: unknown) => string>;
  }
).SerializerSelector();
const defaultValidators = (
  fromFastify('@fastify/ajv-compiler') as { AjvCompiler: () => Factory<unknown> }
).AjvCompiler();

/**
 * A schema as text: JSON, with what JSON would drop or refuse written out (a RegExp, a function,
 * a bigint), so two schemas that differ only there never share a key. Undefined for a schema with
 * a cycle, which is then compiled for its app alone, as Fastify would.
 */
function asText(value: unknown): string | undefined {
  try {
    return JSON.stringify(value, (_key, v: unknown) =>
      v instanceof RegExp
        ? `RegExp ${v}`
        : typeof v === 'function' || typeof v === 'bigint'
          ? `${typeof v} ${v}`
          : v,
    );
  } catch {
    return undefined;
  }
}

/** A context's schemas (the same objects), options and key, as last seen by one factory. */
interface LastContext {
  schemas: unknown[];
  options: unknown;
  key: string;
}

/**
 * The shared schemas and options as text. Fastify asks a factory again for every route of a
 * context that added schemas, each time with the same schema objects: the text of the last ones
 * is kept while they are the same.
 */
function contextKey(
  seen: { last?: LastContext },
  externalSchemas: unknown,
  options: unknown,
): string | undefined {
  const schemas = Object.values(externalSchemas ?? {});
  const last = seen.last;
  if (
    last !== undefined &&
    last.options === options &&
    last.schemas.length === schemas.length &&
    last.schemas.every((schema, i) => schema === schemas[i])
  ) {
    return last.key;
  }
  const key = asText([externalSchemas, options]);
  if (key !== undefined) seen.last = { schemas, options, key };
  return key;
}

/**
 * `factory`, remembering what it compiled: what it compiles depends only on the route's schema
 * (and the part of the request or the status it is for), the shared schemas and the options, so an
 * app built over the same ones reuses what was compiled for an app before it.
 */
function remembering<F>(factory: Factory<F>): Factory<F> {
  const compiled = new Map<string, Map<string, F>>();
  const seen: { last?: LastContext } = {};
  return (externalSchemas, options) => {
    const compile = factory(externalSchemas, options);
    const context = contextKey(seen, externalSchemas, options);
    if (context === undefined) return compile;
    let own = compiled.get(context);
    if (!own) {
      own = new Map();
      compiled.set(context, own);
    }
    const known = own;
    return (route) => {
      const schema = asText(route.schema);
      if (schema === undefined) return compile(route);
      const key = `${route.httpPart ?? ''} ${schema}`;
      let done = known.get(key);
      if (done === undefined) {
        done = compile(route);
        known.set(key, done);
      }
      return done;
    };
  };
}

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;

/**
 * Fastify's `schemaController.compilersFactory`, with what it compiles remembered. (Fastify's types
 * give the validator's compile the schema itself; it is called with the route's definition, as the
 * serializer's is.)
 */
export const rememberedCompilers = {
  buildSerializer: remembering(defaultSerializers),
  buildValidator: remembering(defaultValidators),
} as unknown as CompilersFactory;
