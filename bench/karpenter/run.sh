#!/usr/bin/env bash
# Karpenter's scheduling benchmark, built from the pinned wrapper module in this directory
# (go.mod/go.sum: sigs.k8s.io/karpenter and everything its scheduling tests import).
#
# The test binary of sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling is built with
# the benchmark's build tag (test_performance) and karpy's scenario file overlay/karpy_scenario_test.go
# added to the package — in a copy of the pinned module next to the binary, since Go refuses
# overlays inside the module cache (which is never modified). It is cached under ${KARPY_CACHE:-$HOME/.cache/karpy}/karpenter-bench/<key>/, where <key> hashes the Go
# version, the platform, go.mod, go.sum and the overlay; a complete cache returns at once.
#
# Usage:
#   run.sh --build                    build if missing, print KARPENTER_BENCH_BIN=<path>
#   run.sh --version                  print the pinned Karpenter version
#   run.sh --build-kwok               build Karpenter's kwok cloud provider (the controller binary of
#                                     sigs.k8s.io/karpenter/kwok, run out of cluster by
#                                     bench/karpenter_e2e.py) if missing; print KARPENTER_KWOK_BIN=<path>
#                                     and KARPENTER_MODULE_DIR=<the pinned module: CRDs, instance types>
#   run.sh --module-dir               print the pinned module's directory (downloaded if missing)
#   run.sh SCENARIO [EXPORT_DIR]      run one scenario (see the overlay); with EXPORT_DIR, also write
#                                     its inputs there for karpy; prints a `KARPY_RESULT {json}` line
#
# The Go module proxy is whatever `go env GOPROXY` says on this machine; nothing is hard-coded.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_FORMAT=1
PKG=sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling

export GOTOOLCHAIN=local CGO_ENABLED=0
export GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
export PATH="$PATH:/usr/local/go/bin"

die() { echo "run.sh: ERROR: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "go is not on PATH (Go >= 1.26.6 is required)"
cd "$here"

version="$(go list -m -f '{{.Version}}' sigs.k8s.io/karpenter)"
key="$(
  {
    echo "format=$BUILD_FORMAT"
    go env GOVERSION GOOS GOARCH
    cat go.mod go.sum overlay/karpy_scenario_test.go
  } | sha256sum | cut -c1-16
)"
cache="${KARPY_CACHE:-$HOME/.cache/karpy}/karpenter-bench/$key"
bin="$cache/scheduling.test"

build() {
  [[ -x "$bin" ]] && return 0
  mkdir -p "$cache"
  exec 9>"$cache/.lock"
  if ! flock -n 9; then
    echo "run.sh: another build of $key is running; waiting for it..." >&2
    flock 9
  fi
  [[ -x "$bin" ]] && return 0
  echo "run.sh: building Karpenter $version's scheduling test binary (a few minutes of CPU, once) ..." >&2
  go mod download sigs.k8s.io/karpenter
  # Go refuses overlays of files in the module cache, so the build uses a writable copy of the
  # pinned module (replace directive in a generated -modfile; requirements and sums stay pinned).
  local moddir src="$cache/src"
  moddir="$(go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)"
  [[ -f "$moddir/pkg/controllers/provisioning/scheduling/scheduling_benchmark_test.go" ]] \
    || die "no scheduling_benchmark_test.go in $moddir"
  rm -rf "$src"
  cp -r "$moddir" "$src"
  chmod -R u+w "$src"
  cp overlay/karpy_scenario_test.go "$src/pkg/controllers/provisioning/scheduling/"
  { cat go.mod; echo; echo "replace sigs.k8s.io/karpenter => $src"; } >"$cache/go.mod"
  cp go.sum "$cache/go.sum"
  local t0=$SECONDS
  go test -c -modfile "$cache/go.mod" -tags test_performance,karpy_overlay -o "$bin.tmp" "$PKG" \
    || die "building the Karpenter scheduling test binary failed"
  mv -f "$bin.tmp" "$bin"
  echo "run.sh: built in $((SECONDS - t0))s: $bin" >&2
}

# Karpenter's kwok provider: a plain `go build` of the pinned module's main package (no overlay),
# next to the test binary under the same key.
build_kwok() {
  local kwok="$cache/karpenter-kwok"
  if [[ ! -x "$kwok" ]]; then
    mkdir -p "$cache"
    exec 8>"$cache/.kwok.lock"
    flock 8
    if [[ ! -x "$kwok" ]]; then
      echo "run.sh: building Karpenter $version's kwok provider (a few minutes of CPU, once) ..." >&2
      local t0=$SECONDS
      go build -o "$kwok.tmp" sigs.k8s.io/karpenter/kwok || die "building sigs.k8s.io/karpenter/kwok failed"
      mv -f "$kwok.tmp" "$kwok"
      echo "run.sh: built in $((SECONDS - t0))s: $kwok" >&2
    fi
  fi
  echo "KARPENTER_KWOK_BIN=$kwok"
  echo "KARPENTER_MODULE_DIR=$(go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)"
}

case "${1:-}" in
  --build) build; echo "KARPENTER_BENCH_BIN=$bin"; exit 0 ;;
  --build-kwok) build_kwok; exit 0 ;;
  --module-dir) go mod download sigs.k8s.io/karpenter; go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter; exit 0 ;;
  --version) echo "$version"; exit 0 ;;
  ""|-h|--help) sed -n '2,22p' "${BASH_SOURCE[0]}"; exit 0 ;;
esac

build
scenario="$1"
export KARPY_SCENARIO="$scenario"
if [[ -n "${2:-}" ]]; then
  mkdir -p "$2"
  KARPY_EXPORT_DIR="$(cd "$2" && pwd)"
  export KARPY_EXPORT_DIR
fi
# The test binary runs in the package's own directory in `go test`; nothing here reads files.
exec "$bin" -test.run '^TestKarpyScenario$' -test.count 1 -test.benchtime "${KARPENTER_BENCHTIME:-1s}"
