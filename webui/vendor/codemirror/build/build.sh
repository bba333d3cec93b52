#!/bin/sh
# Rebuild ../codemirror.js from the exact versions in package.json (see ../../VERSIONS.md).
# Needs node and npm; run from this folder. Nothing here is loaded by the page.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp "$here/package.json" "$here/entry.js" "$scratch/"
cd "$scratch"
cp "$here/package-lock.json" . && npm ci --no-audit --no-fund
npx esbuild entry.js --bundle --format=esm --minify --legal-comments=none --target=es2020 \
  --outfile="$here/../codemirror.js"
