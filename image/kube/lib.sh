# Sourced by image/kube/*.sh: the pinned versions, the cache layout, the Go environment and the
# build-once helper. Usage: . image/kube/lib.sh   (ARCH from the environment; amd64 or arm64)
set -euo pipefail
KUBE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$KUBE_DIR/../.." && pwd)
. "$KUBE_DIR/versions.env"
ARCH=${ARCH:-amd64}
case "$ARCH" in
  amd64) TRIPLET=x86_64-linux-gnu ;;
  arm64) TRIPLET=aarch64-linux-gnu ;;
  *) echo "ARCH must be amd64 or arm64, not '$ARCH'" >&2; exit 2 ;;
esac
# Outside the clone, so that every clone (and CI's fresh one) on this machine reuses one build.
CACHE=${MACHINED_CACHE:-/var/cache/machined}
KCACHE=$CACHE/kube-images
export GOMODCACHE=$CACHE/go/mod GOCACHE=$CACHE/go/build GOPATH=$CACHE/go/path
export GOFLAGS=-buildvcs=false GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOARCH=$ARCH
mkdir -p "$KCACHE" "$GOMODCACHE" "$GOCACHE"

log() { printf '[kube-images %s] %s\n' "$ARCH" "$*" >&2; }
die() { printf '[kube-images %s] error: %s\n' "$ARCH" "$*" >&2; exit 1; }

# The key of an artifact: a digest over everything its recipe reads (the builder function's own
# text, its version arguments, the listed files, keys of artifacts it is built from, the Go version). A changed
# recipe gives a new key, so a stale artifact is rebuilt instead of reused.
GO_VERSION=
recipe_key() { # recipe_key FN WORD... -- FILE...
  local fn=$1; shift
  [ -n "$GO_VERSION" ] || GO_VERSION=$(go env GOVERSION)
  { declare -f "$fn"; printf '%s\n' "$ARCH" "$GO_VERSION"; while [ $# -gt 0 ] && [ "$1" != -- ]; do printf '%s\n' "$1"; shift; done
    [ "${1:-}" = -- ] && shift; for f in "$@"; do cat "$f"; done; } | sha256sum | cut -c1-16
}

# artifact DIR LABEL KEY FN [ARGS...]: reuse DIR when its .key file says KEY; otherwise run FN OUT ARGS...
# with a fresh OUT next to DIR and rename OUT to DIR only once FN succeeded. A failed or interrupted
# build leaves at most a DIR.tmp.* folder, which the next run deletes and never takes for a result.
BUILT=() REUSED=() CURRENT_TMP= CURRENT_LABEL=
artifact() {
  local dir=$1 label=$2 key=$3 fn=$4; shift 4
  if [ -f "$dir/.key" ] && [ "$(cat "$dir/.key")" = "$key" ]; then
    REUSED+=("$label"); log "reused $label ($dir)"; return 0
  fi
  rm -rf "$dir".tmp.*
  local t0=$SECONDS
  CURRENT_TMP=$dir.tmp.$$ CURRENT_LABEL=$label
  mkdir -p "$CURRENT_TMP"
  log "building $label ..."
  # Not called in a condition: with set -e any failing command inside FN ends the script (the EXIT
  # trap then removes the partial output).
  "$fn" "$CURRENT_TMP" "$@"
  echo "$key" > "$CURRENT_TMP/.key"
  rm -rf "$dir.old"; [ ! -e "$dir" ] || mv "$dir" "$dir.old"
  mv "$CURRENT_TMP" "$dir"; rm -rf "$dir.old"
  CURRENT_TMP=
  BUILT+=("$label ($((SECONDS - t0)) s)"); log "built $label in $((SECONDS - t0)) s"
}
on_exit() {
  local rc=$?
  if [ -n "$CURRENT_TMP" ]; then
    rm -rf "$CURRENT_TMP"
    log "FAILED building $CURRENT_LABEL (exit $rc); its partial output was removed"
  fi
}
trap on_exit EXIT

# One build at a time per cache (two cold Go builds at once only double the contention).
lock_cache() {
  exec 9>"$KCACHE/.lock"
  flock -n 9 || { log "another make kube-images holds $KCACHE/.lock; waiting"; flock 9; }
}

# Where each artifact of the pinned set lives (ARCH-specific). The OCI ones hold layout/ (an OCI image
# layout) and refs (lines "<ref in layout> <upstream image reference>").
kube_bin_dir() { echo "$KCACHE/kube/$1-$ARCH/bin"; }
kube_oci_dir() { echo "$KCACHE/kube/$1-$ARCH/oci"; }
ETCD_DIR=$KCACHE/etcd/$ETCD_VERSION-$ARCH
COREDNS_DIR=$KCACHE/coredns/$COREDNS_VERSION-$ARCH
FLANNEL_DIR=$KCACHE/flannel/$FLANNEL_VERSION-$ARCH
CNI_DIR=$KCACHE/cni/$CNI_PLUGINS_VERSION-flannel-$FLANNEL_CNI_VERSION-$ARCH
PAUSE_DIR=$KCACHE/pause/$PAUSE_VERSION-$ARCH
BUSYBOX_DIR=$KCACHE/busybox/debian-$ARCH
USERLAND_DIR=$KCACHE/userland/debian-$ARCH
DEBS_DIR=$KCACHE/debs/$ARCH
# The CNI plugin archive for the node's /opt/cni/bin.
CNI_TAR=$CNI_DIR/cni-plugins.tar
oci_dirs() {
  local v
  for v in $KUBE_VERSIONS; do kube_oci_dir "$v"; done
  printf '%s\n' "$ETCD_DIR/oci" "$COREDNS_DIR/oci" "$FLANNEL_DIR/oci" "$PAUSE_DIR/oci" "$BUSYBOX_DIR/oci"
}
