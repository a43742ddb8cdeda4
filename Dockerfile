# syntax=docker/dockerfile:1
# Usher's image: `docker build -t usher .`, or `docker compose up` (compose.yaml, with PostgreSQL).
# Node runs the TypeScript sources as they are (type stripping), so there is no compile step: the
# build stage only installs the production dependencies, and the image gets them with the code.

# The dependencies, without the dev ones (TypeScript, Biome, the test tools). The manifests come
# first and alone, so this layer is rebuilt only when they change, not on every code change.
FROM node:24-bookworm-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24-bookworm-slim
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY src ./src
# The data directory: the SQLite database and its key file (usher.key), and the .eml outbox when
# no SMTP_URL is set; the defaults (sqlite:./data/usher.db, ./data/outbox) land here. It is the
# only place the process writes besides /tmp, so the container may run with a read-only root.
RUN mkdir -p /app/data && chown node:node /app/data
VOLUME /app/data
# The image's own user "node" (uid 1000), not root; it owns only /app/data.
USER node
# Inside a container the service must listen on every interface to be reachable at all.
ENV HOST=0.0.0.0 PORT=3000
EXPOSE 3000
# Liveness (GET /healthz, no database access): node itself asks, as the slim image has no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# bin/server.mjs checks the Node version, then runs the server; it handles SIGTERM (drains, exits).
CMD ["node", "bin/server.mjs"]
