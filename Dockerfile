# Parley's container image: Debian slim with Node 24 (the current LTS), the speech engines and coturn.
#   docker build -t parley .
#   docker compose up -d          (compose.yaml: Parley, PostgreSQL, Redis; see docs/deploying/production.md)

# Build stage: the release tarball as scripts/build-release.sh makes it, from the sources with their
# dev dependencies (TypeScript).
FROM node:24-bookworm-slim AS build
# Compilers for better-sqlite3 12 (Node 20's SQLite driver, still installed) when no prebuilt binary fits.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN npm ci --no-audit --no-fund --loglevel=error \
 && bash scripts/build-release.sh /tmp/parley-release.tgz

# Install stage: the release installed as on any host, runtime dependencies only (npm ci --omit=dev;
# test/production-install.test.ts takes the same steps, since no container engine runs in CI).
FROM build AS install
WORKDIR /app
RUN tar -xzf /tmp/parley-release.tgz --strip-components=1 -C /app \
 && npm ci --omit=dev --no-audit --no-fund --loglevel=error

# Runtime stage: what `scripts/setup.sh --runtime` installs on a Debian host, and the release.
FROM node:24-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends pocketsphinx pocketsphinx-en-us flite espeak-ng ffmpeg coturn tini \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=install /app ./
# Parley's own state (SQLite file when DATABASE_URL is unset, generated secrets, node id, coturn's
# files) and the calls' recordings, each on a volume (recordings grow, and nodes may share theirs),
# owned by the unprivileged user the service runs as.
RUN useradd --system --home-dir /var/lib/parley --shell /usr/sbin/nologin parley \
 && mkdir -p /var/lib/parley /var/lib/parley-recordings \
 && chown parley:parley /var/lib/parley /var/lib/parley-recordings \
 && chmod 700 /var/lib/parley /var/lib/parley-recordings
VOLUME ["/var/lib/parley", "/var/lib/parley-recordings"]
USER parley
ENV HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/var/lib/parley \
    RECORDING_DIR=/var/lib/parley-recordings \
    LOG_FORMAT=json
EXPOSE 8080/tcp 3478/udp 3479/udp 3479/tcp
# Liveness from inside the container, with what the slim image has: Node's own fetch, on loopback
# (which a wildcard HOST and compose's 127.0.0.1 both answer on) at PORT.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini: signals reach Node (SIGTERM drains calls), and coturn children left behind are reaped.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "dist/cli/main.js", "serve"]
