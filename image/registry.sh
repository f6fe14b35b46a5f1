#!/bin/sh
# `make registry ARCH=...`: a local registry for upgrades in `make qemu` and for the Kubernetes component images
# (the stand-in for ghcr.io and registry.k8s.io, which this machine cannot reach). Starts Debian's docker-registry
# on 127.0.0.1:$REGISTRY_PORT unless something already listens there (state in build/registry), then pushes
# what is built: build/<arch>/installer-<arch>.oci.tar as machined/installer:<version>, and the images of
# `make kube-images` under their upstream paths (image/kube/push.sh; docs/kubernetes-images.md). What is not
# built is named and skipped. A QEMU guest on user networking reaches it as 10.0.2.2:$REGISTRY_PORT; point a
# registry mirror at that (README.md, docs/upgrade.md). `make registry-stop` stops it.
# `registry.sh ARCH kube` (make kube-registry) pushes only the component images.
. "$(dirname "$0")/env.sh"
PORT=${REGISTRY_PORT:-5000}
DIR=$TOP/build/registry
mkdir -p "$DIR"
if [ "${1:-}" = stop ] || [ "${2:-}" = stop ]; then
  [ -f "$DIR/pid" ] && kill "$(cat "$DIR/pid")" 2>/dev/null && log "registry stopped"; rm -f "$DIR/pid"; exit 0
fi
for t in docker-registry skopeo; do command -v $t >/dev/null || { echo "registry: $t is missing (apt-get install $t)" >&2; exit 1; }; done
listening() { node -e 'require("net").connect(+process.argv[1], "127.0.0.1").on("connect", () => process.exit(0)).on("error", () => process.exit(1))' "$PORT"; }
if ! listening; then
  printf 'version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s/data\nhttp:\n  addr: 127.0.0.1:%s\n' "$DIR" "$PORT" > "$DIR/config.yml"
  nohup docker-registry serve "$DIR/config.yml" > "$DIR/registry.log" 2>&1 &
  echo $! > "$DIR/pid"
  i=0; until listening; do i=$((i + 1)); [ $i -lt 50 ] || { cat "$DIR/registry.log" >&2; exit 1; }; sleep 0.1; done
  log "docker-registry listening on 127.0.0.1:$PORT (pid $(cat "$DIR/pid"), log build/registry/registry.log)"
fi
if [ "${2:-}" != kube ]; then
  if [ -f "$OUT/installer-$ARCH.oci.tar" ]; then
    version=$(node -p "require('$OUT/manifest.json').version")
    skopeo copy -q --dest-tls-verify=false "oci-archive:$OUT/installer-$ARCH.oci.tar" "docker://127.0.0.1:$PORT/machined/installer:$version"
    log "pushed machined/installer:$version; from a make qemu guest: 10.0.2.2:$PORT/machined/installer:$version"
  else
    log "not pushing the installer: build/$ARCH/installer-$ARCH.oci.tar is not built (make image ARCH=$ARCH)"
  fi
fi
bash "$TOP/image/kube/push.sh" "127.0.0.1:$PORT"
