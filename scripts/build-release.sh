#!/usr/bin/env bash
# Builds a release tarball: the compiled service (dist/) with what installs and starts it, and no
# node_modules. Where it is deployed:
#   tar -xzf parley-VERSION.tgz && cd parley-VERSION
#   npm ci --omit=dev                 # the runtime dependencies only (no TypeScript, no test clients)
#   node dist/cli/main.js serve       # or `npm start`, which also installs the Debian packages
# Run it in a checkout with its dev dependencies installed (`npm ci`): it compiles src/ first.
# The Dockerfile's build stage runs it, and test/production-install.test.ts installs and starts its
# tarball under Node 24 (no container engine runs in this project's CI).
#   scripts/build-release.sh [OUT.tgz]     default: parley-VERSION.tgz in the current directory
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="$(node -p "require('$root/package.json').version")"
out="$(realpath -m "${1:-parley-$version.tgz}")"

# --if-stale: a build already current is used as it is (the test suite builds once and runs servers from
# it while this runs).
node "$root/scripts/build.mjs" --if-stale

# What the release holds: the package and lockfile (npm ci), the npm configuration (allowScripts and
# .npmrc), the compiled service, the `parley` command, what `npm start` runs, the deployment files and
# the docs. Not src/, test/ or bench/.
files=(package.json package-lock.json .npmrc bin dist scripts/setup.sh scripts/progress.mjs scripts/build.mjs deploy README.md)
[ -d "$root/docs" ] && files+=(docs)
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/parley-$version"
(cd "$root" && cp -a --parents "${files[@]}" "$stage/parley-$version/")
tar -czf "$out" -C "$stage" "parley-$version"
echo "release: $out" >&2
