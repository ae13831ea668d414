#!/usr/bin/env python3
"""The programs' --help and the README name the same commands.

    check_help.py README.md PROGRAM_PATH...   (vtrain, dittrain, veval)

For each program, the subcommands its `--help` usage lines name
(`dittrain sample ...`) must be those the README's code (code spans and
fenced blocks) names (`dittrain sample`, `./build/dittrain sample ...`);
`PROG --help` and every `PROG SUB --help` must exit 0 and print the
subcommand's usage line. Exit 1 listing every difference.
"""
import os
import re
import subprocess
import sys


def usage_subcommands(prog, text):
    """Subcommands of `prog` in usage lines: `prog WORD` with WORD lower case."""
    subs = set()
    for line in text.split("\n"):
        for m in re.finditer(r"(?:^|[\s/])%s ([a-z][a-z0-9_-]*)(?=\s|$)" % re.escape(prog), line):
            subs.add(m.group(1))
    return subs


def readme_code(text):
    """The README's code: fenced blocks and inline code spans."""
    parts, fence = [], False
    for line in text.split("\n"):
        if re.match(r"^ {0,3}```", line):
            fence = not fence
            continue
        if fence:
            parts.append(line)
        else:
            parts += re.findall(r"`([^`]+)`", line)
    return "\n".join(parts)


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    code = readme_code(open(argv[1], encoding="utf-8").read())
    errors = []
    for path in argv[2:]:
        prog = os.path.basename(path)
        r = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            errors.append("%s --help: exit %d" % (prog, r.returncode))
        helped = usage_subcommands(prog, r.stdout + r.stderr)
        documented = usage_subcommands(prog, code)
        for s in sorted(helped - documented):
            errors.append("%s --help lists '%s %s', the README does not show it" % (prog, prog, s))
        for s in sorted(documented - helped):
            errors.append("the README shows '%s %s', %s --help does not list it" % (prog, s, prog))
        for s in sorted(helped):
            r = subprocess.run([path, s, "--help"], capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                errors.append("%s %s --help: exit %d: %s" % (prog, s, r.returncode, (r.stdout + r.stderr).strip()[:300]))
            elif "%s %s" % (prog, s) not in r.stdout:
                errors.append("%s %s --help: no usage line for '%s %s' on stdout" % (prog, s, prog, s))
        print("%s: subcommands %s" % (prog, sorted(helped) or "none"))
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
