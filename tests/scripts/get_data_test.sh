#!/usr/bin/env bash
# scripts/get_data.sh cifar10 on a small archive in the official release's
# format (cifar-10-binary.tar.gz: cifar-10-batches-bin/ with data_batch_1..5.bin,
# test_batch.bin of 3073-byte records, batches.meta.txt), made here:
# the folder it writes, a second run, a wrong checksum, no network, bad usage.
#   get_data_test.sh BUILD_DIR
set -u
build=$1
script=$(cd "$(dirname "$0")/../.." && pwd)/scripts/get_data.sh
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vt_get_data_XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
export VT_BUILD_DIR=$build
unset VT_DATA_DIR VT_CIFAR10_URL VT_CIFAR10_MD5

# Training batch b holds 3 records with labels (b-1)%10, b%10 and 9; the test
# batch labels 0, 0, 1; the expected counts per class are written out below.
mkdir -p "$tmp/rel/cifar-10-batches-bin"
python3 - "$tmp/rel/cifar-10-batches-bin" <<'PY' || exit 1
import os, sys
d = sys.argv[1]
names = "airplane automobile bird cat deer dog frog horse ship truck".split()
with open(os.path.join(d, "batches.meta.txt"), "w") as f:
    f.write("\n".join(names) + "\n\n")
def rec(label, k):
    return bytes([label]) + bytes((k * 7 + i) % 256 for i in range(3072))
k = 0
for b in range(1, 6):
    data = b""
    for label in ((b - 1) % 10, b % 10, 9):
        data += rec(label, k); k += 1
    open(os.path.join(d, "data_batch_%d.bin" % b), "wb").write(data)
open(os.path.join(d, "test_batch.bin"), "wb").write(rec(0, 90) + rec(0, 91) + rec(1, 92))
PY
(cd "$tmp/rel" && tar -czf cifar-10-binary.tar.gz cifar-10-batches-bin) || exit 1
archive=$tmp/rel/cifar-10-binary.tar.gz
md5=$(md5sum "$archive" | cut -d' ' -f1)

# Labels per training batch: b1 0,1,9  b2 1,2,9  b3 2,3,9  b4 3,4,9  b5 4,5,9.
declare -A want_train=([airplane]=1 [automobile]=2 [bird]=2 [cat]=2 [deer]=2 [dog]=1 [frog]=0 [horse]=0 [ship]=0 [truck]=5)
declare -A want_test=([airplane]=2 [automobile]=1)

out=$(VT_CIFAR10_MD5=$md5 "$script" cifar10 "$tmp/data/cifar10" --archive "$archive" 2>&1); rc=$?
[ $rc -eq 0 ] || bad "conversion: exit $rc: $out"
for c in "${!want_train[@]}"; do
  n=$(find "$tmp/data/cifar10/train/$c" -name '*.jpg' 2>/dev/null | wc -l)
  [ "$n" -eq "${want_train[$c]}" ] || bad "train/$c holds $n JPEGs, expected ${want_train[$c]}"
  n=$(find "$tmp/data/cifar10/test/$c" -name '*.jpg' 2>/dev/null | wc -l)
  [ "$n" -eq "${want_test[$c]:-0}" ] || bad "test/$c holds $n JPEGs, expected ${want_test[$c]:-0}"
done
for f in train/truck/0000.jpg train/truck/0004.jpg test/airplane/0001.jpg; do
  [ -f "$tmp/data/cifar10/$f" ] || bad "$f missing"
  head -c 3 "$tmp/data/cifar10/$f" | od -An -tx1 | grep -q "ff d8 ff" || bad "$f is not a JPEG"
done
[ "$(ls -A "$tmp/data")" = cifar10 ] || bad "work files left beside the folder: $(ls -A "$tmp/data")"
case "$out" in *"export VT_DATA_DIR=$tmp/data"*) ;; *) bad "no VT_DATA_DIR hint: $out" ;; esac

out=$(VT_CIFAR10_MD5=$md5 "$script" cifar10 "$tmp/data/cifar10" --archive "$archive" 2>&1); rc=$?
[ $rc -eq 0 ] || bad "second run: exit $rc"
case "$out" in *"already holds train/ and test/"*) ;; *) bad "second run: $out" ;; esac

# The official checksum refuses this archive, and nothing is written.
out=$("$script" cifar10 "$tmp/x/cifar10" --archive "$archive" 2>&1); rc=$?
[ $rc -eq 1 ] || bad "wrong MD5: exit $rc"
case "$out" in *"has MD5 $md5, expected c32a1d4ab5d03f1284b67883e8d87530"*) ;; *) bad "wrong MD5: $out" ;; esac
[ -e "$tmp/x/cifar10" ] && bad "wrong MD5: $tmp/x/cifar10 was written"

# No network: a refused connection says so and how to hand the archive over.
out=$(VT_CIFAR10_URL=http://127.0.0.1:9/cifar-10-binary.tar.gz "$script" cifar10 "$tmp/y/cifar10" 2>&1); rc=$?
[ $rc -eq 1 ] || bad "no network: exit $rc"
case "$out" in *"could not download http://127.0.0.1:9/cifar-10-binary.tar.gz (no network here?)"*"--archive PATH/cifar-10-binary.tar.gz"*) ;;
  *) bad "no network: $out" ;; esac

out=$("$script" imagenet 2>&1); rc=$?
[ $rc -eq 2 ] || bad "unknown dataset: exit $rc"
case "$out" in *"unknown dataset 'imagenet' (known: cifar10)"*) ;; *) bad "unknown dataset: $out" ;; esac
out=$(VT_BUILD_DIR=$tmp/nobuild "$script" cifar10 "$tmp/z/cifar10" --archive "$archive" 2>&1); rc=$?
[ $rc -eq 1 ] || bad "no build: exit $rc"
case "$out" in *"cifar10_to_folder' is not built"*) ;; *) bad "no build: $out" ;; esac

[ $fail -eq 0 ] && echo "ok: get_data.sh cifar10"
exit $fail
