#!/usr/bin/env python3
"""Checks that every relative link in README.md and docs/ resolves.

    check_links.py ROOT          # README.md and docs/**/*.md under ROOT
    check_links.py --self-test   # the checker on a made-up tree with known faults

A link is [text](target) or ![alt](target) outside code; http(s), mailto and
other URL schemes are not followed. A target must name an existing file or
folder relative to the page; a #fragment on a Markdown target (or on the page
itself) must be one of its headings' anchors under GitHub's rules (lower
case, punctuation other than '-' and '_' dropped, spaces to '-', a repeated
heading gets -1, -2, ...) or an explicit <a name="..."> / id="...". Exit 1
listing every broken link as FILE:LINE: target: reason.
"""
import os
import re
import sys
import tempfile

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.I)


def strip_code(line):
    """The line with inline code spans blanked (links inside them are text)."""
    return re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)


def prose_lines(text):
    """(line number, line) outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if m:
            if fence is None:
                fence = m.group(1)[0] * len(m.group(1))
                continue
            if line.strip().startswith(fence):
                fence = None
                continue
        if fence is None:
            yield n, line


def slug(heading_text):
    """GitHub's anchor for a heading's text."""
    t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading_text)  # links: their text
    t = re.sub(r"<[^>]+>", "", t)  # inline HTML tags
    t = t.replace("`", "").lower()
    t = "".join(c for c in t if c.isalnum() or c in " -_")
    return t.replace(" ", "-")


def anchors(path):
    seen = {}
    out = set()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for _, line in prose_lines(text):
        m = HEADING.match(line)
        if m:
            s = slug(m.group(2))
            k = seen.get(s, 0)
            out.add(s if k == 0 else "%s-%d" % (s, k))
            seen[s] = k + 1
        out.update(EXPLICIT_ANCHOR.findall(line))
    return out


def pages(root):
    files = [os.path.join(root, "README.md")]
    for d, _, names in os.walk(os.path.join(root, "docs")):
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
    return [f for f in files if os.path.isfile(f)]


def check(root, files=None):
    errors = []
    cache = {}
    for page in files or pages(root):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        rel = os.path.relpath(page, root)
        for n, line in prose_lines(text):
            for m in LINK.finditer(strip_code(line)):
                target = m.group(1)
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
                    continue  # http:, https:, mailto:
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
                if not os.path.exists(dest):
                    errors.append("%s:%d: %s: %s does not exist" % (rel, n, target, os.path.relpath(dest, root)))
                    continue
                if frag and dest.endswith(".md"):
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if frag not in cache[dest]:
                        errors.append("%s:%d: %s: no heading with anchor '#%s' in %s" %
                                      (rel, n, target, frag, os.path.relpath(dest, root)))
    return errors


def self_test():
    """The checker finds exactly the faults planted in a small tree."""
    expect_slugs = {
        "3. SiameseNorm": "3-siamesenorm",
        "`veval fid --features CKPT`: a classifier as the FID embedding": "veval-fid---features-ckpt-a-classifier-as-the-fid-embedding",
        "How it works: the training scaffold": "how-it-works-the-training-scaffold",
        "Data-parallel training over processes_and nodes": "data-parallel-training-over-processes_and-nodes",
        "t = 0 term": "t--0-term",
    }
    fails = ["slug(%r) = %r, expected %r" % (h, slug(h), s) for h, s in expect_slugs.items() if slug(h) != s]
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs", "img"))
        open(os.path.join(root, "docs", "img", "a.png"), "wb").close()
        with open(os.path.join(root, "docs", "page.md"), "w") as f:
            f.write("# Page\n\n## Twice\n\n## Twice\n\n<a name=\"custom\"></a>\n"
                    "[up](../README.md#readme-head) [self](#twice-1) ![img](img/a.png)\n"
                    "[bad self](#twice-2)\n"  # line 9: fault
                    "```\n[in fence](nowhere.md)\n```\n"
                    "`[in code](nowhere.md)` [web](https://example.com/x.md#y) [custom](#custom)\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# README head\n\n"
                    "[ok](docs/page.md#twice) [folder](docs/img)\n"
                    "[missing file](docs/nope.md)\n"  # line 4: fault
                    "[missing anchor](docs/page.md#thrice)\n")  # line 5: fault
        got = sorted(e.split(": ")[0] for e in check(root))
        want = ["README.md:4", "README.md:5", "docs/page.md:9"]
        if got != want:
            fails.append("faults found at %s, planted at %s" % (got, want))
    for f in fails:
        print("self-test: " + f)
    print("self-test: %s" % ("FAILED" if fails else "ok"))
    return 1 if fails else 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = os.path.abspath(argv[1])
    files = pages(root)
    errors = check(root, files)
    for e in errors:
        print(e)
    print("%d pages, %d broken links" % (len(files), len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
