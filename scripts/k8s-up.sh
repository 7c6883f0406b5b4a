#!/usr/bin/env bash
# Starts a real single-node Kubernetes (kube-apiserver + kubelet from
# k8s-build.sh's cache, etcd, a private containerd with runc and Debian's CNI
# plugins; no scheduler, no controllers, no registry) for the kubernetes
# sandbox e2e suite, and imports the test image into it. Needs root.
# The pitfalls of this machine are commented where they are handled. Stop it
# with k8s-down.sh.
#
#   eval "$(scripts/k8s-up.sh)"   # exports KUBECONFIG, SANDDUNE_K8S_NODE, ...
#
# Two identities: admin (system:masters, $KUBECONFIG) and sanddune-runner,
# bound only to plugins/kubernetes/rbac.yaml's Role in namespace "agents"
# ($SANDDUNE_K8S_RUNNER_KUBECONFIG). The bridge CNI enforces no
# NetworkPolicies, which SANDDUNE_K8S_NO_NETWORK_POLICY=1 tells the e2e suite.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
R="${SANDDUNE_K8S_DIR:-/tmp/sanddune-k8s}"
IMAGE="${SANDDUNE_K8S_IMAGE:-sanddune-test-base:bookworm}"
NODE=node1
# The pod subnet; its first address is this machine's on the pod bridge
# (sdk8s0), where pods reach listeners of the e2e suite.
POD_SUBNET=10.244.77.0/24 HOST_IP=10.244.77.1
log() { echo "k8s-up: $*" >&2; }
env_line() {
  echo "export KUBECONFIG=$R/admin.kubeconfig SANDDUNE_K8S_NODE=$NODE SANDDUNE_K8S_RUNNER_KUBECONFIG=$R/runner.kubeconfig SANDDUNE_K8S_NO_NETWORK_POLICY=1 SANDDUNE_K8S_HOST_IP=$HOST_IP"
}

if [ -f "$R/pids" ]; then
  log "already running in $R (scripts/k8s-down.sh stops it)"
  env_line
  exit 0
fi
for bin in containerd ctr runc openssl; do
  command -v "$bin" >/dev/null || PATH="$PATH:/usr/sbin:/sbin" command -v "$bin" >/dev/null || { echo "k8s-up: $bin is missing (apt-get install containerd runc openssl containernetworking-plugins)" >&2; exit 1; }
done
[ -x /usr/lib/cni/bridge ] || { echo "k8s-up: /usr/lib/cni/bridge is missing (apt-get install containernetworking-plugins)" >&2; exit 1; }
export PATH="$PATH:/usr/sbin:/sbin"
BIN="$("$here/k8s-build.sh")"
NODE_IP="$(ip -4 -o route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')"
[ -n "$NODE_IP" ] || NODE_IP="$(hostname -I | awk '{print $1}')"

mkdir -p "$R"/{pki,etcd,containerd,cni/net.d,kubelet,logs}
: >"$R/pids"
start() { # name, command...
  local name=$1; shift
  nohup "$@" >"$R/logs/$name.log" 2>&1 &
  echo "$name $!" >>"$R/pids"
}

# PKI: a CA, the apiserver's serving cert, the apiserver→kubelet client cert,
# the kubelet's serving cert, a service-account key; static tokens.
(
  cd "$R/pki"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=sanddune-k8s-ca -keyout ca.key -out ca.crt 2>/dev/null
  cert() { # name, subject, SANs
    openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$1.key" -out "$1.csr" 2>/dev/null
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$3" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
  }
  cert apiserver /CN=kube-apiserver "IP:127.0.0.1,IP:$NODE_IP,IP:10.96.0.1,DNS:localhost"
  cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "DNS:localhost"
  cert kubelet "/CN=system:node:$NODE" "IP:$NODE_IP,DNS:$NODE"
  openssl genrsa -out sa.key 2048 2>/dev/null
  openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  printf 'sanddune-admin-token,admin,admin,system:masters\nsanddune-kubelet-token,system:node:%s,kubelet,system:nodes\nsanddune-runner-token,sanddune-runner,sanddune-runner\n' "$NODE" >tokens.csv
)
kubeconfig() { # file, token, namespace
  cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:6443", certificate-authority: "$R/pki/ca.crt"}}]
users: [{name: u, user: {token: "$2"}}]
contexts: [{name: local, context: {cluster: local, user: u, namespace: $3}}]
current-context: local
KC
}
kubeconfig "$R/admin.kubeconfig" sanddune-admin-token default
kubeconfig "$R/kubelet.kubeconfig" sanddune-kubelet-token default
kubeconfig "$R/runner.kubeconfig" sanddune-runner-token agents

start etcd "$BIN/etcd" --data-dir "$R/etcd" --listen-client-urls http://127.0.0.1:2379 \
  --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
  --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster default=http://127.0.0.1:2380

# A private containerd with the CRI plugin (docker's has it disabled and is
# left alone). restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE.
cat >"$R/containerd/config.toml" <<TOML
version = 2
root = "$R/containerd/root"
state = "$R/containerd/state"
[grpc]
  address = "$R/containerd/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$R/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/sanddune-k8s-pause:1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$R/cni/net.d"
TOML
cat >"$R/cni/net.d/10-sanddune.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "sanddune-k8s", "plugins": [
  {"type": "bridge", "bridge": "sdk8s0", "isGateway": true, "ipMasq": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_SUBNET"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}]}
JSON
cat >"$R/cni/net.d/99-loopback.conf" <<'JSON'
{"cniVersion": "0.4.0", "name": "lo", "type": "loopback"}
JSON
start containerd containerd --config "$R/containerd/config.toml"

# --kubelet-preferred-address-types=InternalIP with the kubelet's --node-ip:
# exec goes apiserver -> kubelet:10250 and "node1" resolves nowhere (the
# kubelet refuses a loopback node IP). ServiceAccount admission is off: no
# controller creates "default" service accounts. Without the garbage
# collector (no controller-manager), objects deleted with foreground
# propagation stay Terminating with their finalizer; their pods are gone.
start kube-apiserver "$BIN/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 --bind-address=127.0.0.1 \
  --advertise-address="$NODE_IP" --secure-port=6443 \
  --tls-cert-file="$R/pki/apiserver.crt" --tls-private-key-file="$R/pki/apiserver.key" --client-ca-file="$R/pki/ca.crt" \
  --token-auth-file="$R/pki/tokens.csv" --authorization-mode=Node,RBAC --anonymous-auth=false \
  --kubelet-client-certificate="$R/pki/kubelet-client.crt" --kubelet-client-key="$R/pki/kubelet-client.key" \
  --kubelet-preferred-address-types=InternalIP \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$R/pki/sa.pub" \
  --service-account-signing-key-file="$R/pki/sa.key" --service-cluster-ip-range=10.96.0.0/16 \
  --disable-admission-plugins=ServiceAccount

# The pause image: a static Go binary waiting for SIGTERM, FROM scratch
# (docker's legacy builder needs no pull), moved into the private containerd.
sock="$R/containerd/containerd.sock"
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
pause="$R/pause"
mkdir -p "$pause"
cat >"$pause/main.go" <<'GO'
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range c {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			if pid, _ := syscall.Wait4(-1, nil, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
GO
printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$pause/Dockerfile"
(cd "$pause" && printf 'module pause\n\ngo 1.22\n' >go.mod && CGO_ENABLED=0 go build -ldflags "-s -w" -o pause .)
tag="localhost/sanddune-k8s-pause:1"
DOCKER_BUILDKIT=0 docker build -q -t "$tag" "$pause" >/dev/null
docker save "$tag" | ctr --address "$sock" -n k8s.io images import - >/dev/null
docker rmi "$tag" >/dev/null
docker save "$IMAGE" | ctr --address "$sock" -n k8s.io images import - >/dev/null
log "imported $IMAGE"

cat >"$R/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$sock
failSwapOn: false
port: 10250
readOnlyPort: 0
tlsCertFile: $R/pki/kubelet.crt
tlsPrivateKeyFile: $R/pki/kubelet.key
authentication: {anonymous: {enabled: false}, webhook: {enabled: false}, x509: {clientCAFile: $R/pki/ca.crt}}
authorization: {mode: AlwaysAllow}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {}
YAML
api() { # method, path, [curl args...]: as admin
  local m=$1 p=$2; shift 2
  curl -sSf --cacert "$R/pki/ca.crt" -H "Authorization: Bearer sanddune-admin-token" -X "$m" "https://127.0.0.1:6443$p" "$@"
}
ready=
for _ in $(seq 600); do
  api GET /readyz >/dev/null 2>&1 && { ready=1; break; }
  sleep 0.2
done
[ -n "$ready" ] || { log "kube-apiserver not ready after 2 min: see $R/logs/kube-apiserver.log"; exit 1; }
# Namespace "agents" with the provider's Role, bound to sanddune-runner
# (the YAML documents of rbac.yaml, as they are).
api POST /api/v1/namespaces -H 'Content-Type: application/yaml' --data-binary $'apiVersion: v1\nkind: Namespace\nmetadata: {name: agents}' >/dev/null
awk -v d="$R" 'BEGIN {n=0} /^---$/ {n++; next} {print > (d "/rbac-" n ".yaml")}' "$here/../plugins/kubernetes/rbac.yaml"
api POST /apis/rbac.authorization.k8s.io/v1/namespaces/agents/roles -H 'Content-Type: application/yaml' --data-binary "@$R/rbac-0.yaml" >/dev/null
api POST /apis/rbac.authorization.k8s.io/v1/namespaces/agents/rolebindings -H 'Content-Type: application/yaml' --data-binary "@$R/rbac-1.yaml" >/dev/null
start kubelet "$BIN/kubelet" --config "$R/kubelet-config.yaml" --kubeconfig "$R/kubelet.kubeconfig" \
  --root-dir "$R/kubelet" --hostname-override="$NODE" --node-ip="$NODE_IP"
ready=
for _ in $(seq 600); do
  api GET "/api/v1/nodes/$NODE" 2>/dev/null | tr -d '\n ' | grep -q '"type":"Ready","status":"True"' && { ready=1; break; }
  sleep 0.2
done
[ -n "$ready" ] || { log "node $NODE not ready after 2 min: see $R/logs/kubelet.log"; exit 1; }
log "node $NODE ready (KUBECONFIG=$R/admin.kubeconfig)"
env_line
