#!/bin/bash
# The three-VM trial (README "A cluster of VMs") against a running `make cluster` (1 control plane + 2 workers),
# step by step with the real talosctl and kubectl, each step printing seconds since T0 (default: now).
# Usage: image/cluster-trial.sh <step>...
#   steps: config apply bootstrap ready pods multi health spread upgrade rollback fault fix
#   with `make cluster CONTROLPLANES=3`: config apply3 bootstrap members3 ready reset3 members2 health2
#   upgrade needs registry.local/machined/installer:cluster-2 in the registry (README); make cluster's own image
#   is expected to be built with IMAGE_VERSION=cluster-1.
# Env: TALOSCTL (talosctl), TRIAL_DIR (build/amd64/cluster/trial): configs, talosconfig and kubeconfig go there.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
T=${TALOSCTL:-talosctl}
P=$TOP/build/amd64/cluster
W=${TRIAL_DIR:-$P/trial}
mkdir -p $W && cd $W
export TALOSCONFIG=$W/out/talosconfig
K="kubectl --kubeconfig $W/kubeconfig --server https://127.0.0.11:6443"
CP=10.5.0.11 W1=10.5.0.12 W2=10.5.0.13
T0=${T0:-$(date +%s)}
log() { echo "[trial $(date +%H:%M:%S) +$(( $(date +%s) - T0 ))s] $*"; }
tc() { $T -e 127.0.0.11 "$@"; }
until_ok() { # until_ok <seconds> <cmd...>
  local lim=$1; shift; local end=$(( $(date +%s) + lim ))
  until "$@" >/tmp/trial-last.out 2>&1; do
    [ $(date +%s) -ge $end ] && { log "TIMEOUT: $*"; tail -5 /tmp/trial-last.out; return 1; }
    sleep 10
  done
}

step_config() {
  rm -rf out; $T gen config demo https://10.5.0.11:6443 -o out --install-disk /dev/vda \
    --install-image "$(cat $P/installer)" --config-patch @$P/patch.yaml \
    --config-patch-control-plane '{"cluster":{"allowSchedulingOnControlPlanes":true}}' \
    --config-patch-control-plane @$TOP/image/cluster-slow-cp.yaml
  for i in 1 2 3; do printf 'machine:\n  network:\n    hostname: node-%s\n' $i > node-$i.yaml; done
  log "config generated"
}
step_apply() {
  $T apply-config --insecure -n 127.0.0.11 -f out/controlplane.yaml --config-patch @node-1.yaml & a=$!
  $T apply-config --insecure -n 127.0.0.12 -f out/worker.yaml --config-patch @node-2.yaml & b=$!
  $T apply-config --insecure -n 127.0.0.13 -f out/worker.yaml --config-patch @node-3.yaml & c=$!
  wait $a; ra=$?; wait $b; rb=$?; wait $c; rc=$?
  log "apply-config rc: cp=$ra w1=$rb w2=$rc"
  $T config endpoint 127.0.0.11; $T config node $CP
}
step_apply3() {
  for i in 1 2 3; do $T apply-config --insecure -n 127.0.0.1$i -f out/controlplane.yaml --config-patch @node-$i.yaml & eval p$i=$!; done
  wait $p1; r1=$?; wait $p2; r2=$?; wait $p3; r3=$?
  log "apply-config rc: cp1=$r1 cp2=$r2 cp3=$r3"
  $T config endpoint 127.0.0.11; $T config node $CP
}
step_members3() {
  until_ok 5400 sh -c "[ \$($T -e 127.0.0.11 -n $CP etcd members 2>/dev/null | awk 'NR>1 && \$NF==\"false\"' | wc -l) -ge 3 ]" || { tc -n $CP etcd members; return 1; }
  log "three etcd voters"; tc -n $CP etcd members
  tc -n $CP,$W1,$W2 service etcd | grep -i -E "^NODE|STATE|HEALTH" ; tc -n $CP get members
  tc -n $W1 bootstrap; log "second bootstrap on a joined node rc=$? (expected non-zero)"
}
step_reset3() {
  tc -n $W2 reset --graceful --reboot --wait=false; log "reset of $W2 rc=$?"
  until_ok 1800 sh -c "[ \$($T -e 127.0.0.11 -n $CP etcd members 2>/dev/null | awk 'NR>1' | wc -l) -eq 2 ]" || { tc -n $CP etcd members; return 1; }
  log "two etcd members after the reset"; tc -n $CP etcd members; tc -n $CP etcd status
}
step_members2() {
  tc -n $CP,$W1 etcd status; log "etcd status rc=$?"
  tc -n $CP,$W1 service etcd | grep -i -E "^NODE|HEALTH"
}
step_health2() {
  tc -n $CP health --control-plane-nodes $CP,$W1 --wait-timeout 30m; log "health rc=$?"
}
step_bootstrap() {
  until_ok 3600 sh -c "$T -e 127.0.0.11 -n $CP bootstrap 2>&1 || $T -e 127.0.0.11 -n $CP bootstrap 2>&1 | grep -qi already" || return 1
  log "bootstrapped"; cat /tmp/trial-last.out
}
step_ready() {
  until_ok 600 tc -n $CP kubeconfig -f $W/kubeconfig || return 1
  local end=$(( $(date +%s) + 5400 ))
  while :; do
    n=$($K get nodes --no-headers 2>/dev/null | awk '$2=="Ready"' | wc -l)
    [ "$n" -ge 3 ] && break
    [ $(date +%s) -ge $end ] && { log "TIMEOUT three Ready"; $K get nodes; return 1; }
    sleep 20
  done
  log "three nodes Ready"; $K get nodes -o wide
}
step_pods() {
  until_ok 3600 sh -c "$K -n kube-system get pods --no-headers | awk '{split(\$2,a,\"/\"); if (a[1]!=a[2] || \$3!=\"Running\") bad++} END {exit bad>0 || NR<9}'" || { $K -n kube-system get pods -o wide; return 1; }
  log "kube-system all Running and ready"; $K -n kube-system get pods -o wide
}
step_multi() {
  tc -n $CP,$W1,$W2 version; log "version rc=$?"
  tc -n $CP,$W1,$W2 services; log "services rc=$?"
  timeout 30 $T -e 127.0.0.11 -n $CP,$W1,$W2 logs -f kubelet --tail 2 > multi-logs.txt 2>&1; log "logs -f kubelet: lines per node:"
  for h in $CP $W1 $W2; do echo "  $h $(grep -c "^$h" multi-logs.txt)"; done; head -8 multi-logs.txt
}
step_health() {
  tc -n $CP health --control-plane-nodes $CP --worker-nodes $W1,$W2 --wait-timeout 5m; log "health rc=$?"
}
step_spread() {
  $K delete deployment spread --ignore-not-found >/dev/null
  cat <<'YAML' | $K apply -f -
apiVersion: apps/v1
kind: Deployment
metadata: { name: spread }
spec:
  replicas: 3
  selector: { matchLabels: { app: spread } }
  template:
    metadata: { labels: { app: spread } }
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: { matchLabels: { app: spread } }
              topologyKey: kubernetes.io/hostname
      containers:
        - name: hello
          image: docker.io/library/busybox:1.37
          command: ["sh", "-c", "while true; do echo hello from $(hostname) on $NODE; sleep 5; done"]
          env: [{ name: NODE, valueFrom: { fieldRef: { fieldPath: spec.nodeName } } }]
YAML
  until_ok 1800 sh -c "$K get deploy spread -o jsonpath='{.status.readyReplicas}' | grep -qx 3" || { $K get pods -o wide; return 1; }
  log "spread: 3 ready"; $K get pods -o wide
  for p in $($K get pods -l app=spread -o name); do $K logs $p --tail 1; done
}
step_upgrade() {
  tc -n $W2 version | grep -i tag
  tc -n $W2 upgrade --image registry.local/machined/installer:cluster-2 --drain=false --wait=false; log "upgrade call rc=$?"
  until_ok 3600 sh -c "$K get node node-3 -o jsonpath='{.status.nodeInfo.osImage}' | grep -q cluster-2" || return 1
  log "worker $W2 runs cluster-2"; tc -n $W2 version
  until_ok 1800 sh -c "$K get nodes --no-headers | awk '\$2==\"Ready\"' | wc -l | grep -qx 3" || return 1
  log "three Ready after upgrade"; $K get nodes; $K get pods -o wide
}
step_rollback() {
  tc -n $W2 rollback; log "rollback call rc=$?"
  until_ok 3600 sh -c "$K get node node-3 -o jsonpath='{.status.nodeInfo.osImage}' | grep -q cluster-1" || return 1
  log "worker $W2 back on cluster-1"; tc -n $W2 version
  until_ok 1800 sh -c "$K get nodes --no-headers | awk '\$2==\"Ready\"' | wc -l | grep -qx 3" || return 1
  until_ok 1800 sh -c "$K get deploy spread -o jsonpath='{.status.readyReplicas}' | grep -qx 3" || return 1
  log "three Ready, spread 3/3 after rollback"; $K get nodes; $K get pods -o wide
}
step_fault() {
  tc -n $W1 patch mc --patch '{"machine":{"kubelet":{"extraArgs":{"node-labels-typo":"x"}}}}'; log "fault planted rc=$?"
  sleep 45
  log "--- diagnose: services"; tc -n $W1 services
  log "--- service kubelet"; tc -n $W1 service kubelet
  log "--- logs kubelet"; tc -n $W1 logs kubelet --tail 8
  log "--- get kubeletspec"; tc -n $W1 get kubeletspec -o yaml | grep -n -A2 -i typo
  log "--- dmesg"; tc -n $W1 dmesg | tail -5
  log "--- health"; tc -n $CP health --control-plane-nodes $CP --worker-nodes $W1,$W2 --wait-timeout 90s; log "health rc=$? (expected non-zero)"
}
step_fix() {
  # talosctl refuses a JSON patch on its multi-document configs: the fix is the node's config applied again.
  tc -n $W1 apply-config -f out/worker.yaml --config-patch @node-2.yaml; log "fault removed rc=$?"
  until_ok 1200 sh -c "$K get nodes --no-headers | awk '\$2==\"Ready\"' | wc -l | grep -qx 3" || return 1
  step_health
}
for s in "$@"; do log "=== $s"; step_$s || { log "step $s FAILED"; exit 1; }; done
