#!/usr/bin/env bash
# Pushes the built component images (image/kube/list.sh) to a registry under their upstream repository
# paths without the upstream host: registry.k8s.io/kube-apiserver:v1.37.2 -> ADDR/kube-apiserver:v1.37.2,
# ghcr.io/siderolabs/kubelet:v1.37.2 -> ADDR/siderolabs/kubelet:v1.37.2, docker.io/library/busybox:1.37 ->
# ADDR/library/busybox:1.37. That is the layout a containerd hosts.toml mirror asks for (image/kube/mirrors.sh).
# A tag whose manifest digest the registry already has is skipped. Plain HTTP (a loopback registry).
# Usage: image/kube/push.sh [ADDR]   (default 127.0.0.1:${REGISTRY_PORT:-5000}; ARCH from the environment)
. "$(dirname "$0")/lib.sh"
ADDR=${1:-127.0.0.1:${REGISTRY_PORT:-5000}}
command -v skopeo >/dev/null || die "skopeo is missing (apt-get install skopeo)"
curl -sf -o /dev/null "http://$ADDR/v2/" || die "no registry answers on http://$ADDR/v2/ (make registry starts one)"
T0=$SECONDS pushed=0 skipped=0
ACCEPT='application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json'
remote_digest() { # REPO TAG
  curl -sfI -H "Accept: $ACCEPT" "http://$ADDR/v2/$1/manifests/$2" | tr -d '\r' | sed -n 's/^[Dd]ocker-[Cc]ontent-[Dd]igest: //p'
}
# "<layout> <ref> <upstream> <manifest digest>" for every built image (one node process for all of them).
with_digests() {
  bash "$KUBE_DIR/list.sh" | node -e '
    const fs = require("fs"), path = require("path");
    for (const line of fs.readFileSync(0, "utf8").split("\n").filter(Boolean)) {
      const [layout, ref] = line.split(" ");
      const idx = JSON.parse(fs.readFileSync(path.join(layout, "index.json"), "utf8"));
      const m = idx.manifests.find((x) => x.annotations?.["org.opencontainers.image.ref.name"] === ref);
      if (!m) throw new Error(`${layout} has no image ${ref}`);
      console.log(`${line} ${m.digest}`);
    }'
}
while read -r layout ref up want; do
  repo_tag=${up#*/}            # drop the upstream host
  repo=${repo_tag%:*} tag=${repo_tag##*:}
  if [ "$(remote_digest "$repo" "$tag")" = "$want" ]; then
    skipped=$((skipped + 1)); continue
  fi
  skopeo copy -q --dest-tls-verify=false "oci:$layout:$ref" "docker://$ADDR/$repo_tag"
  got=$(remote_digest "$repo" "$tag")
  [ "$got" = "$want" ] || die "pushed $ADDR/$repo_tag but the registry has digest '$got', not $want"
  pushed=$((pushed + 1)); log "pushed $ADDR/$repo_tag ($up) ${want:7:12}"
done < <(with_digests)
log "registry $ADDR: pushed $pushed, already there $skipped, in $((SECONDS - T0)) s"
