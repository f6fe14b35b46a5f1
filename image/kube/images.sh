# Sourced by image/kube/build.sh: the Debian userland that goes into some images, and the OCI image
# layouts (umoci). Every tree is given fixed timestamps and every config a fixed creation time, so
# the same inputs give the same layer and manifest digests (and `make kube-registry` skips a push
# whose digest the registry already has).

EPOCH=1970-01-01T00:00:00Z
IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
HOST_ARCH=$(dpkg --print-architecture)

# Packages in the dependency closure that no image file comes from (maintainer-script tooling).
not_needed() {
  case $1 in debconf|dpkg|perl-base|debianutils|init-system-helpers|lsb-base|sysvinit-utils|libselinux1|libpcre2-8-0) return 0 ;; esac
  return 1
}

# Debian packages for ARCH (and their dependency closure), downloaded once into the cache.
fetch_debs() { # DIR
  local dir=$1 want=() p spec
  mkdir -p "$dir"
  # Done before for the same package list: no apt look-ups (they take seconds on a busy machine).
  [ "$(cat "$dir/.complete" 2>/dev/null)" != "$IMAGE_DEBS" ] || return 0
  if [ "$ARCH" != "$HOST_ARCH" ] && ! dpkg --print-foreign-architectures | grep -qx "$ARCH"; then
    log "enabling dpkg architecture $ARCH"; dpkg --add-architecture "$ARCH"; apt-get update -q >/dev/null
  fi
  apt-cache show "nftables:$ARCH" >/dev/null 2>&1 || { log "apt-get update (no package lists yet)"; apt-get update -q >/dev/null; }
  local names
  names=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
    --no-enhances --no-pre-depends $(for p in $IMAGE_DEBS; do echo "$p:$ARCH"; done) 2>/dev/null | grep -v -e '^ ' -e '^<' | sed 's/:.*//' | sort -u)
  [ -n "$names" ] || die "apt-cache knows none of: $IMAGE_DEBS (run apt-get update)"
  for p in $names; do
    not_needed "$p" && continue
    ls "$dir/${p}_"*.deb >/dev/null 2>&1 && continue
    # Architecture: all packages (netbase) take no :arch.
    if [ "$(apt-cache show --no-all-versions "$p" 2>/dev/null | sed -n 's/^Architecture: //p' | head -1)" = all ]; then want+=("$p"); else want+=("$p:$ARCH"); fi
  done
  if [ ${#want[@]} -gt 0 ]; then
    log "apt-get download ${want[*]}"
    (cd "$dir" && apt-get download -q "${want[@]}" 2>&1 | grep -v -e unsandboxed -e '^Get:' >&2 || true)
  fi
  for p in $names; do
    not_needed "$p" && continue
    ls "$dir/${p}_"*.deb >/dev/null 2>&1 || die "apt-get download $p ($ARCH) failed"
  done
  echo "$IMAGE_DEBS" > "$dir/.complete"
}

# copy_elf SYSROOT DEST FILE...: copies each FILE (a path inside SYSROOT) and, recursively, the shared
# libraries it names (ELF NEEDED) and its program interpreter, to the same paths under DEST. readelf reads
# any architecture, so this works for a cross ARCH too.
copy_elf() {
  local sys=$1 dest=$2; shift 2
  local queue=("$@") seen=" " f lib found d interp
  while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}; queue=("${queue[@]:1}")
    case "$seen" in *" $f "*) continue ;; esac
    seen="$seen$f "
    [ -e "$sys$f" ] || die "copy_elf: $f is not in the sysroot"
    mkdir -p "$dest$(dirname "$f")"; cp -L "$sys$f" "$dest$f"
    readelf -h "$sys$f" >/dev/null 2>&1 || continue   # a script or data file
    interp=$(readelf -l "$sys$f" 2>/dev/null | sed -n 's/.*\[Requesting program interpreter: \(.*\)\]/\1/p')
    [ -z "$interp" ] || queue+=("$interp")
    for lib in $(readelf -d "$sys$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      found=
      for d in /lib/$TRIPLET /usr/lib/$TRIPLET /lib /usr/lib; do
        [ -e "$sys$d/$lib" ] && { found=$d/$lib; break; }
      done
      [ -n "$found" ] || die "copy_elf: $f needs $lib, which no downloaded package has"
      queue+=("$found")
    done
  done
}

# The userland trees some images add as layers:
#   busybox/    a static busybox with its applets in /bin, /etc/passwd, /etc/group (the kubelet reads them)
#   netfilter/  nft, iptables/ip6tables (xtables-nft-multi) and conntrack with their libraries
build_userland() { # OUT DEBS_DIR
  local out=$1 debs=$2 sys=$1/sysroot d
  mkdir -p "$sys"
  for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$sys"; done

  local bb=$out/busybox
  mkdir -p "$bb/bin" "$bb/etc" "$bb/tmp" "$bb/root" "$bb/var/run"; chmod 1777 "$bb/tmp"
  cp "$sys/bin/busybox" "$bb/bin/busybox"
  # The applet list, read from a runnable busybox of the same package version.
  local lister=$sys/bin/busybox
  if [ "$ARCH" != "$HOST_ARCH" ]; then
    local bv; bv=$(dpkg-deb -f "$debs"/busybox-static_*.deb Version)
    (cd "$out" && apt-get download -q "busybox-static:$HOST_ARCH=$bv" >/dev/null 2>&1) || die "cannot fetch busybox-static:$HOST_ARCH=$bv to list applets"
    dpkg-deb -x "$out"/busybox-static_*.deb "$out/host-bb"; lister=$out/host-bb/bin/busybox
  fi
  local a
  for a in $("$lister" --list); do
    [ "$a" = busybox ] || ln -s busybox "$bb/bin/$a"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$bb/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$bb/etc/group"
  cp "$sys/etc/protocols" "$sys/etc/services" "$bb/etc/"

  local nf=$out/netfilter xt=/usr/lib/$TRIPLET/xtables
  copy_elf "$sys" "$nf" /usr/sbin/nft /usr/sbin/xtables-nft-multi /usr/sbin/conntrack $(cd "$sys" && ls ."$xt"/*.so | cut -c2-)
  for a in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore \
           iptables-nft iptables-nft-save iptables-nft-restore ip6tables-nft ip6tables-nft-save ip6tables-nft-restore; do
    ln -s xtables-nft-multi "$nf/usr/sbin/$a"
  done
  # Debian ships libraries under /lib/<triplet> and resolves /lib through the usr-merge: keep that true.
  if [ -d "$nf/lib" ]; then mkdir -p "$nf/usr"; cp -a "$nf/lib/." "$nf/usr/lib/"; rm -rf "$nf/lib"; ln -s usr/lib "$nf/lib"; fi
  [ ! -d "$nf/lib64" ] || { mkdir -p "$nf/usr/lib64"; cp -a "$nf/lib64/." "$nf/usr/lib64/"; rm -rf "$nf/lib64"; ln -s usr/lib64 "$nf/lib64"; }
  rm -rf "$sys" "$out/host-bb" "$out"/*.deb
  find "$out" -exec touch -h -d @0 {} +
}

# oci_image LAYOUT REF ENTRYPOINT USER TREE...: a new image REF in LAYOUT with one layer per TREE (in order)
# and the given entrypoint (a comma-free argv, space separated) and user.
oci_image() {
  local layout=$1 ref=$2 entry=$3 user=$4; shift 4
  [ -d "$layout/blobs" ] || umoci init --layout "$layout"
  umoci new --image "$layout:$ref"
  local t
  for t in "$@"; do
    umoci insert --image "$layout:$ref" --history.created "$EPOCH" --history.created_by "make kube-images: $(basename "$t")" "$t" / >/dev/null
  done
  local cfg=(--os linux --architecture "$ARCH" --created "$EPOCH" --history.created "$EPOCH" --config.env "PATH=$IMAGE_PATH" --config.user "$user")
  local e; for e in $entry; do cfg+=(--config.entrypoint "$e"); done
  umoci config --image "$layout:$ref" "${cfg[@]}" >/dev/null
}
# oci_retag LAYOUT FROM TO ENTRYPOINT [CMD]: a copy of FROM (same layers) with another entrypoint.
oci_retag() {
  local layout=$1 from=$2 to=$3 entry=$4 cmd=${5:-}
  local cfg=(--created "$EPOCH" --history.created "$EPOCH" --clear config.entrypoint --tag "$to")
  local e; for e in $entry; do cfg+=(--config.entrypoint "$e"); done
  for e in $cmd; do cfg+=(--config.cmd "$e"); done
  umoci config --image "$layout:$from" "${cfg[@]}" >/dev/null
}
# refs lines: "<ref in the layout> <upstream image reference>" (read by push.sh and the tests).
oci_ref() { echo "$2 $3" >> "$1/refs"; }
oci_done() { umoci gc --layout "$1/layout"; }

# Kubernetes v<ver>: one tree with the multi-call binary and a symlink per component; apiserver, KCM and
# scheduler have only that layer; kube-proxy and the kubelet add the busybox and netfilter layers.
image_kube() { # OUT VERSION BIN_DIR USERLAND_DIR
  local out=$1 v=$2 bin=$3 ul=$4 tree=$1/tree/kube c
  mkdir -p "$tree/usr/local/bin"
  cp "$bin/bin/kube" "$tree/usr/local/bin/kube"
  for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet; do ln -s kube "$tree/usr/local/bin/$c"; done
  find "$out/tree" -exec touch -h -d @0 {} +
  local L=$out/layout
  oci_image "$L" kube-apiserver /usr/local/bin/kube-apiserver 0:0 "$tree"
  oci_retag "$L" kube-apiserver kube-controller-manager /usr/local/bin/kube-controller-manager
  oci_retag "$L" kube-apiserver kube-scheduler /usr/local/bin/kube-scheduler
  oci_image "$L" kube-proxy /usr/local/bin/kube-proxy 0:0 "$tree" "$ul/busybox" "$ul/netfilter"
  oci_retag "$L" kube-proxy kubelet /usr/local/bin/kubelet
  for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy; do oci_ref "$out" "$c" "$KUBE_IMAGE_REGISTRY/$c:$v"; done
  oci_ref "$out" kubelet "$KUBELET_IMAGE:$v"
  rm -rf "$out/tree"; oci_done "$out"
}

image_etcd() { # OUT VERSION BIN_DIR
  local out=$1 v=$2 tree=$1/tree
  mkdir -p "$tree/usr/local/bin" "$tree/var/lib/etcd"
  cp "$3/bin/etcd" "$3/bin/etcdctl" "$tree/usr/local/bin/"
  find "$tree" -exec touch -h -d @0 {} +
  oci_image "$out/layout" etcd /usr/local/bin/etcd 0:0 "$tree"
  oci_ref "$out" etcd "$ETCD_IMAGE:$v"
  rm -rf "$tree"; oci_done "$out"
}

image_coredns() { # OUT VERSION BIN_DIR
  local out=$1 v=$2 tree=$1/tree
  mkdir -p "$tree"
  cp "$3/bin/coredns" "$tree/coredns"
  find "$tree" -exec touch -h -d @0 {} +
  oci_image "$out/layout" coredns /coredns 0:0 "$tree"
  oci_ref "$out" coredns "$COREDNS_IMAGE:$v"
  rm -rf "$tree"; oci_done "$out"
}

# flannel: /opt/bin/flanneld and the CNI plugin at /flannel, with busybox (the init container runs cp) and
# the netfilter tools (--ip-masq rules).
image_flannel() { # OUT VERSION FLANNEL_BIN CNI_BIN USERLAND_DIR
  local out=$1 v=$2 tree=$1/tree ul=$5
  mkdir -p "$tree/opt/bin"
  cp "$3/bin/flanneld" "$tree/opt/bin/flanneld"
  cp "$4/bin/flannel" "$tree/flannel"
  find "$tree" -exec touch -h -d @0 {} +
  oci_image "$out/layout" flannel /opt/bin/flanneld 0:0 "$ul/busybox" "$ul/netfilter" "$tree"
  oci_ref "$out" flannel "$FLANNEL_IMAGE:$v"
  rm -rf "$tree"; oci_done "$out"
}

# pause: image/kube/pause.c, compiled static for ARCH.
build_pause() { # OUT
  local cc=gcc
  [ "$ARCH" = "$HOST_ARCH" ] || cc=$TRIPLET-gcc
  command -v "$cc" >/dev/null || die "$cc is missing (apt-get install gcc-$TRIPLET libc6-dev-$ARCH-cross)"
  mkdir -p "$1/bin"
  "$cc" -Os -static -s -Wall -Werror -DPAUSE_VERSION="\"$PAUSE_VERSION\"" -o "$1/bin/pause" "$KUBE_DIR/pause.c"
}
image_pause() { # OUT BIN_DIR
  local out=$1 tree=$1/tree t
  mkdir -p "$tree"; cp "$2/bin/pause" "$tree/pause"
  find "$tree" -exec touch -h -d @0 {} +
  oci_image "$out/layout" pause /pause 65535:65535 "$tree"
  for t in $PAUSE_TAGS; do oci_ref "$out" pause "$PAUSE_IMAGE:$t"; done
  rm -rf "$tree"; oci_done "$out"
}

# busybox: the test workload image (Debian's busybox-static), `sh` as its command like the library image.
image_busybox() { # OUT USERLAND_DIR
  local out=$1 t
  oci_image "$out/layout" busybox "" 0:0 "$2/busybox"
  umoci config --image "$out/layout:busybox" --created "$EPOCH" --history.created "$EPOCH" --config.cmd sh >/dev/null
  for t in $BUSYBOX_TAGS; do oci_ref "$out" busybox "$BUSYBOX_IMAGE:$t"; done
  oci_done "$out"
}
