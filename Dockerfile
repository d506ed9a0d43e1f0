# syntax=docker/dockerfile:1
# Sandlot's container image: one image for every process (`serve`, `worker`, `migrate`, …), picked by
# the arguments after the entrypoint (deploy/ sets `args`). Two stages: the build stage installs the
# development dependencies and compiles the TypeScript (npm run build → dist/); the runtime stage has
# production dependencies only, the compiled JavaScript and the SQL migrations (inside dist/), and
# runs as the unprivileged `node` user (uid 1000). No TypeScript loader is installed in it.
#
#   docker build -t sandlot .
#   docker run --rm -p 8080:8080 sandlot                 # embedded mode (PGlite in /var/lib/sandlot)
#   docker run --rm sandlot migrate                      # with DATABASE_URL, as the migration Job does
#
# Node is pinned by tag; change it with --build-arg NODE_IMAGE=node:<version>-bookworm-slim (engines in
# package.json: 20.19+, 22.13+ or 24).
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# Dependencies first: this layer is reused until package*.json change.
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/build.ts scripts/
COPY actors actors
COPY cli cli
COPY config config
COPY formats formats
COPY http http
COPY lib lib
COPY machines machines
COPY migrations migrations
COPY providers providers
COPY store store
COPY workers workers
COPY console console
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    SANDLOT_DATA_DIR=/var/lib/sandlot
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist dist
# `npx sandlot …` inside the container: with no sources beside it, it runs dist/.
COPY cli/sandlot.mjs cli/sandlot.mjs
# Embedded mode's data directory (PGlite and the dev signing key); production mode keeps nothing here.
RUN mkdir -p /var/lib/sandlot && chown node:node /var/lib/sandlot
USER node
# The API (PORT) and the /metrics listener (SANDLOT_METRICS_PORT, set by deploy/ to 9464).
EXPOSE 8080 9464
# No HEALTHCHECK: one image runs `serve` (HTTP) and `worker` (none), so no single command fits both;
# Kubernetes probes /healthz and /readyz (deploy/), and `docker run` users can curl them.
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["serve"]
