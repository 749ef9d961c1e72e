# Parley's container image: Debian slim with Node 24 (the current LTS), the speech engines and coturn.
#   docker build -t parley .
#   docker compose up -d          (compose.yaml: Parley, PostgreSQL, Redis; see README "Deploying")

# Build stage: the release as scripts/build-release.sh makes it (test/build.test.ts runs the same
# script in a clean directory, since no container engine runs in this project's CI).
FROM node:24-bookworm-slim AS build
# Compilers for better-sqlite3 and other native modules when no prebuilt binary fits.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN bash scripts/build-release.sh

# Runtime stage: what `scripts/setup.sh --runtime` installs on a Debian host, and the release.
FROM node:24-bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends pocketsphinx pocketsphinx-en-us flite espeak-ng ffmpeg coturn tini \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
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
