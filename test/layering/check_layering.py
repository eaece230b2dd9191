#!/usr/bin/env python3
"""The layering of doc/architecture.md, checked: every quoted #include in src/ (and every library a Lua script
includes) must point into a folder the including folder may use, public headers include only public headers, and
the examples only the public API.

usage: check_layering.py SOURCE_DIR     (exit 1 and one line per violation when a rule is broken)
"""
import pathlib
import re
import sys

# Who may include whom, by folder under src/ (a file may always include its own folder). "<x>" stands for every
# folder at that place. Data flows down: each layer sees only the layers below it.
BELOW = {
    "common": [],
    "resp": ["common"],
    "connection": ["common", "resp"],
    "cluster": ["common", "resp", "connection"],  # a Redis Cluster node: routes over connections
    "sentinel": ["common", "resp", "connection"],  # a Sentinel-managed master's node: follows it over connections
    "quorum": ["common", "resp", "connection", "cluster", "sentinel"],
    "primitives/common": ["common", "resp", "connection", "cluster", "sentinel", "quorum"],
    "primitives/<x>": ["common", "resp", "connection", "cluster", "sentinel", "quorum", "primitives/common"],
    "recipes/<x>": ["common"],  # a recipe composes primitives through their public headers
    "cli": [],  # the redlock tool: the public API only
}
# Public headers a folder must not use: the installed detail/ headers are for the library's own templates.
NO_DETAIL = {"cli"}

QUOTED = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LUA_INCLUDE = re.compile(r'^-- #include "([^"]+)"', re.M)
ANGLED = re.compile(r'^\s*#\s*include\s+<(redlock/[^>]+)>', re.M)


def folder_of(path: pathlib.Path, src: pathlib.Path) -> str:
    """The layer a file under src/ belongs to: 'resp', 'primitives/mutex', 'recipes/cache', 'cli'..."""
    parts = path.relative_to(src).parts[:-1]
    if parts[:1] in (("primitives",), ("recipes",)) and len(parts) >= 2:
        return "/".join(parts[:2])
    return parts[0] if parts else ""


def rule_of(folder: str) -> str:
    if folder in BELOW:
        return folder
    top = folder.split("/")[0]
    return top + "/<x>" if top + "/<x>" in BELOW else folder


def target_folder(include: str, path: pathlib.Path, src: pathlib.Path):
    """The folder an include points into, or None when it is no file of src/. "lua/<folder>.hpp" is generated
    (cmake/RedlockLua.cmake): the scripts of that folder."""
    generated = re.fullmatch(r"lua/(\w+)\.hpp", include)
    if generated:
        short = generated.group(1)
        for layer in ("primitives", "recipes"):
            if (src / layer / short).is_dir():
                return f"{layer}/{short}"
        return short
    for base in (src, path.parent):  # the include root first, then the including file's own folder
        candidate = (base / include).resolve()
        if candidate.is_file() and src.resolve() in candidate.parents:
            return folder_of(candidate, src.resolve())
    return None


def check(root: pathlib.Path) -> list:
    src = root / "src"
    problems = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".hpp", ".cpp", ".h", ".c"):
            continue
        text = path.read_text(encoding="utf-8")
        folder = folder_of(path, src)
        rule = rule_of(folder)
        if rule not in BELOW:
            problems.append(f"{path.relative_to(root)}: folder '{folder}' has no layering rule (add it to BELOW)")
            continue
        allowed = set(BELOW[rule]) | {folder}
        for include in QUOTED.findall(text):
            target = target_folder(include, path.resolve(), src)
            if target is None:
                problems.append(f"{path.relative_to(root)}: #include \"{include}\" is no file of src/")
            elif target not in allowed:
                problems.append(f"{path.relative_to(root)}: {folder} may not include {include} ({target})")
        if rule in NO_DETAIL:
            for include in ANGLED.findall(text):
                if include.startswith("redlock/detail/"):
                    problems.append(f"{path.relative_to(root)}: {folder} uses the public API only, not <{include}>")
    # A Lua script's libraries (-- #include "<path under src/>.lib.lua") keep the layers too.
    for path in sorted(src.rglob("*.lua")):
        folder = folder_of(path, src)
        allowed = set(BELOW.get(rule_of(folder), [])) | {folder}
        for include in LUA_INCLUDE.findall(path.read_text(encoding="utf-8")):
            target = target_folder(include, path.resolve(), src)
            if target is None:
                problems.append(f"{path.relative_to(root)}: -- #include \"{include}\" is no file of src/")
            elif target not in allowed:
                problems.append(f"{path.relative_to(root)}: {folder} may not include {include} ({target})")
    for path in sorted((root / "include" / "redlock").rglob("*.hpp")):
        for include in QUOTED.findall(path.read_text(encoding="utf-8")):
            problems.append(f"{path.relative_to(root)}: a public header includes \"{include}\" (use <redlock/...>)")
    for path in sorted((root / "example").rglob("*")):
        if path.suffix not in (".hpp", ".cpp"):
            continue
        text = path.read_text(encoding="utf-8")
        for include in QUOTED.findall(text):
            if not (path.parent / include).is_file():
                problems.append(f"{path.relative_to(root)}: an example includes \"{include}\" from outside example/")
        for include in ANGLED.findall(text):
            if include.startswith("redlock/detail/"):
                problems.append(f"{path.relative_to(root)}: an example uses the public API only, not <{include}>")
    return problems


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problems = check(pathlib.Path(sys.argv[1]))
    for p in problems:
        print(p)
    print(f"layering: {len(problems)} violation(s)" if problems else "layering: every include keeps its layer")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
