#!/usr/bin/env bash
# `make kube-images [ARCH=amd64]`: builds, or reuses from the cache outside the clone, the Kubernetes
# component images at the versions of image/kube/versions.env (docs/kubernetes-images.md):
# binaries from the Go module proxy, OCI image layouts with umoci, the CNI plugin tar.
# KUBE_IMAGES_ONLY="kube etcd ..." limits the run to some components (for development).
. "$(dirname "$0")/lib.sh"
. "$KUBE_DIR/binaries.sh"
. "$KUBE_DIR/images.sh"
for t in go umoci readelf dpkg-deb apt-get flock; do command -v $t >/dev/null || die "$t is missing (see docs/kubernetes-images.md)"; done
lock_cache
T0=$SECONDS
only() { [ -z "${KUBE_IMAGES_ONLY:-}" ] || [[ " $KUBE_IMAGES_ONLY " == *" $1 "* ]]; }
key_of() { cat "$1/.key"; }

# Debian userland (busybox, netfilter tools): the .deb files are the inputs, so their names key the trees.
fetch_debs "$DEBS_DIR"
artifact "$USERLAND_DIR" "userland (Debian busybox, nftables, iptables, conntrack)" \
  "$(recipe_key build_userland "$(ls "$DEBS_DIR")" -- "$KUBE_DIR/images.sh")" build_userland "$DEBS_DIR"
UL_KEY=$(key_of "$USERLAND_DIR")

if only pause; then
  artifact "$PAUSE_DIR/bin" "pause $PAUSE_VERSION binary" "$(recipe_key build_pause "$PAUSE_VERSION" -- "$KUBE_DIR/pause.c")" build_pause
  artifact "$PAUSE_DIR/oci" "pause image ($PAUSE_TAGS)" "$(recipe_key image_pause "$(key_of "$PAUSE_DIR/bin")" "$PAUSE_TAGS" -- "$KUBE_DIR/images.sh")" \
    image_pause "$PAUSE_DIR/bin"
fi
if only busybox; then
  artifact "$BUSYBOX_DIR/oci" "busybox image ($BUSYBOX_TAGS)" "$(recipe_key image_busybox "$UL_KEY" "$BUSYBOX_TAGS" -- "$KUBE_DIR/images.sh")" \
    image_busybox "$USERLAND_DIR"
fi
for v in $KUBE_VERSIONS; do
  if only kube; then
    artifact "$(kube_bin_dir "$v")" "kubernetes $v binary" \
      "$(recipe_key build_kube "$v" -- "$KUBE_DIR/go/kube/main.go")" build_kube "$v"
    artifact "$(kube_oci_dir "$v")" "kubernetes $v images" \
      "$(recipe_key image_kube "$v" "$(key_of "$(kube_bin_dir "$v")")" "$UL_KEY" -- "$KUBE_DIR/images.sh")" \
      image_kube "$v" "$(kube_bin_dir "$v")" "$USERLAND_DIR"
  fi
done
if only etcd; then
  artifact "$ETCD_DIR/bin" "etcd $ETCD_VERSION binaries" \
    "$(recipe_key build_etcd "$ETCD_VERSION" -- "$KUBE_DIR/go/etcd/main.go" "$KUBE_DIR/go/etcdctl/main.go")" build_etcd "$ETCD_VERSION"
  artifact "$ETCD_DIR/oci" "etcd $ETCD_VERSION image" "$(recipe_key image_etcd "$ETCD_VERSION" "$(key_of "$ETCD_DIR/bin")" -- "$KUBE_DIR/images.sh")" \
    image_etcd "$ETCD_VERSION" "$ETCD_DIR/bin"
fi
if only coredns; then
  artifact "$COREDNS_DIR/bin" "coredns $COREDNS_VERSION binary" "$(recipe_key build_coredns "$COREDNS_VERSION" "$(declare -f go_install)")" \
    build_coredns "$COREDNS_VERSION"
  artifact "$COREDNS_DIR/oci" "coredns $COREDNS_VERSION image" \
    "$(recipe_key image_coredns "$COREDNS_VERSION" "$(key_of "$COREDNS_DIR/bin")" -- "$KUBE_DIR/images.sh")" image_coredns "$COREDNS_VERSION" "$COREDNS_DIR/bin"
fi
if only cni || only flannel; then
  artifact "$CNI_DIR" "CNI plugins $CNI_PLUGINS_VERSION ($CNI_PLUGINS) + flannel plugin $FLANNEL_CNI_VERSION" \
    "$(recipe_key build_cni "$CNI_PLUGINS_VERSION" "$FLANNEL_CNI_VERSION" "$CNI_PLUGINS" "$(declare -f go_install)")" \
    build_cni "$CNI_PLUGINS_VERSION" "$FLANNEL_CNI_VERSION" $CNI_PLUGINS
fi
if only flannel; then
  artifact "$FLANNEL_DIR/bin" "flanneld $FLANNEL_VERSION binary" "$(recipe_key build_flannel "$FLANNEL_VERSION")" build_flannel "$FLANNEL_VERSION"
  artifact "$FLANNEL_DIR/oci" "flannel $FLANNEL_VERSION image" \
    "$(recipe_key image_flannel "$FLANNEL_VERSION" "$(key_of "$FLANNEL_DIR/bin")" "$(key_of "$CNI_DIR")" "$UL_KEY" -- "$KUBE_DIR/images.sh")" \
    image_flannel "$FLANNEL_VERSION" "$FLANNEL_DIR/bin" "$CNI_DIR" "$USERLAND_DIR"
fi

log "done in $((SECONDS - T0)) s: built ${#BUILT[@]}, reused ${#REUSED[@]} (cache $KCACHE)"
for b in "${BUILT[@]}"; do log "  built  $b"; done
bash "$KUBE_DIR/list.sh" --sizes >&2
