#!/bin/sh
# install-test.sh BUILD_DIR SOURCE_DIR [CMAKE]: installs the build into a
# temporary prefix, checks that README.md's two C++ embedding examples are
# consumer/main.cpp and serving/main.cpp, builds them against the installed
# package with Ninja and runs them: consumer compiles a spec for gfx942,
# generates and loads a bundle and finds the kernel for n=512, k=128, m=7;
# serving, linked with mla-fp8::EmbeddingRuntime, must not need libMLIR and
# runs one kernel of that bundle on the emulator.
set -eu
build=$1
src=$2
cmake=${3:-cmake}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$cmake" --install "$build" --prefix "$tmp/prefix" --component mla-fp8 >/dev/null

# example NAME N: README's Nth C++ block must be test/Install/NAME/main.cpp;
# builds it in $tmp/NAME-build.
example() {
  mkdir "$tmp/$1"
  /usr/bin/python3 "$src/test/Install/readme-block.py" "$src/README.md" cpp "$2" \
    >"$tmp/$1/main.cpp"
  if ! diff -u "$src/test/Install/$1/main.cpp" "$tmp/$1/main.cpp"; then
    echo "install-test: README.md's C++ example $2 differs from test/Install/$1/main.cpp" >&2
    exit 1
  fi
  cp "$src/test/Install/$1/CMakeLists.txt" "$tmp/$1/"
  "$cmake" -G Ninja -S "$tmp/$1" -B "$tmp/$1-build" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
  ninja -C "$tmp/$1-build" >/dev/null
}

example consumer 1
out=$("$tmp/consumer-build/mla-fp8-consumer" "$tmp/bundle")
echo "$out"
echo "$out" | grep -q "mfma: yes"
echo "$out" | grep -q "^M=7: mla_fp8_n512_k128_.*_r1_512, grid 8 x 1 x 16$"

example serving 2
if readelf -d "$tmp/serving-build/mla-fp8-serving" | grep "NEEDED.*libMLIR"; then
  echo "install-test: mla-fp8::EmbeddingRuntime brought in libMLIR" >&2
  exit 1
fi
out=$("$tmp/serving-build/mla-fp8-serving" "$tmp/bundle")
echo "$out"
echo "$out" | grep -q "^M=3: mla_fp8_n512_k128_.*_r1_512, [1-9][0-9]* instructions, Y = 128 everywhere"
