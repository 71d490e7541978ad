#!/usr/bin/env bash
# The docs site, built with MkDocs in strict mode: a broken link or anchor, or a page missing
# from the nav, fails the build. It builds from a copy of the checkout (docs/mkdocs.yml says
# why), the files git tracks or would track, so build/ and .venv stay out.
#
#   scripts/docs.sh        build and check, then throw the site away (what CI runs)
#   scripts/docs.sh DIR    keep the site in DIR
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
site=$work/site
if [ $# -gt 0 ]; then site=$(realpath -m "$1"); fi
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' file; do [ -e "$file" ] && printf '%s\0' "$file"; done |
  tar --null -T - -cf - | tar -xf - -C "$work/src"
cp docs/mkdocs.yml "$work/mkdocs.yml"
.venv/bin/mkdocs build --strict --config-file "$work/mkdocs.yml" --site-dir "$site"
echo "docs: every page built, every link and anchor resolves${1:+ (the site: $site)}"
