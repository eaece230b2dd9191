#!/usr/bin/env python3
"""Every C++ block shown in README.md and doc/*.md is code that compiles: its lines appear, in order and
contiguous, in a file under example/, test/ or include/ (indentation aside). A block that is not meant to be
compiled code (a signature sketch, a command line) uses another fence language, or follows the line
`<!-- snippet: sketch -->`.
Usage: check_snippets.py SOURCE_DIR"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
sources = [p for d in ("example", "test", "include") for p in (root / d).rglob("*")
           if p.suffix in (".cpp", ".hpp", ".h")]
# Each source as its list of stripped lines, blank lines dropped (the formatter may move them).
texts = []
for p in sources:
    lines = [l.strip() for l in p.read_text(errors="replace").splitlines()]
    texts.append((p, [l for l in lines if l]))

def found(block):
    want = [l.strip() for l in block if l.strip()]
    if not want:
        return True
    for _, lines in texts:
        for i in range(len(lines) - len(want) + 1):
            if lines[i] == want[0] and lines[i:i + len(want)] == want:
                return True
    return False

failures = 0
docs = [root / "README.md"] + sorted((root / "doc").glob("*.md"))
for doc in docs:
    lines = doc.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```cpp":
            sketch = i > 0 and lines[i - 1].strip() == "<!-- snippet: sketch -->"
            start = i + 1
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            block = lines[start:i]
            if not sketch and not found(block):
                failures += 1
                print(f"{doc.relative_to(root)}:{start}: this C++ block is not in example/, test/ or include/:")
                for l in block[:6]:
                    print("    " + l)
        i += 1
print(f"{failures} block(s) not from compiled code")
sys.exit(1 if failures else 0)
