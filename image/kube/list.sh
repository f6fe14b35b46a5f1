#!/usr/bin/env bash
# The component images of the pinned set that `make kube-images` has built for ARCH, one per line:
#   <OCI layout dir> <ref in the layout> <upstream image reference>
# (read by image/kube/push.sh and test/kube-images). What is not built yet is named on stderr.
#   --sizes   a table for people instead: reference, manifest digest, compressed size
#   --check   exit 1 when something is missing
. "$(dirname "$0")/lib.sh"
mode=${1:-}
missing=0
lines=()
while read -r d; do
  if [ -f "$d/.key" ] && [ -f "$d/refs" ]; then
    while read -r ref up; do lines+=("$d/layout $ref $up"); done < "$d/refs"
  else
    echo "kube-images: not built: $d (make kube-images ARCH=$ARCH)" >&2; missing=1
  fi
done < <(oci_dirs)
[ -f "$CNI_TAR" ] || { echo "kube-images: not built: $CNI_TAR" >&2; missing=1; }
if [ "$mode" = --sizes ]; then
  [ ${#lines[@]} -eq 0 ] || printf '%s\n' "${lines[@]}" | node -e '
    const fs = require("fs"), path = require("path");
    const rows = fs.readFileSync(0, "utf8").trim().split("\n").map((l) => l.split(" "));
    const blob = (l, d) => path.join(l, "blobs", ...d.split(":"));
    for (const [layout, ref, up] of rows) {
      const idx = JSON.parse(fs.readFileSync(path.join(layout, "index.json")));
      const m = idx.manifests.find((x) => x.annotations?.["org.opencontainers.image.ref.name"] === ref);
      const man = JSON.parse(fs.readFileSync(blob(layout, m.digest)));
      const size = man.layers.reduce((s, x) => s + x.size, man.config.size);
      console.log(`  ${up.padEnd(52)} ${m.digest.slice(7, 19)}  ${(size / 1048576).toFixed(1).padStart(6)} MiB (${man.layers.length} layers)`);
    }'
  [ ! -f "$CNI_TAR" ] || printf '  %-52s %s\n' "CNI plugins for /opt/cni/bin: $CNI_TAR" "$(tar -tf "$CNI_TAR" | grep -v '/$' | sed 's|^\./||' | tr '\n' ' ')"
else
  [ ${#lines[@]} -eq 0 ] || printf '%s\n' "${lines[@]}"
fi
[ "$mode" != --check ] || exit $missing
