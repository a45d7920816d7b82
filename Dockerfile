# syntax=docker/dockerfile:1
# Stages: deps (every dependency, patched) → build   (tsc: dist/, the compiled JavaScript the image runs)
#                                          → runtime (production dependencies and dist/ only, non-root, the default)
#                                          → test    (dev dependencies and Chromium, for `npm test`)

FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# npm ci's postinstall applies these to node_modules (patch-package); the grep fails the build if it did not
COPY patches ./patches
# npm ci's `prepare` (bin/build.mjs --prepare) finds no sources yet and compiles nothing: the build stage does
COPY bin/build.mjs ./bin/build.mjs
RUN npm ci --no-audit --no-fund \
 && grep -q 'the connection closed before this buffered write ran' node_modules/postgres/src/connection.js

FROM deps AS build
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY devnet ./devnet
COPY drizzle ./drizzle
RUN npm run build

FROM deps AS production-deps
# drops the dev dependencies; the patched postgres.js files stay as they are
RUN npm prune --omit=dev --no-audit --no-fund

FROM node:20-bookworm-slim AS test
WORKDIR /app
# the dashboard tests drive a real browser (test/support/browser.ts finds it through CHROME_PATH)
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium \
 && rm -rf /var/lib/apt/lists/*
ENV CHROME_PATH=/usr/bin/chromium
COPY --from=deps /app/node_modules ./node_modules
COPY . .
CMD ["npm", "test"]

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000
WORKDIR /app
COPY --from=production-deps --chown=node:node /app/node_modules ./node_modules
COPY --chown=node:node package.json package-lock.json ./
# bin/attribution.mjs runs dist/ (no sources in the image: nothing to be newer than it); dist/ carries the
# migrations and the dashboard's files beside the compiled code
COPY --chown=node:node bin/attribution.mjs bin/dist-state.mjs ./bin/
COPY --from=build --chown=node:node /app/dist ./dist
# the image's own unprivileged user (uid 1000)
USER node
EXPOSE 3000
# ready = the API answers and PostgreSQL and Redis answer it (roles without the API have no /readyz: disable for them)
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "bin/attribution.mjs"]
CMD ["start"]
