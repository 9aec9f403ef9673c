#!/usr/bin/env bash
# Build the local control plane's binaries once, from the Go module proxy, at the versions pinned here and in each
# modules/<component>/go.mod (go.sum pins every byte). Cached outside the work tree, keyed by component and version:
#   ${RAYON_K8S_CACHE:-~/.cache/rayon-k8s}/<component>-<version>/<component>
# Usage: build.sh [component ...]   (default: all four, smallest first; an already cached one is skipped)
#        build.sh --path component  (print where its binary is, or would be)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${RAYON_K8S_CACHE:-$HOME/.cache/rayon-k8s}"

declare -A version=([etcd]=3.6.16 [kwok]=0.8.0 [yunikorn]=1.9.0 [kube-apiserver]=1.36.3)
declare -A package=(
  [etcd]=.
  [kwok]=sigs.k8s.io/kwok/cmd/kwok
  [yunikorn]=.
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
)
order=(etcd kwok yunikorn kube-apiserver)

binary() { echo "$cache/$1-${version[$1]}/$1"; }

if [ "${1:-}" = "--path" ]; then binary "$2"; exit 0; fi
command -v go >/dev/null || { echo "build.sh: go is not on PATH" >&2; exit 2; }
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=("${order[@]}")
for c in "${targets[@]}"; do
  [ -n "${package[$c]:-}" ] || { echo "build.sh: unknown component '$c' (one of: ${order[*]})" >&2; exit 2; }
  out="$(binary "$c")"
  if [ -x "$out" ]; then echo "$c ${version[$c]}: cached at $out"; continue; fi
  mkdir -p "$(dirname "$out")"
  start=$(date +%s)
  echo "$c ${version[$c]}: building (nice -n 15, -p=1)"
  # -mod=readonly: the module files here are the recipe; a build never rewrites them. GONOSUMDB: the shim's
  # pre-release pseudo-versions are not in the checksum database, go.sum pins them instead.
  (cd "$here/modules/$c" && GOFLAGS="-mod=readonly -p=1 -trimpath -buildvcs=false" GONOSUMDB=github.com/apache/yunikorn-k8shim \
     nice -n 15 go build -ldflags=-s -o "$out.part" "${package[$c]}")
  mv "$out.part" "$out"
  echo "$c ${version[$c]}: built in $(( $(date +%s) - start )) s -> $out"
done
