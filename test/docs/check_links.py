#!/usr/bin/env python3
"""Every relative link of the documentation leads somewhere: in README.md, doc/*.md and the examples' README.md
files, each Markdown link that is not a URL names a file or folder of the tree, and its #anchor, if any, a heading
of the Markdown file it names (GitHub's slugs: lower case, punctuation dropped, spaces to hyphens, -1, -2 for
repeats). Links inside code blocks and code spans are not links.
Usage: check_links.py SOURCE_DIR"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1]).resolve()
pages = [root / "README.md", *sorted((root / "doc").glob("*.md")), *sorted((root / "example").glob("*/README.md"))]

LINK = re.compile(r"\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def outside_code_blocks(text):
    """The numbered lines outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(page, cache={}):
    if page not in cache:
        seen, found = {}, set()
        for _, line in outside_code_blocks(page.read_text(encoding="utf-8")):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        cache[page] = found
    return cache[page]


problems = []
for page in pages:
    for number, line in outside_code_blocks(page.read_text(encoding="utf-8")):
        for m in LINK.finditer(re.sub(r"`[^`]*`", "``", line)):  # a link's text may not hold a code span then

            target = m.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
                continue
            path_part, _, anchor = target.partition("#")
            dest = page if not path_part else (page.parent / path_part).resolve()
            where = f"{page.relative_to(root)}:{number}"
            if not dest.exists():
                problems.append(f"{where}: {target}: no such file")
                continue
            if anchor and dest.suffix == ".md" and anchor not in anchors_of(dest):
                problems.append(f"{where}: {target}: no heading '#{anchor}' in {dest.relative_to(root)}")

for p in problems:
    print(p)
print(f"{len(pages)} pages checked, {len(problems)} broken links")
sys.exit(1 if problems else 0)
