import fp from 'fastify-plugin';

const IDLE_SWEEP_MS = 100;

/** Whether app.close() has begun; plugins/pipeline.ts answers requests that still arrive with 503. */
export interface ShutdownState {
  readonly closing: boolean;
}

/**
 * During app.close(): a request that still arrives (pipelined on a busy keep-alive connection) gets
 * 503 UNAVAILABLE through the one error path (the pipeline's onRequest hook), since Fastify's own
 * return503OnClosing body would bypass it. server.close() only drops connections idle at that
 * instant, so connections still busy are swept as soon as they go idle: a keep-alive client does
 * not hold the exit for keepAliveTimeout.
 */
export const shutdownPlugin = fp<{ state: { closing: boolean } }>(
  async (app, { state }) => {
    let sweep: NodeJS.Timeout | undefined;
    app.addHook('preClose', async () => {
      state.closing = true;
      sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_MS);
      sweep.unref();
    });
    app.addHook('onClose', async () => {
      clearInterval(sweep);
    });
  },
  { name: 'usher-shutdown', dependencies: ['usher-errors'] },
);
