#!/usr/bin/env bash
# A local Kubernetes control plane for the plan follower's tests: etcd, kube-apiserver, KWOK (fake nodes, pods
# whose lifecycle it plays) and YuniKorn's scheduler, every one on 127.0.0.1. docs/kubernetes.md explains it.
#
#   cluster.sh up      build what is not cached (build.sh), make certificates, start the four, wait for each
#   cluster.sh down    stop them in the reverse order, by pid (TERM, then KILL after 20 s), remove the directory
#   cluster.sh status  which are running
#
# Everything lives in $RAYON_K8S_DIR (default /tmp/rayon-k8s): certificates, data, logs, pids, `kubeconfig`
# (the admin's: point KUBECONFIG at it), `follower.kubeconfig` (the user rayon-follower, who may do nothing until
# granted). Ports: $RAYON_K8S_PORT (default 36443) for the API server, the two
# after it for etcd (clients, peers). Nodes: $RAYON_K8S_NODES (default 4) fake nodes of the example cluster's
# node (examples/cluster.yaml: 32 vcores, 64 GiB). YuniKorn reads its queues from the ConfigMap
# yunikorn/yunikorn-configs, made at start from queues-base.yaml (the base docs/yunikorn.md gives).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${RAYON_K8S_DIR:-/tmp/rayon-k8s}"
port="${RAYON_K8S_PORT:-36443}"
etcd_port=$((port + 1)); peer_port=$((port + 2))
nodes="${RAYON_K8S_NODES:-4}"
namespace=yunikorn
order=(etcd kube-apiserver kwok yunikorn)  # start order; stop is the reverse

log() { echo "cluster.sh: $*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
alive() { [ -f "$dir/$1.pid" ] && kill -0 "$(cat "$dir/$1.pid")" 2>/dev/null; }

# The API, as the admin (curl: no kubectl is needed). api METHOD PATH [BODY]; fails on an HTTP error.
api() {
  curl -sS --fail-with-body --max-time 10 --cacert "$dir/ca.crt" --cert "$dir/admin.crt" --key "$dir/admin.key" \
    -X "$1" -H 'Content-Type: application/json' ${3:+--data-binary "$3"} "https://127.0.0.1:$port$2"
}

# wait_for NAME SECONDS COMMAND...: until COMMAND succeeds, or fail (with the log's tail) when NAME exits or time is up
wait_for() {
  local name="$1" limit="$2" start; shift 2; start=$(now)
  until "$@" >/dev/null 2>&1; do
    if ! alive "$name"; then log "$name exited; the end of $dir/$name.log:"; tail -20 "$dir/$name.log" >&2; return 1; fi
    if awk -v s="$(since "$start")" -v l="$limit" 'BEGIN { exit !(s > l) }'; then
      log "$name not ready after ${limit} s; the end of $dir/$name.log:"; tail -20 "$dir/$name.log" >&2; return 1
    fi
    sleep 0.2
  done
}

start() {  # start NAME BINARY ARGS...: in the background, its pid in NAME.pid, its output in NAME.log
  local name="$1"; shift
  env "${env_for[@]}" "$@" >"$dir/$name.log" 2>&1 &
  echo $! >"$dir/$name.pid"
}

certificates() {
  local ssl=(openssl)
  "${ssl[@]}" req -x509 -newkey rsa:2048 -nodes -keyout "$dir/ca.key" -out "$dir/ca.crt" -days 2 \
    -subj "/CN=rayon-local-ca" 2>/dev/null
  # the API server's serving certificate, for loopback only
  "${ssl[@]}" req -newkey rsa:2048 -nodes -keyout "$dir/apiserver.key" -out "$dir/apiserver.csr" \
    -subj "/CN=kube-apiserver" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1\nextendedKeyUsage=serverAuth\n' >"$dir/apiserver.ext"
  "${ssl[@]}" x509 -req -in "$dir/apiserver.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/apiserver.crt" -days 2 -extfile "$dir/apiserver.ext" 2>/dev/null
  # the admin (system:masters): the tests, KWOK, YuniKorn
  "${ssl[@]}" req -newkey rsa:2048 -nodes -keyout "$dir/admin.key" -out "$dir/admin.csr" \
    -subj "/O=system:masters/CN=rayon-admin" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$dir/admin.ext"
  "${ssl[@]}" x509 -req -in "$dir/admin.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/admin.crt" -days 2 -extfile "$dir/admin.ext" 2>/dev/null
  # the follower, with no rights of its own: a test grants them (the Role docs/follower.md gives)
  "${ssl[@]}" req -newkey rsa:2048 -nodes -keyout "$dir/follower.key" -out "$dir/follower.csr" \
    -subj "/CN=rayon-follower" 2>/dev/null
  "${ssl[@]}" x509 -req -in "$dir/follower.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$dir/follower.crt" -days 2 -extfile "$dir/admin.ext" 2>/dev/null
  # the key service account tokens are signed with (the API server insists on one)
  "${ssl[@]}" genrsa -out "$dir/sa.key" 2048 2>/dev/null
  "${ssl[@]}" rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$port", certificate-authority: "$dir/ca.crt"}
users:
- name: admin
  user: {client-certificate: "$dir/admin.crt", client-key: "$dir/admin.key"}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
EOF
  sed -e "s#admin.crt#follower.crt#; s#admin.key#follower.key#; s#name: admin#name: follower#; s#user: admin#user: follower#" \
    "$dir/kubeconfig" >"$dir/follower.kubeconfig"
}

# A JSON string of a file's text (for a ConfigMap's data)
json_text() { python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read()))' "$1"; }

node_json() {  # a fake node of the example cluster's node: 32 vcores, 64 GiB
  cat <<EOF
{"apiVersion": "v1", "kind": "Node",
 "metadata": {"name": "$1", "annotations": {"kwok.x-k8s.io/node": "fake"},
              "labels": {"type": "kwok", "kubernetes.io/hostname": "$1"}},
 "spec": {},
 "status": {"capacity": {"cpu": "32", "memory": "64Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "64Gi", "pods": "110"}}}
EOF
}

up() {
  for name in "${order[@]}"; do
    if alive "$name"; then log "$name is already running (pid $(cat "$dir/$name.pid")): cluster.sh down first"; exit 1; fi
  done
  for tool in curl openssl python3; do command -v "$tool" >/dev/null || { log "$tool is needed"; exit 2; }; done
  "$here/build.sh" >&2
  declare -A bin
  for name in "${order[@]}"; do bin[$name]="$("$here/build.sh" --path "$name")"; done
  rm -rf "$dir"; mkdir -p "$dir/etcd" "$dir/apiserver"; chmod 700 "$dir"
  trap 'log "start failed: stopping what was started"; RAYON_K8S_KEEP=1 down; exit 1' ERR
  env_for=(PATH="$PATH" HOME="$HOME")
  local t0 t; t0=$(now)
  certificates
  log "certificates made in $(since "$t0") s"

  t=$(now)
  start etcd "${bin[etcd]}" --name local --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "local=http://127.0.0.1:$peer_port" --log-level warn
  wait_for etcd 60 curl -sf "http://127.0.0.1:$etcd_port/health"
  log "etcd ready in $(since "$t") s"

  # No controller-manager and no kubelet here, so: no ServiceAccount admission (nothing makes the default account),
  # no TaintNodesByCondition (nothing would ever lift the not-ready taint from a new node).
  t=$(now)
  start kube-apiserver "${bin[kube-apiserver]}" \
    --etcd-servers "http://127.0.0.1:$etcd_port" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$port" \
    --cert-dir "$dir/apiserver" --tls-cert-file "$dir/apiserver.crt" --tls-private-key-file "$dir/apiserver.key" \
    --client-ca-file "$dir/ca.crt" --anonymous-auth=false --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$dir/sa.pub" \
    --service-account-signing-key-file "$dir/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
    --disable-admission-plugins ServiceAccount,TaintNodesByCondition --profiling=false
  wait_for kube-apiserver 180 api GET /readyz
  log "kube-apiserver ready in $(since "$t") s"

  api POST /api/v1/namespaces "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {\"name\": \"$namespace\"}}" >/dev/null
  api POST "/api/v1/namespaces/$namespace/configmaps" "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",
    \"metadata\": {\"name\": \"yunikorn-defaults\"}, \"data\": {\"service.schedulingInterval\": \"1s\"}}" >/dev/null
  api POST "/api/v1/namespaces/$namespace/configmaps" "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\",
    \"metadata\": {\"name\": \"yunikorn-configs\"}, \"data\": {\"queues.yaml\": $(json_text "$here/queues-base.yaml")}}" >/dev/null
  for i in $(seq 0 $((nodes - 1))); do api POST /api/v1/nodes "$(node_json "kwok-node-$i")" >/dev/null; done

  t=$(now)
  start kwok "${bin[kwok]}" --kubeconfig "$dir/kubeconfig" --config "$here/kwok.yaml" \
    --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake --node-ip 127.0.0.1
  wait_for kwok 60 nodes_ready
  log "kwok ready in $(since "$t") s ($nodes nodes Ready)"

  t=$(now)
  env_for+=(KUBECONFIG="$dir/kubeconfig" NAMESPACE="$namespace")
  start yunikorn "${bin[yunikorn]}"
  wait_for yunikorn 120 yunikorn_registered
  log "yunikorn ready in $(since "$t") s"
  trap - ERR
  log "up in $(since "$t0") s: export KUBECONFIG=$dir/kubeconfig"
}

nodes_ready() {  # every fake node reports Ready (KWOK has played its initialize stage)
  api GET /api/v1/nodes | python3 -c '
import json, sys
items = json.load(sys.stdin)["items"]
ready = [n for n in items if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions", []))]
sys.exit(0 if items and len(ready) == len(items) == int(sys.argv[1]) else 1)' "$nodes"
}

yunikorn_registered() {  # the shim's state is initialised and the core accepted every node (its log says so)
  grep -q "scheduler state initialized" "$dir/yunikorn.log" &&
    [ "$(grep -c "Node registration accepted" "$dir/yunikorn.log")" -ge "$nodes" ]
}

down() {
  local i name pid waited
  for ((i = ${#order[@]} - 1; i >= 0; i--)); do
    name="${order[$i]}"
    [ -f "$dir/$name.pid" ] || continue
    pid="$(cat "$dir/$name.pid")"
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      waited=0
      while kill -0 "$pid" 2>/dev/null && [ $waited -lt 100 ]; do sleep 0.2; waited=$((waited + 1)); done
      if kill -0 "$pid" 2>/dev/null; then log "$name (pid $pid) did not stop in 20 s: killed"; kill -KILL "$pid" 2>/dev/null || true; fi
      log "$name stopped"
    fi
    rm -f "$dir/$name.pid"
  done
  if [ "${RAYON_K8S_KEEP:-0}" = 1 ]; then log "kept $dir (RAYON_K8S_KEEP=1)"; else rm -rf "$dir"; fi
}

status() {
  local name
  for name in "${order[@]}"; do
    if alive "$name"; then echo "$name: running (pid $(cat "$dir/$name.pid"))"; else echo "$name: not running"; fi
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status" >&2; exit 2 ;;
esac
