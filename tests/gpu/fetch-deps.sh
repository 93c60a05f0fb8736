#!/usr/bin/env bash
# Run where Debian's archive is reachable (a CI or dev machine), before tests/gpu/run.sh goes to
# a GPU machine that has no MPI: downloads Debian's Open MPI source package into gpu-deps/
# (git-ignored; carry it with the tree, about 7 MB). run.sh builds it there with --with-cuda,
# which gives that machine an MPI that is CUDA-aware, so mpi_cuda_aware is exercised too.
# Uses a private apt source list and state (deb-src of the running release): the system's apt
# configuration is not touched.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=$PWD/gpu-deps
mkdir -p "$out"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?no VERSION_CODENAME in /etc/os-release}")
state=$(mktemp -d)
trap 'rm -rf "$state"' EXIT
mkdir -p "$state/lists/partial"
echo "deb-src http://deb.debian.org/debian $codename main" > "$state/src.list"
apt_opts=(-q -o "Dir::Etc::SourceList=$state/src.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$state/lists")
apt-get "${apt_opts[@]}" update
(cd "$out" && apt-get "${apt_opts[@]}" source --download-only openmpi)
ls -la "$out"
