import fp from 'fastify-plugin';

/**
 * One line per request at info, once the response is sent: method, URL, status and time, with
 * the request id. No headers and no bodies, so no credential can reach the log this way.
 */
export const accessLogPlugin = fp(
  async (app) => {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info(
        {
          method: request.method,
          url: request.url,
          statusCode: reply.statusCode,
          responseTime: Math.round(reply.elapsedTime * 100) / 100,
          address: request.ip,
        },
        'request',
      );
      done();
    });
  },
  { name: 'usher-access-log' },
);
