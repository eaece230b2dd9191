#!/usr/bin/env python3
"""Every public type has a doc comment: each class, struct, enum and alias (`using X = ...`) declared in the
public headers (include/redlock/ and its subfolders, except detail/ folders and `namespace detail` blocks) has a
comment right above it (`//` or `///` lines, a `template <...>` line may sit between), or a `///<` comment at the
end of its line. Forward declarations, friend declarations and specializations need none; public nested types
are checked too, private and protected ones are not.
Usage: check_public_docs.py SOURCE_DIR"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
headers = sorted(p for p in (root / "include" / "redlock").rglob("*.hpp") if "detail" not in p.parts)

DECLARATION = re.compile(
    r"^(?:(?P<key>class|struct)\s+(?P<record>[A-Za-z_]\w*)\b(?!\s*;|\s*::|\s*<)"
    r"|enum\s+(?:class\s+|struct\s+)?(?P<enum>[A-Za-z_]\w*)\b(?!\s*;|\s*::)"
    r"|using\s+(?P<alias>[A-Za-z_]\w*)\s*=)")
NAMESPACE = re.compile(r"^namespace\s+([\w:]*)\s*\{")


def code_of(line):
    """The line without its // comment and without the contents of string and character literals."""
    out, i, quote = [], 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
                out.append(c)
        elif c in "\"'":
            quote = c
            out.append(c)
        elif line.startswith("//", i):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)


def documented(lines, i):
    if "///<" in lines[i]:
        return True
    j = i - 1
    while j >= 0 and lines[j].strip().startswith("template"):
        j -= 1
    return j >= 0 and lines[j].strip().startswith("//")


failures = 0
for header in headers:
    lines = header.read_text().splitlines()
    # What each open brace belongs to: a namespace name, "class" or "struct" (with the access in force), or
    # "other" (functions, initializers, enums).
    scopes = []
    pending = None  # the scope the next "{" opens, from the declaration on this or an earlier line
    for i, raw in enumerate(lines):
        code = code_of(raw).strip()
        if not code or code.startswith("#"):
            continue
        access = re.match(r"^(public|private|protected)\s*:", code)
        if access and scopes and scopes[-1]["kind"] in ("class", "struct"):
            scopes[-1]["access"] = access.group(1)
            continue
        in_detail = any(s["kind"] in ("detail", "anonymous") or s["kind"].endswith("::detail") for s in scopes)
        in_body = any(s["kind"] == "other" for s in scopes)
        hidden = any(s.get("access", "public") != "public" for s in scopes)
        match = DECLARATION.match(code)
        if match and not code.startswith("friend") and not (in_detail or in_body or hidden):
            name = match.group("record") or match.group("enum") or match.group("alias")
            if not documented(lines, i):
                failures += 1
                print(f"{header.relative_to(root)}:{i + 1}: {name} has no doc comment above it")
        namespace = NAMESPACE.match(code)
        if namespace:
            pending = {"kind": namespace.group(1) or "anonymous"}
        elif match and match.group("record"):
            key = match.group("key")
            pending = {"kind": key, "access": "private" if key == "class" else "public"}
        elif match and match.group("enum"):
            pending = {"kind": "other"}
        for c in code:
            if c == "{":
                scopes.append(pending or {"kind": "other"})
                pending = None
            elif c == "}":
                if scopes:
                    scopes.pop()
        if code.endswith(";"):
            pending = None
print(f"{failures} public type(s) without a doc comment")
sys.exit(1 if failures else 0)
