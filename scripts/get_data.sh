#!/usr/bin/env bash
# Gets a dataset the configs read, in the folder layout they read.
#
#   scripts/get_data.sh cifar10 [DIR] [--archive FILE]
#
# cifar10: downloads the official CIFAR-10 binary release
# (cifar-10-binary.tar.gz from https://www.cs.toronto.edu/~kriz/cifar.html,
# 162 MB), checks its MD5, extracts it and converts it with
# build/cifar10_to_folder into DIR/train/<class>/NNNN.jpg and
# DIR/test/<class>/NNNN.jpg (data_pipeline/cifar10_binary.h). DIR defaults to
# $VT_DATA_DIR/cifar10 when VT_DATA_DIR is set, else data/cifar10 in the
# repository: both are where the CIFAR-10 configs look (docs/training.md#data).
# --archive FILE uses a copy of cifar-10-binary.tar.gz downloaded elsewhere
# (for a machine without network); its MD5 is checked the same way.
#
# Environment: VT_CIFAR10_URL (another address of the same file),
# VT_CIFAR10_MD5 (the checksum expected; default the official release's),
# VT_BUILD_DIR (where cifar10_to_folder is; default build/).
# Exit 0 done or already there, 1 a failure (named), 2 usage.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
me=scripts/get_data.sh

usage() {
  echo "usage: $me cifar10 [DIR] [--archive FILE]" >&2
  echo "  DIR: where to write the image folder (default: \$VT_DATA_DIR/cifar10, else $repo/data/cifar10)" >&2
  echo "  --archive FILE: use this cifar-10-binary.tar.gz instead of downloading it" >&2
  exit 2
}
fail() {
  echo "$me: $*" >&2
  exit 1
}

dataset="" dir="" archive=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage ;;
    --archive) [ $# -ge 2 ] || usage; archive=$2; shift 2 ;;
    --archive=*) archive=${1#--archive=}; shift ;;
    -*) echo "$me: unknown option '$1'" >&2; usage ;;
    *)
      if [ -z "$dataset" ]; then dataset=$1
      elif [ -z "$dir" ]; then dir=$1
      else echo "$me: unexpected argument '$1'" >&2; usage
      fi
      shift ;;
  esac
done
[ -n "$dataset" ] || usage
[ "$dataset" = cifar10 ] || { echo "$me: unknown dataset '$dataset' (known: cifar10)" >&2; exit 2; }

url=${VT_CIFAR10_URL:-https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz}
want_md5=${VT_CIFAR10_MD5:-c32a1d4ab5d03f1284b67883e8d87530}
if [ -z "$dir" ]; then
  if [ -n "${VT_DATA_DIR:-}" ]; then dir=$VT_DATA_DIR/cifar10; else dir=$repo/data/cifar10; fi
fi
if [ -d "$dir/train" ] && [ -d "$dir/test" ]; then
  echo "$me: $dir already holds train/ and test/; nothing to do"
  exit 0
fi
[ -e "$dir" ] && fail "'$dir' exists but holds no train/ and test/; remove it or give another DIR"
if [ -n "$archive" ]; then
  [ -f "$archive" ] || fail "--archive '$archive' is not a file"
  archive=$(cd "$(dirname "$archive")" && pwd)/$(basename "$archive")
fi

tool=${VT_BUILD_DIR:-$repo/build}/cifar10_to_folder
[ -x "$tool" ] || fail "'$tool' is not built; build first (scripts/setup.sh, or cmake --build build --target cifar10_to_folder)"

mkdir -p "$(dirname "$dir")"
dir=$(cd "$(dirname "$dir")" && pwd)/$(basename "$dir")
work=$(mktemp -d "$(dirname "$dir")/.get_data_cifar10_XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ -z "$archive" ]; then
  archive=$work/cifar-10-binary.tar.gz
  echo "$me: downloading $url"
  ok=0
  if command -v curl >/dev/null 2>&1; then
    curl -fL --retry 2 --connect-timeout 20 -o "$archive" "$url" && ok=1
  elif command -v wget >/dev/null 2>&1; then
    wget -q --tries=2 --timeout=20 -O "$archive" "$url" && ok=1
  else
    python3 - "$url" "$archive" <<'EOF' && ok=1
import shutil, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=20) as r, open(sys.argv[2], "wb") as f:
    shutil.copyfileobj(r, f)
EOF
  fi
  if [ $ok -ne 1 ]; then
    cat >&2 <<EOF
$me: could not download $url (no network here?).
  On a machine with network, download that file (162 MB, MD5 $want_md5),
  copy it here and run:
    $me cifar10${dir:+ $dir} --archive PATH/cifar-10-binary.tar.gz
  Or point the configs at a CIFAR-10 image folder you already have:
  data.root=DIR on the command line, or VT_DATA_DIR=<folder holding cifar10/>.
EOF
    exit 1
  fi
fi

if command -v md5sum >/dev/null 2>&1; then
  got_md5=$(md5sum "$archive" | cut -d' ' -f1)
else
  got_md5=$(python3 -c 'import hashlib,sys; print(hashlib.md5(open(sys.argv[1],"rb").read()).hexdigest())' "$archive")
fi
[ "$got_md5" = "$want_md5" ] ||
  fail "'$archive' has MD5 $got_md5, expected $want_md5 (the official cifar-10-binary.tar.gz): a broken or different file; download it again"

echo "$me: extracting $(basename "$archive")"
tar -xzf "$archive" -C "$work" cifar-10-batches-bin ||
  fail "'$archive' could not be extracted, or holds no cifar-10-batches-bin/"
"$tool" "$work/cifar-10-batches-bin" "$dir"

# Where the configs will find it (core/config_paths.h).
if [ "$dir" != "$repo/data/cifar10" ] && [ "$dir" != "${VT_DATA_DIR:-/nonexistent}/cifar10" ]; then
  if [ "$(basename "$dir")" = cifar10 ]; then
    echo "$me: for the configs to find it: export VT_DATA_DIR=$(dirname "$dir") (or pass data.root=$dir)"
  else
    echo "$me: for the configs to find it: pass data.root=$dir (or name the folder cifar10 and set VT_DATA_DIR to its parent)"
  fi
fi
