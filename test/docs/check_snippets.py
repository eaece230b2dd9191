#!/usr/bin/env python3
"""Every C++ block shown in README.md and doc/*.md is code that compiles: its lines appear, in order and
contiguous, in a file under example/, test/ or include/ (indentation aside). A block that is not meant to be
compiled code (a signature sketch, a command line) uses another fence language, or follows the line
`<!-- snippet: sketch -->`. A CMake block is held to the same rule against the CMakeLists.txt and *.cmake files
under example/ and test/ (which the tests configure).
Usage: check_snippets.py SOURCE_DIR"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
def stripped(paths):
    """Each file as its list of stripped lines, blank lines dropped (the formatter may move them)."""
    out = []
    for p in paths:
        lines = [l.strip() for l in p.read_text(errors="replace").splitlines()]
        out.append((p, [l for l in lines if l]))
    return out

cpp_texts = stripped(p for d in ("example", "test", "include") for p in (root / d).rglob("*")
                     if p.suffix in (".cpp", ".hpp", ".h"))
cmake_texts = stripped(p for d in ("example", "test") for p in (root / d).rglob("*")
                       if p.name == "CMakeLists.txt" or p.suffix == ".cmake")
languages = {"```cpp": cpp_texts, "```cmake": cmake_texts}

def found(block, texts):
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
        fence = lines[i].strip()
        if fence in languages:
            sketch = i > 0 and lines[i - 1].strip() == "<!-- snippet: sketch -->"
            start = i + 1
            i += 1
            while i < len(lines) and lines[i].strip() != "```":
                i += 1
            block = lines[start:i]
            if not sketch and not found(block, languages[fence]):
                failures += 1
                print(f"{doc.relative_to(root)}:{start}: this {fence[3:]} block is not in example/, test/ or include/:")
                for l in block[:6]:
                    print("    " + l)
        i += 1
print(f"{failures} block(s) not from compiled or configured code")
sys.exit(1 if failures else 0)
