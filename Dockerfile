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
# The OCI labels take what only the build knows from build arguments, e.g.
#   docker build -t sandlot:0.1.0 --build-arg VERSION=0.1.0 \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#
# Node is pinned by tag, on the 24 LTS line; change it with --build-arg NODE_IMAGE=node:<version>-bookworm-slim
# (engines in package.json: 20.19+, 22.13+ or 24; the code is checked on 20 as well). Pin a digest too
# (node:<version>-bookworm-slim@sha256:…) where the build must not follow a re-pushed tag.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

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
# Placeholder: pass --build-arg SOURCE=<the repository URL>.
ARG SOURCE=https://git.example.com/sandlot
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG CREATED=unknown
# package.json says UNLICENSED (no open-source licence); LicenseRef- is SPDX's form for that.
LABEL org.opencontainers.image.title="sandlot" \
      org.opencontainers.image.description="Control plane that leases agent sandboxes: Environment actors persisted in PostgreSQL" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="LicenseRef-Sandlot-Proprietary"
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
# The API (PORT), the /metrics listener (SANDLOT_METRICS_PORT, set by deploy/ to 9464) and the
# worker's probe listener (SANDLOT_WORKER_HEALTH_PORT, set by deploy/ to 8081).
EXPOSE 8080 8081 9464
# No HEALTHCHECK: `serve` answers /healthz on PORT, `worker` on SANDLOT_WORKER_HEALTH_PORT (only when
# set) and `migrate` on none, so no single command fits all; Kubernetes probes each (deploy/), and
# `docker run` users can curl them.
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["serve"]
