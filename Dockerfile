# The server image: `docker build -t svc .` (docs/deploying.md).

# Build stage: every dependency, so the `bun` package's postinstall fetches Bun's binary; then
# the binary is kept aside and the development dependencies are dropped.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY src ./src
COPY db ./db
COPY docs/examples ./docs/examples
RUN cp node_modules/bun/bin/bun.exe /usr/local/bin/bun \
  && npm prune --omit=dev --no-audit --no-fund

# Runtime stage: Bun, the runtime dependencies and the sources; no npm, no compiler.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --no-create-home svc \
  && mkdir /data && chown svc:svc /data && chmod 0700 /data
COPY --from=build /usr/local/bin/bun /usr/local/bin/bun
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/src ./src
COPY --from=build /app/db ./db
COPY --from=build /app/docs/examples ./docs/examples
USER svc
ENV SVC_DATA_DIR=/data HOST=0.0.0.0 PORT=3000 MIMALLOC_PURGE_DELAY=10000
# The embedded store and generated secrets live here when DATABASE_URL is unset.
VOLUME /data
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["bun", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/ready').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["bun", "--smol", "src/main.ts"]
