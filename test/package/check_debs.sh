#!/usr/bin/env bash
# test/package/check_debs.sh BUILD_DIR: checks the Debian packages that `cpack` made in BUILD_DIR (scripts/dev
# package --check runs it on build/release; scripts/dev test runs that after its release build).
#
# Nothing is installed into the system: both packages are extracted (dpkg-deb -x) into a scratch root,
# BUILD_DIR/package-test/root, as apt would lay them out under /. Then:
#   1. the control fields: names, version (the project's), architecture (dpkg's), maintainer, section, description;
#      the Depends of libredlock-dev, and those dpkg-shlibdeps found for redlock, name installed packages;
#   2. the contents: everything under /usr; libredlock-dev holds every header of include/redlock/ and no other, the
#      static library and the CMake package; redlock holds /usr/bin/redlock alone; no file in both;
#      files owned by root, mode 0644 (0755 for the CLI);
#   3. relocatable: no file of the CMake package or the headers names the source or the build tree, nor does the
#      CMake package name an absolute /usr/ path;
#   4. test/consumer configured against the root's usr (find_package(redlock CONFIG), found there and not
#      elsewhere), built, run;
#   5. the extracted redlock: its shared libraries resolve, --version prints the package's version, --help works.
# Every failed check is reported; the exit status is 1 when one failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

log() { printf '==> %s\n' "$*" >&2; }
die() {
    printf '==> error: %s\n' "$*" >&2
    exit 1
}

FAILED=0
fail() {
    printf '==> package check FAILED: %s\n' "$*" >&2
    FAILED=$((FAILED + 1))
}

(($# == 1)) || die "usage: test/package/check_debs.sh BUILD_DIR (a build tree where cpack ran)"
BDIR=$(cd "$1" && pwd)
[[ -f $BDIR/CPackConfig.cmake ]] || die "$BDIR/CPackConfig.cmake not found: not a configured build tree"
command -v dpkg-deb >/dev/null || die "dpkg-deb not found"

# A variable of the CPack configuration, as CMake wrote it: set(NAME "value").
cpack_var() { sed -nE "s/^set\($1 \"(.*)\"\)$/\1/p" "$BDIR/CPackConfig.cmake" | head -n 1; }
# A variable of the build tree's cache.
cache_var() { sed -nE "s/^$1:[A-Z]+=(.*)$/\1/p" "$BDIR/CMakeCache.txt" | head -n 1; }

VERSION=$(cpack_var CPACK_PACKAGE_VERSION)-$(cpack_var CPACK_DEBIAN_PACKAGE_RELEASE)
PKG_DIR=$(cpack_var CPACK_PACKAGE_DIRECTORY)
ARCH=$(dpkg --print-architecture)
DEV=$PKG_DIR/libredlock-dev_${VERSION}_$ARCH.deb
CLI=$PKG_DIR/redlock_${VERSION}_$ARCH.deb
for deb in "$DEV" "$CLI"; do
    [[ -f $deb ]] || die "$deb not found (scripts/dev package makes it)"
done
WORK=$BDIR/package-test
ROOTFS=$WORK/root
rm -rf "$WORK"
mkdir -p "$ROOTFS"

# ---- 1. control fields
field() { dpkg-deb -f "$1" "$2"; }

# The package names of a Depends line, versions and alternatives dropped, one a line.
depends_names() { sed -E 's/[,|]/\n/g' <<<"$1" | sed -E 's/\(.*\)//; s/:any//; s/^ +//; s/ +$//' | sed '/^$/d'; }

check_control() {
    local deb=$1 name=$2 section=$3 f
    [[ $(field "$deb" Package) == "$name" ]] || fail "$deb: Package is '$(field "$deb" Package)', not $name"
    [[ $(field "$deb" Version) == "$VERSION" ]] || fail "$deb: Version is '$(field "$deb" Version)', not $VERSION"
    [[ $(field "$deb" Architecture) == "$ARCH" ]] ||
        fail "$deb: Architecture is '$(field "$deb" Architecture)', not $ARCH (dpkg --print-architecture)"
    [[ $(field "$deb" Section) == "$section" ]] || fail "$deb: Section is '$(field "$deb" Section)', not $section"
    for f in Maintainer Description Installed-Size; do
        [[ -n $(field "$deb" "$f") ]] || fail "$deb: no $f field"
    done
    local synopsis
    synopsis=$(field "$deb" Description | head -n 1)
    ((${#synopsis} <= 80)) || fail "$deb: the Description's first line is ${#synopsis} characters (80 at most)"
    # Every dependency is a package this machine has installed (it built the packages with them): a typo in a
    # name, or a dependency that dpkg-shlibdeps could not map to a package, fails here.
    local dep
    while IFS= read -r dep; do
        [[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$dep" 2>/dev/null) == ii* ]] ||
            fail "$deb: depends on '$dep', which is no installed package"
    done < <(depends_names "$(field "$deb" Depends)")
}

# has_depends DEB NAME...: each NAME is among DEB's dependencies.
has_depends() {
    local deb=$1 names want
    shift
    names=$(depends_names "$(field "$deb" Depends)")
    for want in "$@"; do
        grep -qxF "$want" <<<"$names" || fail "$deb: Depends lacks $want (Depends: $(field "$deb" Depends))"
    done
}

check_control "$DEV" libredlock-dev libdevel
has_depends "$DEV" libboost1.81-dev libboost-url1.81-dev libssl-dev
check_control "$CLI" redlock utils
# From dpkg-shlibdeps: the C and C++ runtimes, OpenSSL, Boost.ProgramOptions (shared in Debian's Boost).
has_depends "$CLI" libc6 libstdc++6 libssl3 libboost-program-options1.81.0

# ---- 2. contents
# The regular files of a package, as absolute paths, sorted.
files_of() { dpkg-deb --fsys-tarfile "$1" | tar -t | grep -v '/$' | sed 's|^\./|/|' | sort; }

dev_files=$(files_of "$DEV")
cli_files=$(files_of "$CLI")
outside=$(grep -v '^/usr/' <<<"$dev_files"$'\n'"$cli_files" | sed '/^$/d' || true)
[[ -z $outside ]] || fail "files outside /usr: $outside"

# The headers: exactly those of include/redlock/ (a header left out of the install rules, or one that should not
# ship, fails here before the consumer's build would).
want_headers=$(cd "$ROOT/include" && find redlock -type f | sed 's|^|/usr/include/|' | sort)
have_headers=$(grep '^/usr/include/' <<<"$dev_files" || true)
if [[ $want_headers != "$have_headers" ]]; then
    fail "libredlock-dev's headers differ from include/redlock/ (< source only, > package only):
$(diff <(echo "$want_headers") <(echo "$have_headers") | grep '^[<>]' | head -n 20)"
fi
libdir=$(sed -nE 's|^/usr/(lib(/[^/]+)?)/libredlock\.a$|\1|p' <<<"$dev_files")
if [[ -z $libdir ]]; then
    fail "libredlock-dev has no /usr/lib/libredlock.a (nor /usr/lib/<multiarch>/libredlock.a)"
    libdir=lib
fi
for f in redlockConfig.cmake redlockConfigVersion.cmake redlockTargets.cmake; do
    grep -qxF "/usr/$libdir/cmake/redlock/$f" <<<"$dev_files" || fail "libredlock-dev lacks /usr/$libdir/cmake/redlock/$f"
done
others=$(grep -vE "^/usr/include/redlock/|^/usr/$libdir/libredlock\.a$|^/usr/$libdir/cmake/redlock/" <<<"$dev_files" || true)
[[ -z $others ]] || fail "libredlock-dev holds unexpected files: $others"
[[ $cli_files == /usr/bin/redlock ]] || fail "redlock should hold /usr/bin/redlock alone, not: $(tr '\n' ' ' <<<"$cli_files")"
# Owned by root, files 0644 but the CLI 0755 (what lintian would say first).
while read -r mode owner _ _ _ path; do
    [[ $path == */ ]] && continue
    want=-rw-r--r--
    [[ $path == ./usr/bin/* ]] && want=-rwxr-xr-x
    [[ $owner == root/root && $mode == "$want" ]] || fail "${path#.}: $mode $owner, not $want root/root"
done < <(dpkg-deb -c "$DEV"; dpkg-deb -c "$CLI")
both=$(comm -12 <(echo "$dev_files") <(echo "$cli_files"))
[[ -z $both ]] || fail "files in both packages (they could not be installed together): $both"

# ---- 3. relocatable: extract, then look for the trees' paths
dpkg-deb -x "$DEV" "$ROOTFS"
dpkg-deb -x "$CLI" "$ROOTFS"
for tree in "$ROOT" "$BDIR"; do
    leaks=$(grep -rlF "$tree" "$ROOTFS/usr/$libdir/cmake" "$ROOTFS/usr/include" || true)
    [[ -z $leaks ]] || fail "these installed files name $tree (not relocatable): ${leaks//$ROOTFS/}"
done
# The CMake package finds its files from where it lies (PACKAGE_PREFIX_DIR, _IMPORT_PREFIX), never by an absolute
# prefix: extracted here, a /usr/... path would find nothing, or another installed copy.
leaks=$(grep -rlE '(^|[" ;=])/usr/' "$ROOTFS/usr/$libdir/cmake" || true)
[[ -z $leaks ]] || fail "these CMake package files name an absolute /usr/ path (not relocatable): ${leaks//$ROOTFS/}"

# ---- 4. the consumer project against the root
run_step() {
    local what=$1 out
    shift
    if out=$("$@" 2>&1); then
        log "package check: $what: ok"
        return 0
    fi
    fail "$what: $*"$'\n'"$(tail -n 40 <<<"$out")"
    return 1
}

consumer_build=$WORK/consumer
configure_args=(-G "$(cache_var CMAKE_GENERATOR)" -DCMAKE_CXX_COMPILER="$(cache_var CMAKE_CXX_COMPILER)")
make_program=$(cache_var CMAKE_MAKE_PROGRAM)
[[ -z $make_program ]] || configure_args+=(-DCMAKE_MAKE_PROGRAM="$make_program")
if run_step "configure test/consumer with CMAKE_PREFIX_PATH=$ROOTFS/usr" \
    cmake -S "$ROOT/test/consumer" -B "$consumer_build" "${configure_args[@]}" \
    -DCMAKE_PREFIX_PATH="$ROOTFS/usr" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF; then
    found=$(sed -nE 's/^redlock_DIR:PATH=(.*)$/\1/p' "$consumer_build/CMakeCache.txt")
    if [[ $(realpath -m "$found") != "$ROOTFS"/usr/* ]]; then
        fail "the consumer found redlock in '$found', not in the extracted package under $ROOTFS/usr"
    elif run_step "build test/consumer" cmake --build "$consumer_build"; then
        run_step "run the consumer" "$consumer_build/redlock_consumer" || true
    fi
fi

# ---- 5. the CLI
redlock=$ROOTFS/usr/bin/redlock
missing=$(ldd "$redlock" 2>&1 | grep 'not found' || true)
[[ -z $missing ]] || fail "$redlock: shared libraries not found: $missing"
if version=$("$redlock" --version 2>&1); then
    [[ $version == "redlock $(cpack_var CPACK_PACKAGE_VERSION)" ]] ||
        fail "redlock --version prints '$version', not 'redlock $(cpack_var CPACK_PACKAGE_VERSION)'"
else
    fail "redlock --version failed: $version"
fi
if help=$("$redlock" --help 2>&1); then
    [[ $help == usage:\ redlock* ]] || fail "redlock --help prints no usage: $(head -n 3 <<<"$help")"
else
    fail "redlock --help failed: $help"
fi

if ((FAILED)); then
    printf '==> package check: %d check(s) failed (scratch root: %s)\n' "$FAILED" "$ROOTFS" >&2
    exit 1
fi
log "package check: $(basename "$DEV") and $(basename "$CLI"): control fields, contents, relocatable CMake" \
    "package, consumer built and run from $ROOTFS, redlock --version/--help: all good"
