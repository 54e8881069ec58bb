#!/usr/bin/env bash
# Build (once) and cache kubeletcheck: Kubernetes' own kubelet flag parsing, configuration
# validation and eviction-threshold parsing, pinned by this folder's go.mod/go.sum (the same
# Kubernetes version as the local control plane, localcluster/versions.env).
#
# The binary lands in ${KARPY_CACHE:-$HOME/.cache/karpy}/kubeletcheck/<key>/kubeletcheck, where
# <key> hashes go.mod, go.sum, main.go, the Go version and the platform; a cached build returns at
# once. Prints KUBELETCHECK=<path>. The Go module proxy is `go env GOPROXY`; nothing is hard-coded.
# It shares the Go module and build caches with localcluster/build.sh, so after the control plane
# most packages are already compiled (cold on 2 cores: a few minutes).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export GOTOOLCHAIN=local CGO_ENABLED=0
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH" >&2; exit 1; }

cache_root="${KARPY_CACHE:-$HOME/.cache/karpy}/kubeletcheck"
key="$({ go env GOVERSION GOOS GOARCH; cat "$here/go.mod" "$here/go.sum" "$here/main.go"; } | sha256sum | cut -c1-16)"
out="$cache_root/$key/kubeletcheck"
if [[ -x "$out" ]]; then
  echo "KUBELETCHECK=$out"
  exit 0
fi
mkdir -p "$cache_root/$key"
exec 9>"$cache_root/$key/.lock"
flock 9
if [[ ! -x "$out" ]]; then
  started=$SECONDS
  # the control plane's build tags (localcluster/build.sh), so its compiled packages are reused
  (cd "$here" && go build -tags selinux,notest -ldflags "-s -w" -o "$out.tmp" .)
  mv "$out.tmp" "$out"
  echo "build.sh: kubeletcheck built in $((SECONDS - started))s" >&2
fi
echo "KUBELETCHECK=$out"
