#!/usr/bin/env bash
# Builds the libtrainrt DEB and RPM packages, lints them, installs the .debs (runtime, dev, cli,
# and mpi when the MPI module is built) on this machine, builds and runs examples/c/train.c against them through pkg-config and through
# find_package(trainrt), runs the installed `trainrt`, then purges everything and checks that
# nothing is left. The CUDA package is inspected only (never installed). RPMs: contents and
# requirements are checked, and an `rpm --root` install into a scratch root is tried.
#   usage (as root, from the repository root): tests/packaging/install_test.sh [BUILD_DIR]
#   BUILD_DIR defaults to build-pkg and is wiped first unless KEEP_BUILD=1.
# Lint output is printed; the warnings we keep are allow-listed below (docs/PACKAGING.md says why);
# any other lintian/rpmlint warning or error fails the test.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${1:-build-pkg}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
JOBS=${JOBS:-$(nproc)}
START=$(date +%s)
SCRATCH=$(mktemp -d /tmp/trainrt-pkgtest.XXXXXX)
DEB_PKGS=(trainrt libtrainrt-dev libtrainrt0)      # removal order
FAILED=0

say()  { printf '\n=== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "run as root (dpkg -i / dpkg --purge)"
for tool in cmake cpack apt-get dpkg dpkg-deb rpm rpmbuild lintian rpmlint pkg-config cc ldconfig; do
    command -v "$tool" >/dev/null || fail "missing tool: $tool"
done
for p in "${DEB_PKGS[@]}" libtrainrt-cuda0 libtrainrt-mpi0; do
    if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q installed; then
        fail "$p is already installed; this test installs and purges it (remove it first)"
    fi
done

cleanup() {
    local rc=$?
    set +e
    for p in "${DEB_PKGS[@]}"; do
        if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok'; then
            echo "cleanup: purging $p"; dpkg --purge "$p" >/dev/null
        fi
    done
    if [ -s "$SCRATCH/pulled-in.txt" ]; then
        echo "cleanup: purging dependencies pulled in: $(tr '\n' ' ' <"$SCRATCH/pulled-in.txt")"
        DEBIAN_FRONTEND=noninteractive xargs -r dpkg --purge <"$SCRATCH/pulled-in.txt" >/dev/null
    fi
    rm -rf "$SCRATCH"
    echo "install_test: $([ $rc = 0 ] && echo PASSED || echo "FAILED (rc=$rc)") in $(( $(date +%s) - START ))s"
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- build + package
say "configure + build in $BUILD"
[ "${KEEP_BUILD:-0}" = 1 ] || rm -rf "$BUILD"
# The default prefix (/usr/local), as a user's own build has: the packages must still install
# under /usr (packaging.cmake).
# Where nvcc exists the CUDA module is built (and packaged) though this machine has no GPU:
# TRAINRT_CUDA=AUTO would leave it out without an NVIDIA driver.
cuda=()
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then cuda=(-DTRAINRT_CUDA=ON); fi
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release "${cuda[@]}" \
    -DTRAINRT_BUILD_TESTS=OFF -DCMAKE_CUDA_ARCHITECTURES=90-real >"$BUILD.configure.log" 2>&1 \
    || { cat "$BUILD.configure.log"; fail "configure"; }
cmake --build "$BUILD" -j "$JOBS" >"$BUILD.build.log" 2>&1 || { tail -50 "$BUILD.build.log"; fail "build"; }
HAVE_CUDA=0
[ -f "$BUILD/libtrainrt-cuda.so" ] && HAVE_CUDA=1
echo "CUDA module built: $HAVE_CUDA"
HAVE_MPI=0
[ -f "$BUILD/libtrainrt-mpi.so" ] && HAVE_MPI=1
echo "MPI module built: $HAVE_MPI"

say "cpack DEB + RPM"
rm -rf "$BUILD/packages"
(cd "$BUILD" && cpack -G DEB >"$BUILD.cpack-deb.log" 2>&1) || { cat "$BUILD.cpack-deb.log"; fail "cpack -G DEB"; }
(cd "$BUILD" && cpack -G RPM >"$BUILD.cpack-rpm.log" 2>&1) || { cat "$BUILD.cpack-rpm.log"; fail "cpack -G RPM"; }
PKGDIR=$BUILD/packages
ls -l "$PKGDIR"/*.deb "$PKGDIR"/*.rpm
ARCH=$(dpkg --print-architecture)
VER=0.1.0-1
deb() { local f="$PKGDIR/${1}_${VER}_${ARCH}.deb"; [ -f "$f" ] || fail "missing package $f"; echo "$f"; }
rpmf() { local f; f=$(ls "$PKGDIR/$1"-0.1.0-1.*.rpm 2>/dev/null | head -1); [ -n "$f" ] || fail "missing rpm $1"; echo "$f"; }
DEB_RUNTIME=$(deb libtrainrt0) DEB_DEV=$(deb libtrainrt-dev) DEB_CLI=$(deb trainrt)
RPM_RUNTIME=$(rpmf libtrainrt0) RPM_DEV=$(rpmf libtrainrt-dev) RPM_CLI=$(rpmf trainrt)
DEBS=("$DEB_RUNTIME" "$DEB_DEV" "$DEB_CLI") RPMS=("$RPM_RUNTIME" "$RPM_DEV" "$RPM_CLI")
if [ $HAVE_CUDA = 1 ]; then
    DEB_CUDA=$(deb libtrainrt-cuda0) RPM_CUDA=$(rpmf libtrainrt-cuda0)
    DEBS+=("$DEB_CUDA") RPMS+=("$RPM_CUDA")
fi
if [ $HAVE_MPI = 1 ]; then
    DEB_MPI=$(deb libtrainrt-mpi0) RPM_MPI=$(rpmf libtrainrt-mpi0)
    DEBS+=("$DEB_MPI") RPMS+=("$RPM_MPI")
    DEB_PKGS=(libtrainrt-mpi0 "${DEB_PKGS[@]}")  # installed too; removed first
fi

# From here on a pipeline's status is its last command's: `producer | grep -q` must not fail
# when grep exits early and the producer gets SIGPIPE.
set +o pipefail

# ---------------------------------------------------------------- lint
# Allow-list: "<package>: <tag>" patterns (extended regex, matched against the whole tag line
# minus its severity letter). Reasons: docs/PACKAGING.md, "Lint warnings kept".
LINTIAN_ALLOW=(
    '^(libtrainrt0|libtrainrt-dev|trainrt|libtrainrt-cuda0|libtrainrt-mpi0): initial-upload-closes-no-bugs '
    '^(libtrainrt0|libtrainrt-cuda0|libtrainrt-mpi0): maintainer-script-empty \[post(inst|rm)\]$'
    '^libtrainrt-mpi0: sharedobject-in-library-directory-missing-soname \[usr/lib/[^/]+/libtrainrt-mpi\.so\]$'
    '^libtrainrt-cuda0: custom-library-search-path RUNPATH /usr/local/cuda[^ ]* \[usr/lib/[^/]+/libtrainrt-cuda\.so\]$'
    '^libtrainrt-cuda0: sharedobject-in-library-directory-missing-soname \[usr/lib/[^/]+/libtrainrt-cuda\.so\]$'
)
RPMLINT_ALLOW=(
    '^(libtrainrt0|libtrainrt-dev|trainrt|libtrainrt-cuda0|libtrainrt-mpi0)\.[a-z0-9_]+: E: no-signature$'
    '^(libtrainrt0|libtrainrt-dev|trainrt|libtrainrt-cuda0|libtrainrt-mpi0)\.[a-z0-9_]+: W: invalid-license LicenseRef-Proprietary$'
    '^libtrainrt0\.[a-z0-9_]+: W: one-line-command-in-%post(un)? /sbin/ldconfig$'
    '^libtrainrt-dev\.[a-z0-9_]+: W: only-non-binary-in-usr-lib$'
    '^libtrainrt-dev\.[a-z0-9_]+: E: no-binary$'
    '^libtrainrt-dev\.[a-z0-9_]+: E: no-dependency-on locales-dev$'
    '^trainrt\.[a-z0-9_]+: W: manpage-not-compressed bz2 /usr/share/man/man1/trainrt\.1\.gz$'
    '^trainrt\.[a-z0-9_]+: W: no-manual-page-for-binary trainrt$'
    '^libtrainrt-cuda0\.[a-z0-9_]+: E: binary-or-shlib-defines-rpath /usr/lib/[^ ]+/libtrainrt-cuda\.so \(RUNPATH: /usr/local/cuda[^)]*\)$'
)
filter() {  # stdin: lint lines; $1...: allow patterns; prints the lines not allowed
    local line pat ok
    while IFS= read -r line; do
        ok=0
        for pat in "$@"; do
            if printf '%s\n' "$line" | grep -Eq -- "$pat"; then ok=1; break; fi
        done
        [ $ok = 1 ] || printf '%s\n' "$line"
    done
}

say "lintian"
LINT_OUT=$SCRATCH/lintian.txt
lintian --no-cfg --suppress-tags-from-file /dev/null "${DEBS[@]}" >"$LINT_OUT" 2>&1 || true
cat "$LINT_OUT"
BAD=$(grep -E '^[EW]: ' "$LINT_OUT" | sed -E 's/^[EW]: //' | filter "${LINTIAN_ALLOW[@]}" || true)
[ -z "$BAD" ] || { printf 'not allow-listed:\n%s\n' "$BAD"; fail "lintian"; }
grep -q '^[EW]: ' "$LINT_OUT" || echo "(lintian: no warnings or errors)"

say "rpmlint"
RPMLINT_OUT=$SCRATCH/rpmlint.txt
rpmlint "${RPMS[@]}" >"$RPMLINT_OUT" 2>&1 || true
cat "$RPMLINT_OUT"
BAD=$(grep -E ': [EW]: ' "$RPMLINT_OUT" | filter "${RPMLINT_ALLOW[@]}" || true)
[ -z "$BAD" ] || { printf 'not allow-listed:\n%s\n' "$BAD"; fail "rpmlint"; }

# ---------------------------------------------------------------- package metadata + contents
say "DEB metadata and contents"
field() { dpkg-deb -f "$1" "$2"; }
contents() { dpkg-deb -c "$1" | awk '{print $6}' | sed 's#^\./#/#'; }
expect_file() {  # PACKAGE_FILE LISTING REGEX
    grep -Eq "$3" <<<"$2" || fail "$(basename "$1"): no file matching $3"
}
for f in "${DEBS[@]}"; do
    echo "--- $(basename "$f")"; dpkg-deb -I "$f" | sed -n '/Package:/,$p'
    [ "$(field "$f" Maintainer)" = "libtrainrt developers <dev@libtrainrt.invalid>" ] || fail "$f: Maintainer"
    [ "$(field "$f" Homepage)" = "https://github.com/libtrainrt/trainrt" ] || fail "$f: Homepage"
    ! contents "$f" | grep -q '^/usr/local' || fail "$(basename "$f"): files under /usr/local"
done
L=$(contents "$DEB_RUNTIME"); echo "$L"
expect_file "$DEB_RUNTIME" "$L" '^/usr/lib/[^/]+/libtrainrt\.so\.0\.1\.0$'
expect_file "$DEB_RUNTIME" "$L" '^/usr/lib/[^/]+/libtrainrt\.so\.0$'
! grep -Eq 'libtrainrt\.so$|/include/' <<<"$L" || fail "runtime package carries dev files"
dpkg-deb --ctrl-tarfile "$DEB_RUNTIME" | tar -tf - | grep -q '^\./triggers$' || fail "runtime: no triggers"
dpkg-deb -e "$DEB_RUNTIME" "$SCRATCH/ctrl-runtime"
grep -qx 'activate-noawait ldconfig' "$SCRATCH/ctrl-runtime/triggers" || fail "runtime: ldconfig trigger"
grep -Eq '^libtrainrt 0 libtrainrt0 \(>= 0\.1\.0-1\)$' "$SCRATCH/ctrl-runtime/shlibs" || fail "runtime: shlibs"
grep -q 'libc6' <<<"$(field "$DEB_RUNTIME" Depends)" || fail "runtime: Depends lacks libc6 (shlibdeps)"
# Built with SentencePiece (found, as install-deps.sh installs it): the library links it.
if ldd "$BUILD"/libtrainrt.so.0 2>/dev/null | grep -q libsentencepiece; then
    grep -q 'libsentencepiece0' <<<"$(field "$DEB_RUNTIME" Depends)" ||
        fail "runtime: links libsentencepiece but Depends lacks libsentencepiece0"
fi
# Built with oneDNN (found, as install-deps.sh installs it): the library links it.
if ldd "$BUILD"/libtrainrt.so.0 2>/dev/null | grep -q libdnnl; then
    grep -q 'libdnnl2' <<<"$(field "$DEB_RUNTIME" Depends)" ||
        fail "runtime: links libdnnl but Depends lacks libdnnl2"
fi
[ "$(field "$DEB_RUNTIME" Section)" = libs ] || fail "runtime: Section"
L=$(contents "$DEB_DEV"); echo "$L"
for re in '^/usr/include/trainrt/trainrt\.h$' '^/usr/include/trainrt/trainrt\.hpp$' \
          '^/usr/lib/[^/]+/libtrainrt\.so$' '^/usr/lib/[^/]+/pkgconfig/trainrt\.pc$' \
          '^/usr/lib/[^/]+/cmake/trainrt/trainrtConfig\.cmake$' \
          '^/usr/lib/[^/]+/cmake/trainrt/trainrtConfigVersion\.cmake$' \
          '^/usr/lib/[^/]+/cmake/trainrt/trainrtTargets\.cmake$'; do
    expect_file "$DEB_DEV" "$L" "$re"
done
! grep -Eq 'libtrainrt\.so\.0' <<<"$L" || fail "dev package carries the runtime library"
[ "$(field "$DEB_DEV" Depends)" = "libtrainrt0 (= $VER)" ] || fail "dev: Depends is '$(field "$DEB_DEV" Depends)'"
[ "$(field "$DEB_DEV" Section)" = libdevel ] || fail "dev: Section"
L=$(contents "$DEB_CLI"); echo "$L"
for re in '^/usr/bin/trainrt$' '^/usr/share/man/man1/trainrt\.1\.gz$' '^/usr/share/doc/trainrt/trainrt-help\.txt$' \
          '^/usr/share/doc/trainrt/copyright$'; do
    expect_file "$DEB_CLI" "$L" "$re"
done
grep -q "libtrainrt0 (= $VER)" <<<"$(field "$DEB_CLI" Depends)" || fail "cli: Depends lacks libtrainrt0 (= $VER)"
if [ $HAVE_CUDA = 1 ]; then
    L=$(contents "$DEB_CUDA"); echo "$L"
    expect_file "$DEB_CUDA" "$L" '^/usr/lib/[^/]+/libtrainrt-cuda\.so$'
    [ "$(grep -c '\.so' <<<"$L")" = 1 ] || fail "cuda package carries other libraries"
    D=$(field "$DEB_CUDA" Depends); echo "cuda Depends: $D"
    grep -q "libtrainrt0 (= $VER)" <<<"$D" || fail "cuda: Depends lacks libtrainrt0 (= $VER)"
    ! grep -qi 'cublas\|cudart' <<<"$D" || fail "cuda: Depends names an undpkg'd CUDA library"
    [ "$(field "$DEB_CUDA" Recommends)" = "libcudnn9-cuda-13, libnccl2" ] || fail "cuda: Recommends"
fi

if [ $HAVE_MPI = 1 ]; then
    L=$(contents "$DEB_MPI"); echo "$L"
    expect_file "$DEB_MPI" "$L" '^/usr/lib/[^/]+/libtrainrt-mpi\.so$'
    [ "$(grep -c '\.so' <<<"$L")" = 1 ] || fail "mpi package carries other libraries"
    D=$(field "$DEB_MPI" Depends); echo "mpi Depends: $D"
    grep -q "libtrainrt0 (= $VER)" <<<"$D" || fail "mpi: Depends lacks libtrainrt0 (= $VER)"
    grep -q "libopenmpi" <<<"$D" || fail "mpi: Depends lacks Open MPI's library"
fi

say "RPM contents and requirements"
for f in "${RPMS[@]}"; do
    echo "--- $(basename "$f")"; rpm -qpi "$f" 2>/dev/null | grep -E '^(Name|Version|Release|License|URL|Summary)'
    echo "files:"; rpm -qpl "$f" | sed 's/^/  /'
    echo "requires:"; rpm -qpR "$f" | sed 's/^/  /'
    echo "provides:"; rpm -qp --provides "$f" | sed 's/^/  /'
    [ "$(rpm -qp --qf '%{LICENSE}' "$f")" = LicenseRef-Proprietary ] || fail "$f: License"
done
rpm -qpl "$RPM_RUNTIME" | grep -Eq '/libtrainrt\.so\.0\.1\.0$' || fail "rpm runtime: library"
rpm -qpl "$RPM_RUNTIME" | grep -Eq '/libtrainrt\.so$' && fail "rpm runtime: carries the namelink"
rpm -qp --provides "$RPM_RUNTIME" | grep -q '^libtrainrt\.so\.0()' || fail "rpm runtime: soname not provided"
rpm -qpl "$RPM_DEV" | grep -Eq '/include/trainrt/trainrt\.h$' || fail "rpm dev: header"
rpm -qpl "$RPM_DEV" | grep -Eq '/cmake/trainrt/trainrtConfig\.cmake$' || fail "rpm dev: cmake config"
rpm -qpl "$RPM_DEV" | grep -Eq '/pkgconfig/trainrt\.pc$' || fail "rpm dev: pc file"
rpm -qpR "$RPM_DEV" | grep -qx 'libtrainrt0 = 0.1.0' || fail "rpm dev: Requires libtrainrt0"
rpm -qpl "$RPM_CLI" | grep -q '^/usr/bin/trainrt$' || fail "rpm cli: binary"
rpm -qpR "$RPM_CLI" | grep -qx 'libtrainrt0 = 0.1.0' || fail "rpm cli: Requires libtrainrt0"
rpm -qpR "$RPM_CLI" | grep -q '^libtrainrt\.so\.0()' || fail "rpm cli: Requires libtrainrt.so.0"
for f in "${RPMS[@]}"; do
    # (/usr/lib/.build-id/ entries are rpmbuild's debug links, shared by design)
    ! rpm -qpl "$f" | grep -v '/\.build-id' | grep -Eqx '/usr(/lib(/[^/]+)?|/lib64|/include|/bin|/share(/doc|/man(/man1)?)?)?' \
        || fail "$(basename "$f") owns a system directory"
done
if [ $HAVE_CUDA = 1 ]; then
    rpm -qpl "$RPM_CUDA" | grep -Eq '/libtrainrt-cuda\.so$' || fail "rpm cuda: module"
    rpm -qpR "$RPM_CUDA" | grep -qx 'libtrainrt0 = 0.1.0' || fail "rpm cuda: Requires libtrainrt0"
fi

if [ $HAVE_MPI = 1 ]; then
    rpm -qpl "$RPM_MPI" | grep -Eq '/libtrainrt-mpi\.so$' || fail "rpm mpi: module"
    rpm -qpR "$RPM_MPI" | grep -qx 'libtrainrt0 = 0.1.0' || fail "rpm mpi: Requires libtrainrt0"
fi

say "rpm --root install into a scratch root (runtime, dev, cli)"
RPMROOT=$SCRATCH/rpmroot
mkdir -p "$RPMROOT"
if rpm --root "$RPMROOT" --initdb 2>/dev/null &&
   rpm --root "$RPMROOT" --nodeps --noscripts -i "$RPM_RUNTIME" "$RPM_DEV" "$RPM_CLI" >"$SCRATCH/rpm-i.log" 2>&1; then
    for p in usr/bin/trainrt usr/include/trainrt/trainrt.h; do
        [ -e "$RPMROOT/$p" ] || fail "rpm --root: $p missing"
    done
    ls "$RPMROOT"/usr/lib/*/libtrainrt.so.0.1.0 >/dev/null || fail "rpm --root: library missing"
    rpm --root "$RPMROOT" -qa | sort
    echo "rpm --root install: ok (files landed)"
else
    cat "$SCRATCH/rpm-i.log" 2>/dev/null
    echo "NOTE: rpm --root install did not work on this system (not a failure)"
fi

# ---------------------------------------------------------------- install the .debs
say "apt-get install ./runtime ./dev ./cli"
# apt (not plain dpkg -i) so that dependencies that are not installed yet come from the archive
# (e.g. the libopenblas0 metapackage named by dpkg-shlibdeps); whatever it pulls in is purged too.
dpkg-query -W -f='${Package}\n' | sort >"$SCRATCH/before.txt"
INSTALL_DEBS=("$DEB_RUNTIME" "$DEB_DEV" "$DEB_CLI")
[ $HAVE_MPI = 0 ] || INSTALL_DEBS+=("$DEB_MPI")
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${INSTALL_DEBS[@]}" \
    || fail "apt-get install of the .debs"
dpkg-query -W -f='${Package}\n' | sort >"$SCRATCH/after.txt"
comm -13 "$SCRATCH/before.txt" "$SCRATCH/after.txt" | grep -vxE 'libtrainrt0|libtrainrt-dev|trainrt|libtrainrt-mpi0' \
    >"$SCRATCH/pulled-in.txt" || true
echo "pulled in as dependencies: $(tr '\n' ' ' <"$SCRATCH/pulled-in.txt")"
for p in "${DEB_PKGS[@]}"; do dpkg -L "$p" >"$SCRATCH/files-$p.txt"; done
ldconfig -p | grep -q 'libtrainrt\.so\.0 ' || fail "ldconfig cache lacks libtrainrt.so.0 after install"
pkg-config --exists trainrt || fail "pkg-config does not find trainrt"
[ "$(pkg-config --modversion trainrt)" = 0.1.0 ] || fail "pkg-config version"
echo "pkg-config: $(pkg-config --cflags --libs trainrt)"

# The example's run: tests/examples/run_example_c.sh (data, config, checks) with the installed
# trainrt, plus a check that the binary really uses the installed library.
run_example() {  # EXE DIR
    bash "$SRC/tests/examples/run_example_c.sh" "$1" "$(command -v trainrt)" "$SRC" "$2" ||
        fail "$1 failed"
    ldd "$1" | grep -Eq 'libtrainrt\.so\.0 => (/usr)?/lib/' || fail "$1 does not use the installed library"
}

say "examples/c/train.c with pkg-config"
W=$SCRATCH/pc
mkdir -p "$W"
cc -Wall -o "$W/train_c" "$SRC/examples/c/train.c" $(pkg-config --cflags --libs trainrt)
run_example "$W/train_c" "$W/run"

say "examples/c/train.c with find_package(trainrt 0.1)"
W=$SCRATCH/cm
mkdir -p "$W/proj"
cp "$SRC/examples/c/train.c" "$W/proj/"
cat > "$W/proj/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(trainrt_consumer C)
find_package(trainrt 0.1 REQUIRED)
add_executable(app train.c)
target_link_libraries(app PRIVATE trainrt::trainrt)
CMAKE
cmake -S "$W/proj" -B "$W/proj/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$W/proj/build" >/dev/null
run_example "$W/proj/build/app" "$W/run"
# SameMajorVersion: a 1.x request must not be satisfied by 0.1.0
sed -i 's/find_package(trainrt 0.1 REQUIRED)/find_package(trainrt 1.0 REQUIRED)/' "$W/proj/CMakeLists.txt"
if cmake -S "$W/proj" -B "$W/proj/build1" >/dev/null 2>&1; then fail "find_package(trainrt 1.0) accepted 0.1.0"; fi
echo "find_package(trainrt 1.0) rejected, as it should be"

say "installed trainrt on the demo config (3 steps)"
W=$SCRATCH/demo
mkdir -p "$W/examples/configs" "$W/examples/data"   # the config's paths are relative to it
cp "$SRC/examples/configs/shakespeare.toml" "$W/examples/configs/"
/usr/bin/trainrt prepare --text "$SRC/examples/data/tinyshakespeare.txt" \
    --out "$W/examples/data/shakespeare" --val-fraction 0.1
(cd "$W" && /usr/bin/trainrt train examples/configs/shakespeare.toml --steps 3 --set runtime.log_every=1) \
    || fail "trainrt train on the demo config"
ls "$W/out/shakespeare" | grep -q . || fail "trainrt train wrote no checkpoint"
if [ $HAVE_MPI = 1 ] && command -v mpirun >/dev/null; then
    say "installed trainrt on 2 ranks (mpirun, libtrainrt-mpi0)"
    root=(); [ "$(id -u)" != 0 ] || root=(--allow-run-as-root)
    (cd "$W" && mpirun "${root[@]}" --oversubscribe -np 2 /usr/bin/trainrt train \
        examples/configs/shakespeare.toml --fresh --steps 2 --set runtime.log_every=1 \
        --set train.out_dir=out/two >"$SCRATCH/mpirun.log" 2>&1) ||
        { cat "$SCRATCH/mpirun.log"; fail "mpirun -np 2 trainrt train"; }
    grep -q '\[rank 0/2\]' "$SCRATCH/mpirun.log" || { cat "$SCRATCH/mpirun.log"; fail "mpirun: not 2 ranks"; }
    echo "2 ranks trained: $(grep -c '^step' "$SCRATCH/mpirun.log") step lines"
fi
man -l /usr/share/man/man1/trainrt.1.gz >/dev/null 2>&1 || zcat /usr/share/man/man1/trainrt.1.gz | grep -q '^\.TH TRAINRT 1' \
    || fail "man page"

# ---------------------------------------------------------------- remove + check
say "dpkg --purge and leftovers"
dpkg --purge "${DEB_PKGS[@]}"
for p in "${DEB_PKGS[@]}"; do
    while IFS= read -r f; do
        if [ -f "$f" ] || [ -L "$f" ]; then fail "$f (from $p) is left after purge"; fi
    done <"$SCRATCH/files-$p.txt"
done
if compgen -G '/usr/lib/*/libtrainrt*' >/dev/null || compgen -G '/usr/lib/libtrainrt*' >/dev/null; then
    fail "libtrainrt files left in /usr/lib"
fi
[ ! -e /usr/lib/x86_64-linux-gnu/cmake/trainrt ] || fail "cmake/trainrt directory left"
[ ! -e /usr/include/trainrt ] || fail "/usr/include/trainrt left"
if ldconfig -p | grep -q libtrainrt; then fail "ldconfig cache still lists libtrainrt"; fi
echo "nothing left"
