#!/usr/bin/env bash
# `PROG --version` for vtrain, dittrain and veval:
#   version_check.sh SOURCE_DIR VERSION BUILD_TYPE NVCC|none PROGRAM...
# Each program exits 0 and prints "NAME VERSION", a commit of SOURCE_DIR's
# repository (or "unknown" outside git), the build type, and the CUDA
# version nvcc reports (a CUDA build) or "none" (a CPU build, where cuDNN and
# NCCL are "none" too); `PROG --help` names --version.
set -u
src=$1 version=$2 build_type=$3 nvcc=$4
shift 4
fail=0
bad() { echo "$1"; fail=1; }
want_cuda=none
if [ "$nvcc" != none ]; then
  # "Cuda compilation tools, release 12.4, V12.4.131" -> 12.4.131
  want_cuda=$("$nvcc" --version | sed -n 's/.*, V\([0-9.]*\).*/\1/p')
fi
for prog in "$@"; do
  name=$(basename "$prog")
  out=$("$prog" --version 2>&1)
  rc=$?
  [ $rc -eq 0 ] || bad "$name --version: exit $rc"
  line() { printf '%s\n' "$out" | sed -n "$1p"; }
  [ "$(line 1)" = "$name $version" ] || bad "$name --version: first line '$(line 1)', expected '$name $version'"
  commit=$(printf '%s\n' "$out" | sed -n 's/^commit: //p')
  hash=${commit%+changes}
  if [ "$commit" = unknown ]; then
    ! git -C "$src" rev-parse HEAD >/dev/null 2>&1 || bad "$name --version: commit unknown in a git checkout"
  elif ! printf '%s' "$hash" | grep -Eq '^[0-9a-f]{12}$'; then
    bad "$name --version: commit '$commit' is not 12 hex digits"
  elif ! git -C "$src" cat-file -e "$hash^{commit}" 2>/dev/null; then
    bad "$name --version: commit '$hash' is not a commit of $src"
  fi
  [ "$(line 3)" = "build type: $build_type" ] || bad "$name --version: '$(line 3)', expected 'build type: $build_type'"
  [ "$(line 4)" = "CUDA: $want_cuda" ] || bad "$name --version: '$(line 4)', expected 'CUDA: $want_cuda'"
  if [ "$want_cuda" = none ]; then
    [ "$(line 5)" = "cuDNN: none" ] || bad "$name --version: '$(line 5)' in a CPU build"
    [ "$(line 6)" = "NCCL: none" ] || bad "$name --version: '$(line 6)' in a CPU build"
  else
    printf '%s\n' "$(line 5)" | grep -Eq '^cuDNN: ([0-9]+\.[0-9]+\.[0-9]+|not found|off .*)$' || bad "$name --version: '$(line 5)'"
    printf '%s\n' "$(line 6)" | grep -Eq '^NCCL: ([0-9]+\.[0-9]+\.[0-9]+|not found)$' || bad "$name --version: '$(line 6)'"
  fi
  "$prog" --help 2>&1 | grep -q -- "$name --version" || bad "$name --help does not name '$name --version'"
  [ $fail -eq 0 ] && echo "ok: $name --version"
done
if [ $fail -ne 0 ]; then printf -- '--- last output ---\n%s\n' "$out"; exit 1; fi
