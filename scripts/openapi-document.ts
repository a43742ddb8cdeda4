// The OpenAPI document exactly as a running Usher serves it at GET /openapi.json, per profile:
// the app is built on a throwaway in-memory SQLite database and asked through HTTP injection, so
// the linter and the client generator read what clients read, not a copy.
import { Writable } from 'node:stream';
import { buildApp } from '../src/app.ts';
import { loadConfig, type Profile } from '../src/config.ts';

const silent = new Writable({ write: (_chunk, _enc, done) => done() });

/**
 * `publicUrl` is where the document says the server is; a deployment sets it through PUBLIC_URL
 * (the linter reads the document a production deployment serves, on HTTPS).
 */
export async function servedDocument(profile: Profile, publicUrl?: string): Promise<Record<string, unknown>> {
  const config = loadConfig({
    DATABASE_URL: 'sqlite::memory:',
    PROFILE: profile,
    LOG_LEVEL: 'error',
    ...(publicUrl ? { PUBLIC_URL: publicUrl } : {}),
  });
  const app = await buildApp(config, { logStream: silent });
  try {
    const response = await app.inject({ method: 'GET', url: '/openapi.json' });
    if (response.statusCode !== 200) throw new Error(`GET /openapi.json: ${response.statusCode}`);
    return response.json();
  } finally {
    await app.close();
  }
}
