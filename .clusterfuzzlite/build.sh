#!/bin/bash -eu
# ClusterFuzzLite / OSS-Fuzz build: compiles the fuzz targets with the
# environment's compiler, flags and fuzzing engine, and puts each target, its
# dictionary, options and zipped seed corpus in $OUT.
#
# Runs outside Docker too, e.g.:
#   CC=clang CXX=clang++ CFLAGS="-fsanitize=address,fuzzer-no-link -g" CXXFLAGS="$CFLAGS" \
#   LIB_FUZZING_ENGINE=-fsanitize=fuzzer SRC=/path/containing WORK=/tmp/w OUT=/tmp/o .clusterfuzzlite/build.sh
# (SRC holds the checkout as $SRC/attncheck.)
#
# fuzz_plugin is not built here: it needs $ATTNCHECK_PLUGIN, which these
# services cannot set; run it with fuzz/overnight.sh instead.
#
# ATTNCHECK_FUZZ_BUILD_DIR (optional, never set by ClusterFuzzLite or OSS-Fuzz):
# an existing libFuzzer build of this checkout to build the targets in instead
# of configuring $WORK/attncheck-build with $CC/$CFLAGS, e.g. build-asan (the
# asan preset configured with clang and ATTNCHECK_FUZZ_ENGINE=libfuzzer), so a
# CI can compile the library under the sanitizers once, for its tests and the
# fuzz smoke both; the targets are then only what is left to build (or nothing).

project=$SRC/attncheck
targets="fuzz_differential fuzz_overflow fuzz_case_file fuzz_gradients"

if [ -n "${ATTNCHECK_FUZZ_BUILD_DIR:-}" ]; then
  build=$ATTNCHECK_FUZZ_BUILD_DIR
  # Only a build whose targets libFuzzer drives will do (a replay main would "fuzz" nothing).
  if ! grep -Eq '^ATTNCHECK_(FUZZ_ENGINE:STRING=libfuzzer|LIB_FUZZING_ENGINE:STRING=.+)$' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "build.sh: ATTNCHECK_FUZZ_BUILD_DIR=$build is not a configured libFuzzer build" \
         "(configure one with clang and -DATTNCHECK_FUZZ_ENGINE=libfuzzer)" >&2
    exit 2
  fi
else
  build=$WORK/attncheck-build
  # CMAKE_BUILD_TYPE=Fuzz is no build type CMake knows: it adds no flags of its own,
  # so $CFLAGS/$CXXFLAGS alone decide optimisation and instrumentation.
  cmake -S "$project" -B "$build" \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
    -DCMAKE_C_FLAGS="$CFLAGS" -DCMAKE_CXX_FLAGS="$CXXFLAGS" \
    -DCMAKE_BUILD_TYPE=Fuzz \
    -DATTNCHECK_LIB_FUZZING_ENGINE="$LIB_FUZZING_ENGINE" \
    -DATTNCHECK_BUILD_FUZZERS=ON -DATTNCHECK_BUILD_TESTS=OFF -DATTNCHECK_BUILD_BENCH=OFF \
    -DATTNCHECK_WITH_TORCH=OFF
fi
cmake --build "$build" --parallel "$(nproc)" --target $targets

mkdir -p "$OUT"
for t in $targets; do
  cp "$build/fuzz/$t" "$OUT/"
  cp "$project/fuzz/$t.options" "$OUT/"
  case "$t" in
    fuzz_case_file) cp "$project/fuzz/dicts/case_file.dict" "$OUT/$t.dict" ;;
    *) cp "$project/fuzz/dicts/problem.dict" "$OUT/$t.dict" ;;
  esac
  # <target>_seed_corpus.zip, flat (zip may be missing: python3's zipfile does the same).
  python3 - "$project/fuzz/corpus/$t" "$OUT/${t}_seed_corpus.zip" <<'PY'
import os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as z:
    for name in sorted(os.listdir(src)):
        z.write(os.path.join(src, name), arcname=name)
PY
done
echo "build.sh: built $targets into $OUT"
