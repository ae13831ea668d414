#!/usr/bin/env bash
# `cmake --install BUILD --prefix TMP`, then checks the installed layout
# (bin/vtrain, bin/dittrain, bin/veval, share/vtrain/configs/) and that the
# installed trainers find a config by name in TMP/share/vtrain/configs: its
# relative data.root resolves under TMP (where no data is), and the error
# names the installed config file.
#   install_check.sh BUILD_DIR
set -u
build=$1
prefix=$(mktemp -d "${TMPDIR:-/tmp}/vt_install_XXXXXX")
trap 'rm -rf "$prefix"' EXIT
if ! out=$(cmake --install "$build" --prefix "$prefix" 2>&1); then
  printf 'cmake --install failed:\n%s\n' "$out"
  exit 1
fi
fail=0
for f in bin/vtrain bin/dittrain bin/veval share/vtrain/configs/cifar10_vit_tiny_siamese.yaml \
         share/vtrain/configs/cifar10_dit_siamese.yaml share/vtrain/configs/deit_s_siamese.yaml; do
  [ -e "$prefix/$f" ] || { echo "not installed: $f"; fail=1; }
done
check() {  # check NAME CONFIG_NAME
  local cfg="$prefix/share/vtrain/configs/$2.yaml" out rc
  out=$("$prefix/bin/$1" "$2" out_dir="$prefix/runs" resume=never 2>&1)
  rc=$?
  if [ "$rc" != 1 ]; then echo "$1 $2: exit status $rc, expected 1"; fail=1; fi
  case "$out" in *"$cfg"*) ;; *) echo "$1 $2: output does not name $cfg"; fail=1 ;; esac
  case "$out" in *"$prefix/share/shared/data/cifar10"*) ;; *) echo "$1 $2: data.root not resolved under the prefix"; fail=1 ;; esac
  [ $fail -eq 0 ] || printf -- '--- output ---\n%s\n' "$out"
}
check vtrain cifar10_vit_tiny_siamese
check dittrain cifar10_dit_siamese
[ -e "$prefix/runs" ] && { echo "a run directory was left in $prefix/runs"; fail=1; }
[ $fail -eq 0 ] && echo "ok: installed into $prefix and found its configs"
exit $fail
