#!/usr/bin/env bash
# Builds a release: the dependencies installed from the lockfile, src/ compiled to dist/, then the
# dev dependencies removed, leaving what `node dist/cli/main.js serve` needs and nothing else.
# The Dockerfile's build stage runs it, and so does test/build.test.ts (no container engine runs in
# this project's CI), so that both take the same steps.
#   scripts/build-release.sh        builds in place (the Dockerfile, over its copy of the sources)
#   scripts/build-release.sh DIR    first copies the tracked files (git ls-files) to DIR, builds there
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

if [ $# -ge 1 ]; then
  dest="$1"
  mkdir -p "$dest"
  # Tracked files only: no node_modules, dist, data or .env from the working copy.
  (cd "$root" && git ls-files -z | xargs -0 cp --parents -t "$dest")
  cd "$dest"
else
  cd "$root"
fi

# onnxruntime-node's install script would fetch CUDA libraries (its CPU runtime ships in the package):
# package.json's allowScripts denies it; the variable does the same for an npm older than that field
# (the container's base image brings its own npm).
export ONNXRUNTIME_NODE_INSTALL=skip
npm ci --loglevel=error --no-audit --no-fund
npm run build --silent
npm prune --omit=dev --loglevel=error --no-audit --no-fund
