#!/usr/bin/env bash
# bench/fuzz.sh SECONDS [HARNESS...]
# Builds the libFuzzer harnesses of fuzz/ (clang-22, ASan + UBSan, in their
# own build directory) and runs each for SECONDS, one process at a time.
# Prints per harness the executions and any crash; exits 1 on a crash.
#
# Harnesses: manifest, codeobject, emulator, dialect (default: all). Seeds are
# a fresh bundle (mla-fp8-aot), the dialect tests and test/Regression/; the
# corpus grows in $WORK/corpus/<harness> across runs, crashes land in
# $WORK/crashes/<harness>/. Minimize one with
#   $FUZZ_BUILD_DIR/bin/mla-fp8-fuzz-<harness> -minimize_crash=1 -runs=10000 FILE
# and commit it under test/Regression/<harness>/ (README.md there).
# Environment: FUZZ_BUILD_DIR (default build-fuzz), WORK (default
# $FUZZ_BUILD_DIR/fuzz-work), JOBS (build parallelism, default all cores),
# KEEP_GOING=1 (go on after a crash, in one forked worker, to collect every
# crash of a campaign instead of stopping at the first).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_EACH=${1:?usage: bench/fuzz.sh SECONDS [HARNESS...]}
shift
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(manifest codeobject emulator dialect)
BUILD=${FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
WORK=${WORK:-$BUILD/fuzz-work}
JOBS=${JOBS:-$(nproc)}
LLVM_PREFIX=/usr/lib/llvm-22

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=$LLVM_PREFIX/lib/cmake/mlir -DLLD_DIR=$LLVM_PREFIX/lib/cmake/lld \
    -DLLVM_EXTERNAL_LIT=$LLVM_PREFIX/bin/lit -DPython3_EXECUTABLE=/usr/bin/python3 \
    -DMLAFP8_FUZZ=ON
fi
targets=(mla-fp8-aot)
for h in "${HARNESSES[@]}"; do targets+=("mla-fp8-fuzz-$h"); done
ninja -C "$BUILD" -j "$JOBS" "${targets[@]}"

# As build.sh's sanitizer stage: libLLVM and libMLIR are not instrumented, so
# the poisoning LLVM's headers compile into our code and ASan's alternate
# signal stacks are off; leak detection stays on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allow_user_poisoning=0:use_sigaltstack=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

# A real bundle: the manifest harness reads its code object, and its files
# seed the manifest, code-object and emulator harnesses.
# Made afresh each run (seconds), so that it matches the code under test.
bundle=$WORK/bundle
rm -rf "$bundle"
mkdir -p "$WORK"
"$BUILD/bin/mla-fp8-aot" --chips=gfx942 --tp=8 --max-m=16 --no-cache \
  --quiet --jobs=1 -o "$bundle"
export MLAFP8_FUZZ_BUNDLE=$bundle

seeds=$WORK/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{manifest,codeobject,emulator,dialect}
# The manifest with its code object's digest and size as tokens, so that
# mutations keep them right (fuzz/ManifestFuzzer.cpp).
/usr/bin/python3 - "$bundle" "$seeds/manifest/bundle.json" <<'EOF'
import json, sys
bundle, out = sys.argv[1:]
m = json.load(open(bundle + "/manifest.json"))
for chip in m["chips"]:
    chip["sha256"] = "@SHA256(%s)@" % chip["code_object"]
    chip["bytes"] = "@BYTES(%s)@" % chip["code_object"]
text = json.dumps(m, indent=2, sort_keys=True)
for chip in m["chips"]:
    text = text.replace('"%s"' % chip["bytes"], chip["bytes"])
open(out, "w").write(text)
EOF
cp "$bundle"/*.hsaco "$seeds/codeobject/"
# The kernels' own machine code behind the harness's 6-byte header.
"$LLVM_PREFIX/bin/llvm-objcopy" -O binary --only-section=.text \
  "$bundle/gfx942.hsaco" "$WORK/text.bin"
{ printf '\000\077\040\000\077\000'; cat "$WORK/text.bin"; } >"$seeds/emulator/kernel.bin"
# The dialect tests, split where -split-input-file splits them.
for f in "$ROOT"/test/Dialect/MLAFP8/*.mlir; do
  awk -v out="$seeds/dialect/$(basename "$f" .mlir)" \
    '/^\/\/ -----/ { n++; next } { print > (out "-" n+0 ".mlir") }' "$f"
done
for h in manifest codeobject emulator dialect; do
  for f in "$ROOT/test/Regression/$h"/*; do
    [ -f "$f" ] && [[ "$f" != *.expect ]] && cp "$f" "$seeds/$h/"
  done
done

extra=()
[ "${KEEP_GOING:-0}" = 1 ] &&
  extra=(-fork=1 -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1)

status=0
summary=()
for h in "${HARNESSES[@]}"; do
  corpus=$WORK/corpus/$h
  crashes=$WORK/crashes/$h
  mkdir -p "$corpus" "$crashes"
  log=$WORK/$h.log
  echo "== $h: ${SECONDS_EACH}s"
  before=$(find "$crashes" -type f | wc -l)
  rc=0
  "$BUILD/bin/mla-fp8-fuzz-$h" -max_total_time="$SECONDS_EACH" \
    -timeout=20 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
    "${extra[@]}" -artifact_prefix="$crashes/" "$corpus" "$seeds/$h" \
    >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  [ -n "$execs" ] || execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  found=$(( $(find "$crashes" -type f | wc -l) - before ))
  if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
    status=1
    echo "$h: $found crash(es) (exit $rc), log $log:"
    grep -E 'ERROR: |runtime error|SUMMARY|Test unit written|LLVM ERROR|dialect harness|CRASH' \
      "$log" | sed -E 's/==[0-9]+==//; s/ (on|at) (address|pc) 0x.*//' |
      sort | uniq -c | sort -rn | head -12 || true
    summary+=("$(printf '%-10s %10s executions  %3d crash(es)  %s' "$h" "${execs:-?}" "$found" "$crashes")")
  else
    summary+=("$(printf '%-10s %10s executions  ok' "$h" "${execs:-?}")")
  fi
done
echo
echo "fuzz: ${SECONDS_EACH}s per harness"
printf '%s\n' "${summary[@]}"
exit $status
