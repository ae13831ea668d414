#!/usr/bin/env bash
# Runs a program the way a user does and checks what the user sees:
#   expect.sh RC SUBSTRING [--absent PATH] -- COMMAND [ARGS...]
# passes when COMMAND exits with RC, its stdout+stderr contains SUBSTRING,
# and PATH (if given) does not exist afterwards (no half-made run directory).
set -u
want_rc=$1 want_text=$2
shift 2
absent=""
if [ "${1:-}" = "--absent" ]; then absent=$2; shift 2; fi
[ "${1:-}" = "--" ] && shift
[ -n "$absent" ] && rm -rf "$absent"
out=$("$@" 2>&1)
rc=$?
fail=0
if [ "$rc" != "$want_rc" ]; then echo "exit status $rc, expected $want_rc"; fail=1; fi
case "$out" in *"$want_text"*) ;; *) echo "output lacks '$want_text'"; fail=1 ;; esac
if [ -n "$absent" ] && [ -e "$absent" ]; then echo "'$absent' exists after the command"; fail=1; fi
if [ $fail -ne 0 ]; then printf '%s\n--- output ---\n%s\n' "command: $*" "$out"; exit 1; fi
echo "ok: $* -> $rc"
