// Generates src/generated/profile-{a,b}.ts from the OpenAPI document Usher serves in each profile:
// the app is built in-process (on a throwaway SQLite database), GET /openapi.json is answered,
// and openapi-typescript turns it into types. `npm run generate -w @usher/client` writes the files;
// test/clients/generated-types.test.ts regenerates them in memory and fails when the committed ones
// are stale. This script is a build tool of the repository: the package itself never imports
// server code.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString, type OpenAPI3, type SchemaObject } from 'openapi-typescript';
import ts from 'typescript';
import { buildApp } from '../../../src/app.ts';
import { loadConfig } from '../../../src/config.ts';

export const PROFILES = ['a', 'b'] as const;
export type Profile = (typeof PROFILES)[number];

/** Where each profile's types are committed. */
export function generatedFile(profile: Profile): string {
  return fileURLToPath(new URL(`../src/generated/profile-${profile}.ts`, import.meta.url));
}

/** The document each profile serves, from an app built in-process on an empty database. */
export async function servedDocuments(): Promise<Record<Profile, OpenAPI3>> {
  const dir = mkdtempSync(join(tmpdir(), 'usher-client-generate-'));
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  try {
    const documents: Partial<Record<Profile, OpenAPI3>> = {};
    for (const profile of PROFILES) {
      // A fixed configuration rather than the caller's environment: the output must not depend on it.
      const config = loadConfig({ DATABASE_URL: `sqlite:${join(dir, 'usher.db')}`, PROFILE: profile });
      const app = await buildApp(config, { logStream: silent });
      try {
        const res = await app.inject({ method: 'GET', url: '/openapi.json' });
        if (res.statusCode !== 200)
          throw new Error(`GET /openapi.json answered ${res.statusCode}: ${res.body}`);
        documents[profile] = JSON.parse(res.body) as OpenAPI3;
      } finally {
        await app.close();
      }
    }
    return documents as Record<Profile, OpenAPI3>;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * An integer a double cannot hold exactly in all its allowed values: `format: int64` without
 * bounds inside ±(2^53-1). The client reads and writes these as bigints; an int64 bounded within
 * 2^53 (a price) stays a number, which holds it exactly.
 */
function needsBigInt(schema: SchemaObject): boolean {
  const type = 'type' in schema ? schema.type : undefined;
  const integer = type === 'integer' || (Array.isArray(type) && type.includes('integer'));
  if (!integer) return false;
  const int64 = 'format' in schema && schema.format === 'int64';
  const { minimum, maximum } = schema as { minimum?: number; maximum?: number };
  const bounded =
    minimum !== undefined &&
    maximum !== undefined &&
    minimum >= Number.MIN_SAFE_INTEGER &&
    maximum <= Number.MAX_SAFE_INTEGER;
  return int64 && !bounded;
}

/**
 * The names of the properties that need a bigint anywhere in the document. The client's JSON
 * reader turns a number under one of these keys into a bigint, so a name must not also be a
 * narrower integer elsewhere: generation fails rather than produce a client that mistypes one.
 */
export function bigintProperties(document: OpenAPI3): string[] {
  const wide = new Set<string>();
  const other = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const properties = (node as { properties?: unknown }).properties;
    if (properties !== null && typeof properties === 'object' && !Array.isArray(properties)) {
      for (const [name, schema] of Object.entries(properties as Record<string, SchemaObject>)) {
        const type = (schema as { type?: unknown }).type;
        if (needsBigInt(schema)) wide.add(name);
        else if (type === 'integer' || (Array.isArray(type) && type.includes('integer'))) other.add(name);
      }
    }
    for (const value of Object.values(node)) visit(value);
  };
  visit(document);
  const both = [...wide].filter((name) => other.has(name));
  if (both.length > 0) {
    throw new Error(`properties both 64-bit and narrower integers in the document: ${both.join(', ')}`);
  }
  return [...wide].sort();
}

const BIGINT = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword);

/** The TypeScript source of one profile's types. */
export async function generateTypes(profile: Profile, document: OpenAPI3): Promise<string> {
  const properties = bigintProperties(document);
  const nodes = await openapiTS(structuredClone(document), {
    // A bigint on both sides of the wire (the client's JSON reader and writer see to it), so a
    // caller never holds an id a double has rounded.
    transform: (schema) => (needsBigInt(schema) ? BIGINT : undefined),
    silent: true,
  });
  return [
    `// Generated by clients/typescript/scripts/generate.ts from the OpenAPI document profile ${profile.toUpperCase()}`,
    '// serves (GET /openapi.json). Do not edit: run `npm run generate -w @usher/client`.',
    '',
    astToString(nodes).trimEnd(),
    '',
    '/** Properties whose integers a double cannot always hold: the client reads them as bigints. */',
    `export const bigintProperties: readonly string[] = ${JSON.stringify(properties)};`,
    '',
  ].join('\n');
}

/** Every generated file's path and expected contents. */
export async function generateAll(): Promise<Array<{ path: string; source: string }>> {
  const documents = await servedDocuments();
  const files = [];
  for (const profile of PROFILES) {
    files.push({ path: generatedFile(profile), source: await generateTypes(profile, documents[profile]) });
  }
  return files;
}

if (import.meta.main) {
  for (const { path, source } of await generateAll()) {
    writeFileSync(path, source);
    process.stdout.write(`wrote ${path}\n`);
  }
}
