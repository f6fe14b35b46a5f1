#!/bin/sh
# Bundles image/smoke-agent.ts (the stand-in agent) into $1 (default /tmp/machined-smoke/machined.mjs).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-/tmp/machined-smoke/machined.mjs}
mkdir -p "$(dirname "$out")"
"$TOP/node_modules/.bin/esbuild" "$TOP/image/smoke-agent.ts" --bundle --platform=node --format=esm \
  --target=node20 --external:koffi --log-level=warning --outfile="$out"
echo "$out"
