#!/usr/bin/env bash
# Copies the upstream Talos test documents the tests compare against (configs, secrets bundles, patch cases) from a
# Talos source tree into the fixtures folder, outside this repository: ../shared/fixtures/talos by default, or
# $TALOS_FIXTURES. They are upstream's test data (MPL-2.0), so they are not kept here.
#
#   git clone https://github.com/siderolabs/talos /tmp/talos   # the tests were written against ad8823176e75 (v1.14 beta)
#   scripts/get-fixtures.sh /tmp/talos
#
# With --check, only reports whether the folder is complete (exit 1 if not); .ci/run uses that.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${TALOS_FIXTURES:-$(cd .. && pwd)/shared/fixtures/talos}"
m=pkg/machinery/config
# destination (inside the fixtures folder) <- source (inside the Talos tree)
map=(
  "configs/controlplane.yaml         $m/configloader/internal/decoder/testdata/controlplane.yaml"
  "configs/worker.yaml               $m/configloader/internal/decoder/testdata/worker.yaml"
  "configs/secrets.yaml              $m/generate/secrets/testdata/secrets.yaml"
  "configs/invalid-secrets.yaml      $m/generate/secrets/testdata/invalid-secrets.yaml"
)
for n in controlplane worker empty1 empty2 multidoc1 multidoc2 multidoc3; do
  map+=("configs/loader-$n.yaml $m/configloader/testdata/$n.test")
done
for n in config expected expected_manifests jsonpatch1 jsonpatch2 strategic1 strategic2 strategic3 strategic4; do
  map+=("patches/apply/$n.yaml $m/configpatcher/testdata/apply/$n.yaml")
done

if [ "${1:-}" = "--check" ]; then
  missing=0
  for entry in "${map[@]}"; do
    read -r to _ <<<"$entry"
    [ -f "$dest/$to" ] || { missing=$((missing + 1)); }
  done
  if [ "$missing" -gt 0 ]; then
    echo "upstream Talos test fixtures missing at $dest ($missing files): run scripts/get-fixtures.sh <talos source tree> (or set TALOS_FIXTURES)" >&2
    exit 1
  fi
  echo "fixtures: all present in $dest"
  exit 0
fi

src="${1:?usage: scripts/get-fixtures.sh <talos source tree> | --check}"
[ -d "$src/$m" ] || { echo "$src does not look like a Talos source tree (no $m)" >&2; exit 1; }
for entry in "${map[@]}"; do
  read -r to from <<<"$entry"
  mkdir -p "$(dirname "$dest/$to")"
  cp "$src/$from" "$dest/$to"
done
echo "copied ${#map[@]} files from $src into $dest"
