#!/usr/bin/env bash
# The browser the tests render Mermaid diagrams in (tests/browser.py), idempotently:
#   - Debian's chromium (/usr/bin/chromium), installed with apt only when it does not run;
#     `apt-get update` only when apt has no candidate for it or the install fails on old lists
#   - Mermaid's browser bundle at ${SERVICES_DIR:-.services}/tools/mermaid/mermaid.min.js (and its
#     LICENSE): `npm pack mermaid@$mermaid_version` into a temporary folder, with a cache of its
#     own (nothing from ~/.npm or ~/.npmrc's cache), the tarball checked against the integrity
#     pinned below before anything is taken out of it, the bundle against its pinned sha256
# Prints nothing when both are there already; one `browser: ...` line on stderr when it
# installed something; exits 1 with the reason when it cannot. apt's output goes to
# ${SERVICES_DIR:-.services}/browser-apt.log, npm's to ${SERVICES_DIR:-.services}/browser-npm.log.
# Usage: scripts/browser.sh
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
state=${SERVICES_DIR:-$here/.services}
chromium=/usr/bin/chromium
mermaid_version=11.17.2
# `npm view mermaid@11.17.2 dist.integrity` (the registry's SHA-512 of the tarball), checked
# against `openssl dgst -sha512 -binary mermaid-11.17.2.tgz | base64` of a downloaded copy.
mermaid_integrity=sha512-V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg==
# sha256sum of package/dist/mermaid.min.js in that tarball.
mermaid_sha256=581ed7d74bd9048d0e3a91363927d72ef22942d7722546b27f7cc29e35390eb8
dest="$state/tools/mermaid"
installed=()

fail() { echo "browser: $*" >&2; exit 1; }

chromium_up() {
  "$chromium" --version >/dev/null 2>&1 && return 0
  [ "$(id -u)" -eq 0 ] || fail "$chromium does not run and installing it needs root:" \
    "apt-get install --no-install-recommends chromium"
  mkdir -p "$state"
  local log="$state/browser-apt.log" install=(apt-get install -y -q --no-install-recommends
    -o DPkg::Lock::Timeout=300 chromium)
  : >"$log"
  # Update the lists first only when apt knows no chromium to install; again when the
  # install fails (lists old enough that their .debs are gone from the mirror).
  # (grep reads it all: -q would stop early and fail apt-cache's write under pipefail)
  if ! apt-cache policy chromium 2>/dev/null | grep 'Candidate: [0-9]' >/dev/null; then
    apt-get update -q >>"$log" 2>&1 || fail "apt-get update failed; see $log"
  fi
  if ! DEBIAN_FRONTEND=noninteractive "${install[@]}" >>"$log" 2>&1; then
    apt-get update -q >>"$log" 2>&1 || fail "apt-get update failed; see $log"
    DEBIAN_FRONTEND=noninteractive "${install[@]}" >>"$log" 2>&1 ||
      fail "could not install chromium; see $log"
  fi
  "$chromium" --version >/dev/null 2>&1 || fail "chromium was installed but does not run; see $log"
  installed+=("$("$chromium" --version 2>/dev/null)")
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

mermaid_up() {
  [ -f "$dest/mermaid.min.js" ] && [ -f "$dest/LICENSE" ] &&
    [ "$(sha256_of "$dest/mermaid.min.js")" = "$mermaid_sha256" ] && return 0
  command -v npm >/dev/null 2>&1 || fail "npm is needed to fetch mermaid@$mermaid_version" \
    "(Debian: apt-get install npm)"
  mkdir -p "$state/tools"
  local tmp log="$state/browser-npm.log"
  # Beside the destination, so the bundle moves into place with a rename (two runs at once
  # each write their own whole copy; neither leaves a half-written file behind).
  tmp=$(mktemp -d "$state/tools/.mermaid.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack "mermaid@$mermaid_version" --cache "$tmp/npm-cache" \
      --no-update-notifier --no-fund --no-audit --loglevel=warn) >"$log" 2>&1 ||
    fail "npm pack mermaid@$mermaid_version failed; see $log"
  local tgz="$tmp/mermaid-$mermaid_version.tgz" got
  [ -f "$tgz" ] || fail "npm pack did not write $tgz; see $log"
  got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  [ "$got" = "$mermaid_integrity" ] ||
    fail "REFUSED mermaid-$mermaid_version.tgz: its integrity is $got, the pinned one is" \
      "$mermaid_integrity (a changed or corrupted package); nothing was extracted"
  mkdir -p "$tmp/x"
  tar -xzf "$tgz" -C "$tmp/x" --no-same-owner package/dist/mermaid.min.js package/LICENSE
  [ "$(sha256_of "$tmp/x/package/dist/mermaid.min.js")" = "$mermaid_sha256" ] ||
    fail "REFUSED mermaid.min.js from mermaid-$mermaid_version.tgz: its sha256 is not the" \
      "pinned $mermaid_sha256"
  mkdir -p "$dest"
  chmod 644 "$tmp/x/package/dist/mermaid.min.js" "$tmp/x/package/LICENSE"
  mv -f "$tmp/x/package/LICENSE" "$dest/LICENSE"
  mv -f "$tmp/x/package/dist/mermaid.min.js" "$dest/mermaid.min.js"
  rm -rf "$tmp"
  trap - EXIT
  installed+=("mermaid $mermaid_version at $dest/mermaid.min.js")
}

# One at a time: the test workers each ask (pytest-xdist), and two apt or npm runs at once
# would fight over dpkg's lock; the second waits here and then finds everything in place.
mkdir -p "$state"
exec 9>"$state/browser.lock"
flock 9
chromium_up
mermaid_up
if [ ${#installed[@]} -gt 0 ]; then
  summary=$(printf '%s; ' "${installed[@]}")
  echo "browser: installed ${summary%; }" >&2
fi
