// Entry point: configuration, then the app, then the port. A bad setting stops here, before listening.
import { buildApp } from './app.ts';
import { type Config, ConfigError, loadConfig } from './config.ts';

const SHUTDOWN_GRACE_MS = 10_000;

function readConfig(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`usher: configuration error: ${error.message}`);
      process.exit(2);
    }
    throw error;
  }
}

async function serve(config: Config): Promise<void> {
  const app = await buildApp(config);
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    // In-flight requests finish, new ones get 503, then the database closes (onClose hook).
    const force = setTimeout(() => {
      app.log.error('shutdown took too long; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  await app.listen({ host: config.host, port: config.port });
}

const config = readConfig();
serve(config).catch((error: unknown) => {
  console.error(`usher: failed to start: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
