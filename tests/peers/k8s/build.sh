#!/usr/bin/env bash
# Build the local control plane's binaries once, from the Go module proxy, at the versions pinned here and in each
# modules/<component>/go.mod (go.sum pins every byte). Cached outside the work tree, keyed by component and version:
#   ${RAYON_K8S_CACHE:-~/.cache/rayon-k8s}/<component>-<version>/<component>
# Usage: build.sh [--budget SECONDS] [component ...]  (default: all four, quickest first; a cached one is skipped)
#        build.sh --path component  (print where its binary is, or would be)
# --budget: build only what fits in SECONDS, by the build times measured on a loaded 2-core machine (`expect`
# below); one that would not fit is left unbuilt, saying so, and one that overruns is stopped (exit 0 either way:
# the tests that need it skip, saying so).
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
declare -A expect=([etcd]=200 [kwok]=420 [yunikorn]=520 [kube-apiserver]=960)  # seconds, as measured (docs/kubernetes.md)
order=(etcd kwok yunikorn kube-apiserver)

binary() { echo "$cache/$1-${version[$1]}/$1"; }

if [ "${1:-}" = "--path" ]; then binary "$2"; exit 0; fi
budget=""
if [ "${1:-}" = "--budget" ]; then budget="$2"; shift 2; fi
began=$(date +%s)
command -v go >/dev/null || { echo "build.sh: go is not on PATH" >&2; exit 2; }
targets=("$@"); [ ${#targets[@]} -gt 0 ] || targets=("${order[@]}")
for c in "${targets[@]}"; do
  [ -n "${package[$c]:-}" ] || { echo "build.sh: unknown component '$c' (one of: ${order[*]})" >&2; exit 2; }
  out="$(binary "$c")"
  if [ -x "$out" ]; then echo "$c ${version[$c]}: cached at $out"; continue; fi
  limit=()
  if [ -n "$budget" ]; then
    left=$(( budget - ($(date +%s) - began) ))
    if [ "$left" -lt "${expect[$c]}" ]; then
      echo "$c ${version[$c]}: not built: about ${expect[$c]} s, and ${left} s of the budget are left"; continue
    fi
    limit=(timeout --kill-after=10 "$left")
  fi
  mkdir -p "$(dirname "$out")"
  start=$(date +%s)
  echo "$c ${version[$c]}: building (nice -n 15, -p=1)"
  # -mod=readonly: the module files here are the recipe; a build never rewrites them. GONOSUMDB: the shim is not
  # in the checksum database; go.sum pins it instead.
  if ! (cd "$here/modules/$c" && GOFLAGS="-mod=readonly -p=1 -trimpath -buildvcs=false" \
        GONOSUMDB=github.com/apache/yunikorn-k8shim "${limit[@]}" nice -n 15 go build -ldflags=-s -o "$out.part" \
        "${package[$c]}"); then
    rm -f "$out.part"
    if [ -n "$budget" ]; then echo "$c ${version[$c]}: not built: stopped at the end of the budget"; continue; fi
    echo "build.sh: $c ${version[$c]} did not build" >&2; exit 1
  fi
  mv "$out.part" "$out"
  echo "$c ${version[$c]}: built in $(( $(date +%s) - start )) s -> $out"
done
