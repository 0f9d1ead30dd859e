#!/bin/sh
# install-test.sh BUILD_DIR SOURCE_DIR [CMAKE]: installs the build into a
# temporary prefix, checks that README.md's C++ embedding example is
# consumer/main.cpp, builds it against the installed package with Ninja and
# runs it (compile a spec for gfx942, generate and load a bundle, find the
# kernel for n=512, k=128, m=7).
set -eu
build=$1
src=$2
cmake=${3:-cmake}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$cmake" --install "$build" --prefix "$tmp/prefix" --component mla-fp8 >/dev/null

mkdir "$tmp/consumer"
/usr/bin/python3 "$src/test/Install/readme-block.py" "$src/README.md" cpp \
  >"$tmp/consumer/main.cpp"
if ! diff -u "$src/test/Install/consumer/main.cpp" "$tmp/consumer/main.cpp"; then
  echo "install-test: README.md's C++ example differs from test/Install/consumer/main.cpp" >&2
  exit 1
fi
cp "$src/test/Install/consumer/CMakeLists.txt" "$tmp/consumer/"

"$cmake" -G Ninja -S "$tmp/consumer" -B "$tmp/build" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
ninja -C "$tmp/build" >/dev/null
out=$("$tmp/build/mla-fp8-consumer" "$tmp/bundle")
echo "$out"
echo "$out" | grep -q "mfma: yes"
echo "$out" | grep -q "^M=7: mla_fp8_n512_k128_.*_m1_16, grid"
