#!/usr/bin/env bash
# Build (once) and cache the local control plane binaries:
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok, helm
# from the pinned wrapper Go modules in ./go/*/ (committed go.mod + go.sum).
#
# Binaries land in ${KARPY_CACHE:-$HOME/.cache/karpy}/localcluster/<key>/bin, where <key> is a
# hash of versions.env, the wrapper go.mod/go.sum files, the Go version and the platform.
# Idempotent: only missing binaries are built; a complete cache returns in well under a second.
#
# Usage:
#   build.sh                 build whatever is missing, then print KARPY_LOCALCLUSTER_BIN=<dir>
#   build.sh --print-bin-dir print the bin dir for the current pins (no build)
#   build.sh --check         exit 0 if every binary is cached, 1 otherwise (no build)
#   build.sh [NAME...]       build only the named binaries (e.g. `build.sh etcd kwok`)
#
# The Go module proxy is whatever `go env GOPROXY` says on this machine; nothing is hard-coded.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

# Bump when the way binaries are built changes (flags, stamping) to force a rebuild.
BUILD_FORMAT=1
ALL_BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok helm)

export GOTOOLCHAIN=local CGO_ENABLED=0
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"

die() { echo "build.sh: ERROR: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "go is not on PATH (Go >= 1.24 is required)"

cache_root="${KARPY_CACHE:-$HOME/.cache/karpy}/localcluster"
key="$(
  {
    echo "format=$BUILD_FORMAT"
    go env GOVERSION GOOS GOARCH
    cat "$here/versions.env"
    for d in etcd kube kwok helm; do cat "$here/go/$d/go.mod" "$here/go/$d/go.sum"; done
  } | sha256sum | cut -c1-16
)"
bin="$cache_root/$key/bin"

missing() {
  local b out=()
  for b in "$@"; do [[ -x "$bin/$b" ]] || out+=("$b"); done
  echo "${out[@]+"${out[@]}"}"
}

case "${1:-}" in
  --print-bin-dir) echo "$bin"; exit 0 ;;
  --check) [[ -z "$(missing "${ALL_BINARIES[@]}")" ]]; exit $? ;;
  -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

wanted=("$@")
[[ ${#wanted[@]} -gt 0 ]] || wanted=("${ALL_BINARIES[@]}")
for b in "${wanted[@]}"; do
  [[ " ${ALL_BINARIES[*]} " == *" $b "* ]] || die "unknown binary '$b' (known: ${ALL_BINARIES[*]})"
done

todo="$(missing "${wanted[@]}")"
if [[ -z "$todo" ]]; then
  echo "KARPY_LOCALCLUSTER_BIN=$bin"
  exit 0
fi

mkdir -p "$bin"
# One build at a time per cache key (pytest, make and a user may all ask concurrently).
exec 9>"$cache_root/$key/.lock"
if ! flock -n 9; then
  echo "build.sh: another build of $key is running; waiting for it..." >&2
  flock 9
fi
todo="$(missing "${wanted[@]}")"

t_start=$SECONDS
log() { printf '[build.sh %4ds] %s\n' "$((SECONDS - t_start))" "$*" >&2; }

avail_kb="$(df -Pk "$(go env GOCACHE | xargs dirname)" | awk 'NR==2 {print $4}')"
if [[ -n "$avail_kb" && "$avail_kb" -lt $((6 * 1024 * 1024)) ]]; then
  log "WARNING: only $((avail_kb / 1024)) MiB free for the Go caches; a cold build needs about 6 GiB"
fi

log "cache key $key -> $bin"
log "go $(go env GOVERSION), GOMAXPROCS=$(nproc), to build: $todo"

stage="$(mktemp -d "$cache_root/$key/stage.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

# module_field MODULEDIR MODULE FIELD -> a field of `go mod download -json` (Origin.Hash, Time)
module_json() { (cd "$1" && go mod download -json "$2@$(go list -m -f '{{.Version}}' "$2")"); }
json_str() { sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" | head -1; }

# install NAME EXPECTED_VERSION_SUBSTRING VERSION_ARGS...: smoke-test a staged binary, move it in.
install_bin() {
  local name="$1" expect="$2"; shift 2
  local out
  out="$("$stage/$name" "$@" 2>&1)" || die "$name $* failed: $out"
  [[ "$out" == *"$expect"* ]] || die "$name $* printed '$out', expected it to contain '$expect'"
  mv -f "$stage/$name" "$bin/$name"
  log "ok   $name: $(echo "$out" | head -1)"
}

want() { [[ " $todo " == *" $1 "* ]]; }

# ---------------------------------------------------------------------------------------- etcd
if want etcd; then
  log "building etcd v$ETCD_VERSION ..."
  (cd "$here/go/etcd" && go build -ldflags "-s -w" -o "$stage/etcd" go.etcd.io/etcd/server/v3) \
    || die "etcd build failed"
  install_bin etcd "etcd Version: $ETCD_VERSION" --version
fi

# ---------------------------------------------------------------------------------------- kwok
if want kwok; then
  log "building kwok v$KWOK_VERSION ..."
  (cd "$here/go/kwok" && go build -ldflags "-s -w" -o "$stage/kwok" sigs.k8s.io/kwok/cmd/kwok) \
    || die "kwok build failed"
  install_bin kwok "$KWOK_VERSION" --version
fi

# ---------------------------------------------------------------------------------------- kube
kube_bins=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  if want "$b"; then kube_bins+=("$b"); fi
done
if [[ ${#kube_bins[@]} -gt 0 ]]; then
  kjson="$(module_json "$here/go/kube" k8s.io/kubernetes)"
  kcommit="$(echo "$kjson" | json_str Hash)"
  kdate="$(date -u -d "$(cat "$(echo "$kjson" | json_str Info)" | json_str Time)" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo 1970-01-01T00:00:00Z)"
  kmajor="${KUBE_VERSION%%.*}"
  kminor="${KUBE_VERSION#*.}"; kminor="${kminor%%.*}"
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=$kmajor -X $pkg.gitMinor=$kminor"
    ldflags+=" -X $pkg.gitCommit=$kcommit -X $pkg.gitTreeState=clean -X $pkg.buildDate=$kdate"
  done
  pkgs=()
  for b in "${kube_bins[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  log "building ${kube_bins[*]} v$KUBE_VERSION (commit ${kcommit:-unknown}); this is the long part ..."
  (cd "$here/go/kube" && go build -tags selinux,notest -ldflags "$ldflags" -o "$stage/" "${pkgs[@]}") \
    || die "kubernetes build failed"
  for b in "${kube_bins[@]}"; do
    if [[ "$b" == kubectl ]]; then
      install_bin kubectl "Client Version: v$KUBE_VERSION" version --client
    else
      install_bin "$b" "Kubernetes v$KUBE_VERSION" --version
    fi
  done
fi

# ---------------------------------------------------------------------------------------- helm
if want helm; then
  hjson="$(module_json "$here/go/helm" helm.sh/helm/v3)"
  hcommit="$(echo "$hjson" | json_str Hash)"
  cgo_ver="$(cd "$here/go/helm" && go list -m -f '{{.Version}}' k8s.io/client-go)"  # v0.MINOR.PATCH
  hk8s_minor="$(echo "$cgo_ver" | cut -d. -f2)"
  hv=helm.sh/helm/v3
  ldflags="-s -w -X $hv/internal/version.version=v$HELM_VERSION -X $hv/internal/version.metadata="
  ldflags+=" -X $hv/internal/version.gitCommit=$hcommit -X $hv/internal/version.gitTreeState=clean"
  for pkg in pkg/chartutil pkg/lint/rules; do
    ldflags+=" -X $hv/$pkg.k8sVersionMajor=1 -X $hv/$pkg.k8sVersionMinor=$hk8s_minor"
  done
  log "building helm v$HELM_VERSION ..."
  (cd "$here/go/helm" && go build -ldflags "$ldflags" -o "$stage/helm" helm.sh/helm/v3/cmd/helm) \
    || die "helm build failed"
  install_bin helm "v$HELM_VERSION" version --short
fi

left="$(missing "${wanted[@]}")"
[[ -z "$left" ]] || die "still missing after build: $left"
log "done in $((SECONDS - t_start))s"
echo "KARPY_LOCALCLUSTER_BIN=$bin"
