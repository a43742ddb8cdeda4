import fp from 'fastify-plugin';

function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

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
          // A page may be linked with ?token= (the fragment is the norm, but apps link both ways):
          // its path says which page it was, and the token stays out of the log.
          url: request.routeOptions.config.page ? pathOf(request.url) : request.url,
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
