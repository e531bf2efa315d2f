#!/usr/bin/env bash
# Every relative link of README.md and doc/*.md resolves: the file (or
# folder) it names exists in the source tree, and a #fragment into a
# Markdown page names one of that page's headings (GitHub's anchors).
# Links inside code blocks and code spans are not links. Prints TAP, one
# test per page. Run by make check; by hand, from the source tree:
# tests/tools/test_doc_links.sh
set -u
top=${srcdir:-$(dirname "$0")/../..}
cd "$top" || exit 1

py=/usr/bin/python3
command -v "$py" >/dev/null 2>&1 || py=python3
if ! command -v "$py" >/dev/null 2>&1; then
    echo "1..0 # SKIP no python3 to read the pages"
    exit 0
fi

exec "$py" - README.md doc/*.md <<'EOF'
import os
import re
import sys

FENCE = re.compile(r'^\s*(```|~~~)')
SPAN = re.compile(r'(`+)(?:(?!\1).)+?\1')
# [text](target "title") and ![alt](target); reference definitions [x]: target
INLINE = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')
HEADING = re.compile(r'^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$')


def lines_outside_code(text):
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(title):
    # GitHub: lower case, drop what is neither a letter, a digit, a space,
    # '-' nor '_', spaces to '-'; code spans and links count as their text.
    title = re.sub(r'`([^`]*)`', r'\1', title)
    title = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', title)
    title = title.strip().lower()
    title = ''.join(c for c in title if c.isalnum() or c in ' -_')
    return title.replace(' ', '-')


anchor_cache = {}


def anchors(path):
    if path not in anchor_cache:
        seen = {}
        found = set()
        with open(path, encoding='utf-8') as f:
            for _, line in lines_outside_code(f.read()):
                m = HEADING.match(line)
                if not m:
                    continue
                base = slug(m.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else '%s-%d' % (base, count))
        anchor_cache[path] = found
    return anchor_cache[path]


def problems(page):
    with open(page, encoding='utf-8') as f:
        text = f.read()
    here = os.path.dirname(page)
    for number, line in lines_outside_code(text):
        targets = [m.group(1) for m in INLINE.finditer(SPAN.sub('', line))]
        m = REFDEF.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target):
                continue  # http:, https:, mailto: ...: not ours to check
            path, _, fragment = target.partition('#')
            full = os.path.normpath(os.path.join(here, path)) if path else page
            if not os.path.exists(full):
                yield '%s:%d: %s: no such file' % (page, number, target)
            elif fragment and full.endswith('.md') and fragment not in anchors(full):
                yield '%s:%d: %s: no such heading in %s' % (page, number, target, full)


failed = 0
pages = sys.argv[1:]
for n, page in enumerate(pages, 1):
    bad = list(problems(page))
    if bad:
        failed = 1
        print('not ok %d - relative links of %s resolve' % (n, page))
        for b in bad:
            print('# ' + b)
    else:
        print('ok %d - relative links of %s resolve' % (n, page))
print('1..%d' % len(pages))
sys.exit(failed)
EOF
