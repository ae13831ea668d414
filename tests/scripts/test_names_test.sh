#!/usr/bin/env bash
# Every CTest name is the same from build to build (ctest scripts.test_names):
# no name carries the value GoogleTest prints for a test's parameter
# ("# GetParam() = 48-byte object <30-E6 ...>": bytes, a pointer among them),
# and no two tests share a name.
#   usage: test_names_test.sh CTEST BUILD_DIR
set -uo pipefail
CTEST=$1 BUILD=$2
names=$("$CTEST" --test-dir "$BUILD" -N | sed -n 's/^ *Test *#[0-9]*: //p')
[ -n "$names" ] || { echo "FAIL no tests listed in $BUILD"; exit 1; }
bad=$(grep -E '#|GetParam|byte object' <<<"$names" || true)
if [ -n "$bad" ]; then
  echo "FAIL names that carry a parameter's printed value:"
  sed 's/^/  /' <<<"$bad" | head -20
  exit 1
fi
dups=$(sort <<<"$names" | uniq -d)
if [ -n "$dups" ]; then
  echo "FAIL names listed more than once:"
  sed 's/^/  /' <<<"$dups" | head -20
  exit 1
fi
echo "ok   $(wc -l <<<"$names") test names, none with a printed parameter, none twice"
