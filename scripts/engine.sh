#!/usr/bin/env bash
# A current Docker Engine from Debian's archive, for hosts where no Docker daemon answers:
# docker.io + docker-cli + docker-buildx + containerd from the `sid` suite (28.5 as of
# 2026-11; whatever sid carries next is what users get next), `trixie` when sid cannot be
# installed. It lives in a chroot (${ENGINE_ROOT:-/var/lib/build-graph/engine}) and runs in a
# private mount namespace: nothing it mounts shows on the host. On the host itself it installs
# debootstrap (apt) and links the engine's buildx plugin where every docker CLI looks for
# plugins (/usr/local/lib/docker/cli-plugins), so the host's own docker CLI builds with it too.
#
#   engine.sh up [containerd|classic]   start (or keep) the instance in that image store;
#                                       containerd is Docker 29's default for fresh installs,
#                                       classic (overlay2) is what upgraded installs keep
#   engine.sh env                       the exports that point docker-py and the CLI at it
#   engine.sh status | down
#
# ENGINE_SUITE=bookworm (with its own ENGINE_ROOT) installs Debian 12's own docker.io 20.10
# instead: the old engine, classic store only, for tests of what it cannot do (zstd layers).
# ENGINE_INSTANCE=NAME runs another engine beside the first (own socket, data root, exec
# root, config and cgroup parent: they share no cache). ENGINE_MIN_API=1.44 gives the daemon
# Docker 29.0's API floor (DOCKER_MIN_API_VERSION); ENGINE_TCP=PORT also listens on
# tcp://127.0.0.1:PORT (loopback only, no TLS: a "remote" daemon for tests); ENGINE_CACHE_MAX
# (16GB) caps BuildKit's build cache (its garbage collector, least recently used first); ENGINE_CA_DIR=DIR
# (a host folder under one of the bound ones below) adds its CA certificates to what the
# daemon trusts besides the system's (Go's SSL_CERT_DIR: a token service's, whose requests do
# not read /etc/docker/certs.d), read once when it starts. `purge` stops an
# instance and removes its data. Containers and builds use the host's
# network (no bridge: this machine may use no private-range addresses). The host's
# directories where build-graph's bind-mount sources live (/tmp, /work, /home, /root, /srv,
# /opt, /var/tmp, and the project's own folder) appear inside at the same paths, so bind
# mounts resolve as on any same-host daemon.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# another suite's engine lives in a root of its own unless ENGINE_ROOT names one
root=${ENGINE_ROOT:-/var/lib/build-graph/engine${ENGINE_SUITE:+-$ENGINE_SUITE}}
instance=${ENGINE_INSTANCE:-main}
state=$root/state
sock=$root/run/$instance.sock
pidfile=/run/$instance-dockerd.pid  # as the chroot sees it
data=/var/lib/docker-$instance
execroot=/run/docker-$instance
conf=/etc/docker/$instance.json
mirror=${ENGINE_MIRROR:-http://deb.debian.org/debian}
suite=${ENGINE_SUITE:-}
packages="docker.io docker-cli docker-buildx containerd runc iptables ca-certificates tini"
# bookworm's docker.io carries its own CLI and has no buildx package
[ "$suite" = bookworm ] && packages="docker.io containerd runc iptables ca-certificates tini"
plugin_dir=/usr/local/lib/docker/cli-plugins

log() { echo "engine: $*" >&2; }

apt_host() {
  command -v "$1" >/dev/null && return 0
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$1" >/dev/null
}

in_chroot() {  # in_chroot COMMAND: run in the chroot, in a private mount namespace
  unshare -m --propagation private sh -c "mount --bind '$root' '$root' && mount -t proc proc '$root/proc' &&
    mount --rbind /sys '$root/sys' && mount --rbind /dev '$root/dev' &&
    chroot '$root' sh -c \"\$0\"" "$1"
}

bootstrap() {  # bootstrap SUITE: a minimal Debian of that suite with the engine's packages
  local suite=$1 tmp=$root.tmp
  rm -rf "$tmp"
  log "debootstrap --variant=minbase $suite (about a minute, once per machine)"
  debootstrap --variant=minbase "$suite" "$tmp" "$mirror" >"$root.debootstrap.log" 2>&1 || return 1
  # Nothing starts on install; the mirror's sid Release may carry a Valid-Until in this
  # machine's past ("expired (invalid since ...)"), which is no reason to refuse it here.
  printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"; chmod +x "$tmp/usr/sbin/policy-rc.d"
  echo 'Acquire::Check-Valid-Until "false";' >"$tmp/etc/apt/apt.conf.d/99no-valid-until"
  cp /etc/resolv.conf "$tmp/etc/resolv.conf"
  local saved=$root; root=$tmp
  in_chroot "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $packages" \
    >>"$saved.debootstrap.log" 2>&1 || { root=$saved; return 1; }
  root=$saved
  echo "$suite" >"$tmp/.build-graph-engine"   # written last: a half-made chroot is never used
  mv "$tmp" "$root"
}

setup() {
  if [ -f "$root/.build-graph-engine" ]; then
    local have; have=$(cat "$root/.build-graph-engine")
    # never an engine of another suite than asked for (the default root's is sid or trixie)
    if [ -n "$suite" ] && [ "$have" != "$suite" ]; then
      log "$root holds a $have engine, not $suite; set ENGINE_ROOT to another folder"; return 1
    fi
    return 0
  fi
  [ "$(id -u)" = 0 ] || { log "setting up an engine needs root (or start your own Docker and set DOCKER_HOST)"; return 1; }
  if [ -e "$root" ]; then  # never ours to replace: an ENGINE_ROOT that names something else
    log "$root exists but is no engine of build-graph's (no .build-graph-engine in it); remove it or set ENGINE_ROOT"
    return 1
  fi
  apt_host debootstrap
  mkdir -p "$(dirname "$root")"
  if [ -n "$suite" ]; then bootstrap "$suite"; return; fi
  bootstrap sid || { log "sid could not be installed (see $root.debootstrap.log); trying trixie"; bootstrap trixie; }
}

is_process() {  # is_process PIDFILE NAME: the file names a live process called NAME (a pid
               # file outlives a reboot; its number may belong to another process by now)
  local pid; pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}

running() { is_process "$root$pidfile" dockerd && [ -S "$sock" ] && cli info >/dev/null 2>&1; }

cli() { DOCKER_HOST="unix://$sock" "$root/usr/bin/docker" "$@"; }

current_store() {
  if grep -q '"containerd-snapshotter": *true' "$root$conf" 2>/dev/null; then echo containerd; else echo classic; fi
}

stop_dockerd() {  # by its PID only; its supervised containerd exits with it
  [ -f "$root$pidfile" ] || return 0
  is_process "$root$pidfile" dockerd || { rm -f "$root$pidfile"; return 0; }
  local pid; pid=$(cat "$root$pidfile")
  log "stopping dockerd $instance (pid $pid)"
  kill "$pid"
  local deadline=$((SECONDS + 60))
  while kill -0 "$pid" 2>/dev/null; do
    [ $SECONDS -ge $deadline ] && { log "dockerd $pid still running after 60 s"; return 1; }
    sleep 0.5
  done
  if is_process "$root$execroot/containerd/containerd.pid" containerd; then
    kill "$(cat "$root$execroot/containerd/containerd.pid")"; sleep 1
  fi
  rm -f "$root$pidfile"
}

binds() {  # the host folders bind-mounted at the same paths inside the engine's root: the
           # usual homes of checkouts and temporary files, and this checkout if elsewhere
  local dir usual="/tmp /var/tmp /work /home /root /srv /opt"
  for dir in $usual; do [ -d "$dir" ] && echo "$dir"; done
  for dir in $usual; do case $here/ in "$dir"/*) return 0 ;; esac; done
  [ "${here#"$root"}" = "$here" ] && echo "$here"
}

up() {  # up [containerd|classic]
  local store=${1:-containerd} min_api=${ENGINE_MIN_API:-} tcp=${ENGINE_TCP:-} cas=${ENGINE_CA_DIR:-}
  # A restart when any of these changed; the bound folders too: a clone elsewhere (CI's) must
  # be visible to the daemon at its own path, or its bind mounts would name nothing.
  local cache_max=${ENGINE_CACHE_MAX:-16GB}
  local wanted="$min_api|$tcp|$cas|$cache_max|$(binds | tr '\n' ,)"
  case $store in containerd|classic) ;; *) log "store: containerd or classic, not '$store'"; return 2 ;; esac
  # One `up` at a time on this machine: two runners must not both install or start.
  mkdir -p "$(dirname "$root")"
  exec 9>"$root.lock"
  flock 9
  setup
  mkdir -p "$state" "$plugin_dir"
  # The buildx plugin where every docker CLI on this host looks for plugins.
  [ -e "$plugin_dir/docker-buildx" ] || [ ! -e "$root/usr/libexec/docker/cli-plugins/docker-buildx" ] || ln -sfn "$root/usr/libexec/docker/cli-plugins/docker-buildx" "$plugin_dir/docker-buildx"
  # The engine's own CLI for the host, alone in a folder (the chroot's /usr/bin would shadow
  # the host's python3 and the rest on PATH).
  mkdir -p "$root/host-bin"; ln -sfn "$root/usr/bin/docker" "$root/host-bin/docker"
  if running && [ "$(current_store)" = "$store" ] && [ "$(cat "$state/$instance.options" 2>/dev/null)" = "$wanted" ]; then
    describe; return 0
  fi
  stop_dockerd
  mkdir -p "$root/etc/docker" "$root/run"
  local snapshotter=false; [ "$store" = containerd ] && snapshotter=true
  # BuildKit's garbage collector keeps the build cache under $cache_max (least recently used
  # first; records in use are never taken): a machine that builds many stacks (CI runs
  # dozens of quickstarts and the CUDA example) otherwise fills its disk with cache that
  # nothing will read again. Keys as moby 28 reads them (daemon/config/builder.go).
  printf '{"features": {"containerd-snapshotter": %s}, "builder": {"gc": {"enabled": true, "defaultMaxUsedSpace": "%s"}}}\n' \
    "$snapshotter" "$cache_max" >"$root$conf"
  echo "$wanted" >"$state/$instance.options"
  rm -f "$sock"
  local mounts="mount --bind '$root' '$root' && mount -t proc proc '$root/proc' && mount --rbind /sys '$root/sys' && mount --rbind /dev '$root/dev'"
  local dir
  for dir in $(binds); do mkdir -p "$root$dir"; mounts="$mounts && mount --rbind '$dir' '$root$dir'"; done
  # The host's CA bundle, name resolution and hosts file, as they are now (not as copied
  # when the engine was installed): registries and mirrors resolve and verify as on the host.
  local file
  for file in /etc/ssl/certs/ca-certificates.crt /etc/resolv.conf /etc/hosts; do
    [ -f "$file" ] && { touch "$root$file"; mounts="$mounts && mount --bind '$file' '$root$file'"; }
  done
  log "starting dockerd $instance ($store image store${min_api:+, API floor $min_api}) on unix://$sock"
  # The chroot is bind-mounted onto itself first: containerd looks its data root up in
  # /proc/self/mountinfo ("Can't find mount point of /var/lib/docker" otherwise).
  # pivot_root, not chroot: the daemon's / is its mount namespace's root, as on a machine of
  # its own. Under a chroot, runc's `exec` into a container did not see the container's bind
  # mounts ("chdir to cwd (/src) ... no such file or directory"); the host's root is then
  # unmounted from the namespace, so nothing outside the list above is reachable.
  mkdir -p "$root/.host"
  setsid unshare -m --propagation private sh -c "$mounts && cd '$root' && pivot_root . .host &&
    umount -l /.host && exec env ${min_api:+DOCKER_MIN_API_VERSION=$min_api} ${cas:+SSL_CERT_DIR=$cas} /usr/sbin/dockerd -H unix:///run/$instance.sock ${tcp:+-H tcp://127.0.0.1:$tcp --tls=false} \
      --config-file $conf --data-root $data --exec-root $execroot --pidfile $pidfile \
      --bridge=none --iptables=false --ip6tables=false --ip-masq=false --cgroup-parent=/build-graph-$instance" \
    >>"$state/dockerd-$instance.log" 2>&1 </dev/null 9>&- &  # the daemon never holds the lock
  local launched=$! deadline=$((SECONDS + 90))
  until cli info >/dev/null 2>&1; do
    if ! kill -0 "$launched" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      log "dockerd $instance did not come up; the end of $state/dockerd-$instance.log:"
      tail -n 15 "$state/dockerd-$instance.log" >&2
      kill "$launched" 2>/dev/null || true
      return 1
    fi
    sleep 0.5
  done
  describe
}

describe() {  # one line: which engine, which store, which API floor
  log "$(cli version --format 'Docker Engine {{.Server.Version}} (API {{.Server.APIVersion}}, floor {{.Server.MinAPIVersion}})' 2>/dev/null)," \
      "$(current_store) image store, buildx $(cli buildx version 2>/dev/null | awk '{print $2}'), unix://$sock"
}

env_for() {
  echo "export DOCKER_HOST=unix://$sock"
  echo "export PATH=$root/host-bin:\$PATH"
}

status() {
  if running; then describe; else echo "engine $instance: down"; fi
}

remove_cgroups() {  # the empty cgroups runc and BuildKit left under the cgroup parent
  find /sys/fs/cgroup -depth -type d -path "*build-graph-$instance*" -exec rmdir {} \; 2>/dev/null || true
}

case "${1:-status}" in
  up) up "${2:-containerd}" ;;
  env) env_for ;;
  status) status ;;
  down) stop_dockerd; remove_cgroups ;;
  purge) stop_dockerd; remove_cgroups; rm -rf "${root:?}$data" "${root:?}$execroot" "$state/$instance".* "$state/dockerd-$instance.log" ;;
  *) echo "usage: $0 up [containerd|classic]|env|status|down|purge" >&2; exit 2 ;;
esac
