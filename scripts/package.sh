#!/usr/bin/env bash
# Builds what users install, from a clean checkout, into dist/:
#   gpuclean_<version>_<arch>.deb               for Debian 12 (CPack; Depends from dpkg-shlibdeps)
#   gpuclean-<version>-linux-<machine>.tar.gz    a relocatable tree for any glibc Linux: bin/,
#                                                lib/ (prometheus-cpp's core library, found
#                                                through an $ORIGIN run path), share/
#   gpuclean-<version>-py3-none-any.whl          the Python package and pytest plugin (python/),
#                                                for a gpuclean installed another way
#   gpuclean-<version>-py3-none-manylinux_2_NN_<machine>.whl
#                                                the same with the tarball's gpuclean in it
#                                                (scripts/lib/platform_wheel.py)
#   SHA256SUMS
#
#   scripts/package.sh [--build-dir DIR] [--out DIR]
#
# --build-dir reuses a configured build directory (./test.sh passes its own, so CI does not
# compile gpuclean twice); by default a fresh build-package/ with the tests off.
# tests/packaging/run.sh checks the result (install, run, remove; the tarball unpacked under a
# path with a space, with the system's prometheus-cpp hidden).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=build-package
out=dist
while (($#)); do
  case "$1" in
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift 2 ;;
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    *) echo "usage: scripts/package.sh [--build-dir DIR] [--out DIR]" >&2; exit 2 ;;
  esac
done

scripts/setup.sh --package >&2
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DGPUCLEAN_TESTS=OFF >/dev/null
fi
# Everything the install rules take: the binary, its man page, completions and changelog.
cmake --build "$build_dir" -j "$(nproc)" --target gpuclean gpuclean_completions gpuclean_man \
  gpuclean_changelog
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build_dir/CMakeCache.txt")
# Release files carry the commit's time, not the build's (reproducible tarballs).
SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
export SOURCE_DATE_EPOCH

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- the .deb -------------------------------------------------------------------------------
(cd "$build_dir" && cpack -G DEB -B "$work/cpack" >&2)
deb=$(find "$work/cpack" -maxdepth 1 -name "gpuclean_${version}_*.deb")
[ -n "$deb" ] || { echo "package: cpack wrote no gpuclean_${version}_*.deb" >&2; exit 1; }
cp "$deb" "$out/"

# --- the tarball ----------------------------------------------------------------------------
name=gpuclean-$version-linux-$(uname -m)
tree=$work/$name
cmake --install "$build_dir" --prefix "$tree" --strip >/dev/null
cp LICENSE "$tree/share/doc/gpuclean/"
# Debian's lintian overrides are the .deb's business, not a tarball's (issue 50).
rm -rf "$tree/share/lintian"
# What a person who unpacked it reads first: how to run it from where it is.
cat >"$tree/README" <<README
gpuclean $version: find, explain and clean up whatever holds your GPUs.

Run it from where it was unpacked (it finds its lib/ by itself):

  $name/bin/gpuclean                # the GPUs' status: who holds what, and what is wrong

or put it on your PATH, with its manual and bash completion:

  export PATH="\$PWD/$name/bin:\$PATH"
  export MANPATH="\$PWD/$name/share/man:\$(manpath 2>/dev/null)"
  source $name/share/bash-completion/completions/gpuclean

Systemd units (lib/systemd/system/), the Slurm prolog/epilog (share/gpuclean/slurm/; the epilog
needs jq) and Kubernetes examples (share/gpuclean/k8s/) are inside. Everything else: man
gpuclean, share/doc/gpuclean/README.md, and gpuclean --help.
README

# Bundled: every shared library the binary loads that is not part of the base system every
# glibc Linux has (the C library, libstdc++ and libgcc_s, zlib). On Debian that is told by the
# package each library comes from.
base_packages=" libc6 libstdc++6 libgcc-s1 zlib1g "
mkdir -p "$tree/lib"
bundled=()
while read -r library; do
  package=$(dpkg -S "$(readlink -f "$library")" 2>/dev/null | head -n 1 | cut -d: -f1) || package=
  [ -n "$package" ] || package=$(dpkg -S "$library" | head -n 1 | cut -d: -f1)
  case "$base_packages" in *" $package "*) continue ;; esac
  cp -L "$library" "$tree/lib/$(basename "$library")"
  bundled+=("$(basename "$library")")
done < <(ldd "$tree/bin/gpuclean" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
# DT_RPATH (not RUNPATH) on the binary: it also applies to the libraries' own dependencies
# (none today: libprometheus-cpp-core needs only the base system; until issue 33 the pull
# library needed -core and civetweb), and the bundled libraries find each other through their
# own $ORIGIN.
patchelf --force-rpath --set-rpath "\$ORIGIN/../lib" "$tree/bin/gpuclean"
for library in "${bundled[@]}"; do
  chmod 0644 "$tree/lib/$library"
  strip --strip-unneeded "$tree/lib/$library"
  patchelf --set-rpath "\$ORIGIN" "$tree/lib/$library"
done
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
  -C "$work" -czf "$out/$name.tar.gz" "$name"

# What the tarball asks of the host: the newest glibc and libstdc++ symbol versions it uses.
floor() {
  objdump -T "$tree/bin/gpuclean" "$tree"/lib/*.so* | grep -o "$1_[0-9.]*" | sort -uV | tail -n 1
}
glibc_floor=$(floor GLIBC)
glibcxx_floor=$(floor GLIBCXX)

# --- the Python package (python/): a wheel, pure Python, built offline with Debian's setuptools
rm -rf python/build # pip builds in the tree; a stale build directory would be packed as well
rm -f "$out"/gpuclean-*-py3-none-any.whl
# Debian's interpreter: its setuptools and wheel build it (a python3 earlier on PATH may lack both).
/usr/bin/python3 -m pip wheel --quiet --no-build-isolation --no-index --no-deps --wheel-dir "$out" \
  ./python >&2
wheel=$(find "$out" -maxdepth 1 -name "gpuclean-${version}-py3-none-any.whl")
[ -n "$wheel" ] || { echo "package: pip wrote no gpuclean-${version}-py3-none-any.whl" >&2; exit 1; }

# --- the platform wheel: the same package, with the tarball's gpuclean as its script (pip puts it
# in the environment's bin/) and the bundled libraries as data in lib/gpuclean/; tagged with the
# tarball's glibc floor, so pip on an older glibc takes the pure wheel instead.
rm -f "$out"/gpuclean-*-manylinux_*.whl
manylinux=manylinux_$(tr . _ <<<"${glibc_floor#GLIBC_}")_$(uname -m)
cp "$tree/bin/gpuclean" "$work/gpuclean-wheel"
patchelf --force-rpath --set-rpath "\$ORIGIN/../lib/gpuclean" "$work/gpuclean-wheel"
platform_wheel=$(/usr/bin/python3 scripts/lib/platform_wheel.py "$wheel" "$work/gpuclean-wheel" \
  "$out" "py3-none-$manylinux" "${bundled[@]/#/$tree/lib/}")

(cd "$out" && sha256sum "$(basename "$deb")" "$name.tar.gz" "$(basename "$wheel")" \
  "$(basename "$platform_wheel")" >SHA256SUMS)
echo "package: $out/$(basename "$deb")"
echo "package: $out/$name.tar.gz (bundles ${bundled[*]:-nothing}; needs $glibc_floor" \
  "and, for the bundled libraries, $glibcxx_floor)"
echo "package: $wheel (the Python package and pytest plugin; gpuclean installed another way)"
echo "package: $platform_wheel (the same, with gpuclean itself: pip install is the whole install)"
echo "package: $out/SHA256SUMS"
