# Sourced by image/kube/build.sh: builders of the Go binaries (each one writes into the OUT folder it is
# given; lib.sh's `artifact` renames OUT into the cache when the builder returns). All are pure-Go static
# builds (CGO_ENABLED=0) cross-compiled for $ARCH, from modules fetched through the Go module proxy into
# $GOMODCACHE; `nice` keeps the other work on this machine responsive.

GOBUILD=(nice -n 10 go build -trimpath)

# Kubernetes: a wrapper module that requires k8s.io/kubernetes and replaces every staging module
# (k8s.io/api, k8s.io/client-go, ...: go.mod says "=> ./staging/src/k8s.io/X") with the published
# k8s.io/X v0.<minor>.<patch>, then builds image/kube/go/kube/main.go, the multi-call binary.
build_kube() { # OUT VERSION
  local out=$1 v=$2 src=$1/src minor patch
  minor=$(echo "$v" | cut -d. -f2) patch=$(echo "$v" | cut -d. -f3)
  mkdir -p "$src"
  cp "$KUBE_DIR/go/kube/main.go" "$src/main.go"
  go mod download k8s.io/kubernetes@"$v"
  local kmod; kmod=$(go mod download -json k8s.io/kubernetes@"$v" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  [ -s "$kmod" ] || die "no go.mod for k8s.io/kubernetes@$v in $GOMODCACHE"
  {
    echo "module machined.local/kube"
    echo
    sed -n 's/^go \(.*\)/go \1/p; s/^godebug \(.*\)/godebug \1/p' "$kmod"
    echo
    echo "require k8s.io/kubernetes $v"
    echo
    echo "replace ("
    sed -n "s|^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*$|\t\1 => \1 v0.$minor.$patch|p" "$kmod"
    echo ")"
  } > "$src/go.mod"
  [ "$(grep -c ' => ' "$src/go.mod")" -gt 20 ] || die "found too few staging replace lines in $kmod"
  (cd "$src" && go mod tidy)
  local vp=k8s.io/component-base/version cp=k8s.io/client-go/pkg/version
  local ld="-s -w"
  for p in $vp $cp; do
    ld="$ld -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    ld="$ld -X $p.gitCommit=0000000000000000000000000000000000000000 -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  mkdir -p "$out/bin"
  (cd "$src" && "${GOBUILD[@]}" -ldflags="$ld" -o "$out/bin/kube" .)
}

# etcd: go.etcd.io/etcd/server/v3 has replace directives (=> ../api ...), so `go install ...@v` refuses it;
# a wrapper requires the five etcd modules at one version and calls etcdmain.Main. etcdctl the same way.
build_etcd() { # OUT VERSION
  local out=$1 v=$2 src=$1/src
  mkdir -p "$src/etcd" "$src/etcdctl" "$out/bin"
  cp "$KUBE_DIR/go/etcd/main.go" "$src/etcd/main.go"
  cp "$KUBE_DIR/go/etcdctl/main.go" "$src/etcdctl/main.go"
  {
    echo "module machined.local/etcd"
    echo
    echo "go 1.26.0"
    echo
    echo "require ("
    for m in server api client/pkg client pkg etcdctl; do echo "	go.etcd.io/etcd/$m/v3 $v"; done
    echo ")"
  } > "$src/go.mod"
  (cd "$src" && go mod tidy)
  local ld="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=${v#v}"
  (cd "$src" && "${GOBUILD[@]}" -ldflags="$ld" -o "$out/bin/" ./etcd ./etcdctl)
}

# A module without replace directives builds straight from the proxy with `go install pkg@version`;
# GOBIN cannot be set when cross-compiling, so GOPATH/bin[/linux_ARCH] in a fresh GOPATH is collected.
go_install() { # OUT LDFLAGS PKG@VERSION...
  local out=$1 ld=$2; shift 2
  mkdir -p "$out/gopath" "$out/bin"
  GOPATH=$out/gopath nice -n 10 go install -trimpath -ldflags="$ld" "$@"
  local d=$out/gopath/bin; [ -d "$d/linux_$ARCH" ] && d=$d/linux_$ARCH
  mv "$d"/* "$out/bin/"
  chmod -R u+w "$out/gopath"; rm -rf "$out/gopath"
}

build_coredns() { # OUT VERSION
  go_install "$1" "-s -w" github.com/coredns/coredns@"$2"
}

# flanneld: flannel's go.sum pins a tencentcloud SDK version the proxy refuses (403), and its udp backend
# needs cgo. The wrapper builds flannel's own main.go, taken from the module cache, without the import
# lines of those two backends (vxlan, host-gw, wireguard, ipip, ipsec and extension stay). The flannel
# version is set in go.mod, so the sed of main.go is checked to have dropped exactly those two lines.
build_flannel() { # OUT VERSION
  local out=$1 v=$2 src=$1/src dir
  mkdir -p "$src" "$out/bin"
  dir=$(go mod download -json github.com/flannel-io/flannel@"$v" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [ -f "$dir/main.go" ] || die "no main.go in github.com/flannel-io/flannel@$v ($dir)"
  grep -v -e '"github.com/flannel-io/flannel/pkg/backend/tencentvpc"' -e '"github.com/flannel-io/flannel/pkg/backend/udp"' \
    "$dir/main.go" > "$src/main.go"
  [ "$(diff "$dir/main.go" "$src/main.go" | grep -c '^<')" = 2 ] || die "flannel $v main.go: expected to drop 2 backend imports"
  printf 'module machined.local/flannel\n\ngo 1.26.0\n\nrequire github.com/flannel-io/flannel %s\n' "$v" > "$src/go.mod"
  # -e: tidy also walks the tests of flannel's packages, and one of them imports go.etcd.io/etcd/tests/v3,
  # a version the proxy refuses; the build itself needs none of it (go list -deps checks that).
  (cd "$src" && go mod tidy -e >/dev/null 2>&1 || true)
  (cd "$src" && go list -deps . >/dev/null)
  (cd "$src" && "${GOBUILD[@]}" -ldflags="-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$v" -o "$out/bin/flanneld" .)
}

# CNI plugins for the node's /opt/cni/bin, plus the flannel plugin, packed as one tar (bin/cni-plugins.tar).
build_cni() { # OUT PLUGINS_VERSION FLANNEL_CNI_VERSION PLUGIN...
  local out=$1 v=$2 fv=$3; shift 3
  local pkgs=() p
  for p in "$@"; do
    case $p in loopback|bridge|host-device|ipvlan|macvlan|ptp|vlan|dummy|tap) pkgs+=("github.com/containernetworking/plugins/plugins/main/$p@$v") ;;
      host-local|dhcp|static) pkgs+=("github.com/containernetworking/plugins/plugins/ipam/$p@$v") ;;
      *) pkgs+=("github.com/containernetworking/plugins/plugins/meta/$p@$v") ;;
    esac
  done
  go_install "$out" "-s -w" "${pkgs[@]}"
  go_install "$out" "-s -w" github.com/containernetworking/plugins/plugins/meta/flannel@"$fv"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$out/bin" -cf "$out/cni-plugins.tar" .
}
