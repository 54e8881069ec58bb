#!/usr/bin/env bash
# Regenerate the pinned wrapper modules (go.mod + go.sum) from versions.env.
# Run this only when bumping a pin; commit the resulting go.mod/go.sum files.
# It uses the machine's own `go env GOPROXY` (never hard-code a proxy here).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../versions.env
source "$here/../versions.env"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

kube_minor="${KUBE_VERSION#*.}"; kube_minor="${kube_minor%%.*}"
kube_patch="${KUBE_VERSION##*.}"
staging_version="v0.${kube_minor}.${kube_patch}"

# --- kube: require k8s.io/kubernetes and replace every staging module with its published tag.
# The list is derived mechanically from the kubernetes go.mod served by the module proxy:
# every `k8s.io/<m> => ./staging/src/k8s.io/<m>` line names a staging module.
cd "$here/kube"
kmod="$(go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
[[ -f "$kmod" ]] || { echo "cannot locate go.mod of k8s.io/kubernetes@v${KUBE_VERSION}" >&2; exit 1; }
# Same `go` and `godebug` lines as upstream, so GODEBUG defaults match an official build.
{
  echo "module karpy.local/localcluster/kube"
  echo
  grep -E '^(go|godebug) ' "$kmod"
} > go.mod
go mod edit -require="k8s.io/kubernetes@v${KUBE_VERSION}"
n=0
while read -r m; do
  go mod edit -replace="${m}=${m}@${staging_version}"
  n=$((n + 1))
done < <(sed -n 's#^[[:space:]]*\(k8s\.io/[a-z0-9-]*\)[[:space:]]*=>[[:space:]]*\./staging/src/.*#\1#p' "$kmod" | sort -u)
echo "kube: ${n} staging replaces at ${staging_version}"
go mod tidy

# --- etcd: the module root of go.etcd.io/etcd/server/v3 is package main.
cd "$here/etcd"
printf 'module karpy.local/localcluster/etcd\n\ngo 1.23.0\n' > go.mod
go mod edit -require="go.etcd.io/etcd/server/v3@v${ETCD_VERSION}"
go mod tidy

# --- kwok
cd "$here/kwok"
printf 'module karpy.local/localcluster/kwok\n\ngo 1.24.0\n' > go.mod
go mod edit -require="sigs.k8s.io/kwok@v${KWOK_VERSION}"
go mod tidy

# --- helm
cd "$here/helm"
printf 'module karpy.local/localcluster/helm\n\ngo 1.23.0\n' > go.mod
go mod edit -require="helm.sh/helm/v3@v${HELM_VERSION}"
go mod tidy
echo "wrapper modules regenerated"
