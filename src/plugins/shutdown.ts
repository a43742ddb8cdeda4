import fp from 'fastify-plugin';
import { AppError } from '../shared/errors.ts';

const IDLE_SWEEP_MS = 100;

/**
 * During app.close(): a request that still arrives (pipelined on a busy keep-alive connection) gets
 * 503 UNAVAILABLE through the one error path, since Fastify's own return503OnClosing body would bypass
 * it. server.close() only drops connections idle at that instant, so connections still busy are
 * swept as soon as they go idle: a keep-alive client does not hold the exit for keepAliveTimeout.
 */
export const shutdownPlugin = fp(
  async (app) => {
    let closing = false;
    let sweep: NodeJS.Timeout | undefined;
    app.addHook('preClose', async () => {
      closing = true;
      sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
      sweep.unref();
    });
    app.addHook('onClose', async () => {
      clearInterval(sweep);
    });
    app.addHook('onRequest', (_request, _reply, done) => {
      done(
        closing
          ? new AppError('UNAVAILABLE', 'The server is shutting down; retry on another instance.')
          : undefined,
      );
    });
  },
  { name: 'usher-shutdown', dependencies: ['usher-errors'] },
);
