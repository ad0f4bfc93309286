#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler from Debian's
# `kubernetes` source package, offline, the way Debian's own debian/rules does, and
# caches them outside the repository keyed by version. Idempotent: with the cache
# present it only checks etcd and returns. Needs root (or sudo) for apt-get.
#
#   KUBE_CACHE_DIR   where the binaries go (default ${XDG_CACHE_HOME:-~/.cache}/cornserve)
#   KUBE_VERSION     the Debian source version to build (default 1.20.2)
set -euo pipefail

version="${KUBE_VERSION:-1.20.2}"
cache_root="${KUBE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cornserve}"
out="$cache_root/kubernetes-$version"
servers=(kube-apiserver kube-controller-manager kube-scheduler)

say() { printf 'kube-binaries: %s\n' "$*" >&2; }
sudo_() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_updated=0
need_pkg() { # need_pkg <command> <debian package>
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$apt_updated" = 0 ]; then say "apt-get update"; sudo_ apt-get update -qq; apt_updated=1; fi
  say "installing $2 (for $1)"
  sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}

# etcd is a run-time need of the local cluster, installed even when the build is cached.
need_pkg etcd etcd-server

have_all=1
for s in "${servers[@]}"; do [ -x "$out/$s" ] || have_all=0; done
if [ "$have_all" = 1 ]; then
  say "cached: $out (${servers[*]})"
  exit 0
fi

need_pkg go golang-go
need_pkg rsync rsync
need_pkg jq jq
need_pkg dpkg-source dpkg-dev

# apt-get source needs a deb-src entry; Debian 12 images ship deb822 sources without one.
if ! grep -rqs -e '^Types:.*deb-src' -e '^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  say "adding a deb-src entry for bookworm (/etc/apt/sources.list.d/debian-src.sources)"
  sudo_ tee /etc/apt/sources.list.d/debian-src.sources >/dev/null <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  sudo_ apt-get update -qq
fi

work="$cache_root/build-kubernetes-$version"
mkdir -p "$work"
cd "$work"
# Bookworm's source version is "1.20.5+really1.20.2": the tree unpacks as kubernetes-1.20.5+really1.20.2.
tree="$(find . -maxdepth 1 -type d -name "kubernetes-*$version*" | head -n1)"
if [ -z "$tree" ]; then
  say "fetching the Debian source of kubernetes $version into $work"
  apt-get source -qq kubernetes
  tree="$(find . -maxdepth 1 -type d -name "kubernetes-*$version*" | head -n1)"
fi
[ -n "$tree" ] || { say "no source tree after apt-get source"; exit 1; }
tree="$(cd "$tree" && pwd)"

# Debian's rules: a GOPATH whose k8s.io/kubernetes is the tree, no cgo, the tree's own Makefile.
# (A plain `go build -mod=vendor` fails on go.mod consistency with Debian's Go.)
mkdir -p "$tree/.go/src/k8s.io"
ln -sfn "$tree" "$tree/.go/src/k8s.io/kubernetes"
mkdir -p "$out"
for s in "${servers[@]}"; do
  [ -x "$out/$s" ] && continue
  say "building $s (kube-apiserver takes 6-10 minutes on two busy cores)"
  start=$(date +%s)
  (cd "$tree/.go/src/k8s.io/kubernetes" &&
    GOPATH="$tree/.go" GO111MODULE=off GOFLAGS= CGO_ENABLED=0 KUBE_GIT_VERSION="v$version" \
      nice -n 19 make WHAT="cmd/$s" >"$work/$s.log" 2>&1) || {
    say "building $s failed; the last lines of $work/$s.log:"; tail -n 30 "$work/$s.log" >&2; exit 1; }
  bin="$(find "$tree/_output" -type f -name "$s" -perm -u+x | head -n1)"
  [ -n "$bin" ] || { say "$s built but not found under $tree/_output"; exit 1; }
  cp "$bin" "$out/$s.tmp" && mv "$out/$s.tmp" "$out/$s"
  say "built $s in $(( $(date +%s) - start )) s"
done
say "done: $out"
say "the build tree $work can be removed to free about 1 GB"
