# Sourced by the tests/scripts/*_test.sh checks: `check DESCRIPTION COMMAND...`
# prints ok/FAIL and counts failures in $fails; `contains FILE TEXT` is true
# when FILE holds TEXT, else prints FILE for the log.
fails=0
check() {
  if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
contains() { grep -q -- "$2" "$1" || { echo "  '$2' not in $1:"; sed 's/^/  | /' "$1"; return 1; }; }
