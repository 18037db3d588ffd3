#!/usr/bin/env bash
# Builds the study-file fuzz target with clang's libFuzzer, ASan and UBSan, apart from the
# CMake build (which uses fuzz_driver.cc with the project's compiler):
#
#   tests/fuzz/build_libfuzzer.sh [OUTPUT]      # default: build-fuzz/study_file_fuzz
#
# Needs clang with compiler-rt (Debian: clang, libclang-rt-dev) and the packages scripts/setup
# installs. docs/fuzzing.md says how to run it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/build-fuzz/study_file_fuzz}
mkdir -p "$(dirname "$out")"
cd "$root"
# shellcheck disable=SC2046
clang++ -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
  -fno-sanitize-recover=undefined -I. \
  tests/fuzz/study_file_fuzz.cc coordinator/study/study_file.cc coordinator/study/grid.cc \
  proto/cell_role.cc \
  model/config/arch_pattern.cc model/config/cell_config.cc model/config/flops.cc \
  model/config/json_fields.cc base/cell_id.cc base/sha256.cc common/study_text.cc \
  $(pkg-config --cflags --libs yaml-cpp absl_status absl_statusor) -o "$out"
echo "$out"
