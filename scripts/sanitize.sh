#!/usr/bin/env bash
# The test suite under a sanitizer (CPU-only build, cmake/sanitize.cmake):
#   scripts/sanitize.sh address [CTEST ARGS]  ASan + UBSan (and LeakSanitizer)
#                                             in build-asan/; default: every test
#   scripts/sanitize.sh thread [CTEST ARGS]   TSan in build-tsan/; default: the
#                                             tests that start threads (below)
# CTEST ARGS replace the default selection (e.g. -R Loader).
# VT_SANITIZE_TARGETS="test_core test_data" builds only those targets instead
# of the whole tree (thread: of the binaries its tests need) and runs only
# those binaries' tests (ctest -L BINARY; with thread, those of the default
# selection): .ci/run's subset. The build is RelWithDebInfo at -O1 (stacks
# that name every frame, shorter compiles than -O3) with ccache.
#
# Every report fails the script, also one in a child process whose exit
# status a test expected to be non-zero: the sanitizers write their reports
# into $BUILD/sanitizer-reports/ (log_path), which must be empty after ctest;
# the reports are printed at the end.
#
# Under thread, OpenMP regions run on one thread (OMP_NUM_THREADS=1,
# OMP_THREAD_LIMIT=1 also caps a config's train.threads): GCC's libgomp is
# not built with TSan, so its barriers are invisible to it and every parallel
# loop would read as a race. The threads the project starts itself (loader
# workers, the signal thread, the watchdog) still run.
#
# The default thread selection, by test name (ctest -R):
#   Loader, LoaderPinned      loader workers, the pinned slot ring and its leases
#   Log                       the log writer against a SIGKILL
#   CheckpointWrite           checkpoint writes under a file-size limit
#   TrainLoop, TrainerTest    the training loop with its loader, checkpoints
#                             and resumes (vtrain's trainer)
#   DitTrainer, DitSampleFiles  dittrain's trainer and the sampler stopped by
#                             a signal
#   faults.*                  stop signals at random moments (one process and
#                             2 ranks), a checkpoint write under a file-size
#                             limit, the distributed watchdog's timeout with
#                             2 ranks (the last two need MPI)
#   DataParallel.(AFailingRank|BatchNotDivisible)  2-rank mpirun runs ending
#                             on a rank's error (the watchdog and the
#                             collectives' error path)
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { sed -n '2,12p' "$0" >&2; exit 2; }
KIND=${1:-}
[ $# -gt 0 ] && shift
case $KIND in
  address) BUILD=${VT_SANITIZE_BUILD_DIR:-build-asan} ;;
  thread) BUILD=${VT_SANITIZE_BUILD_DIR:-build-tsan} ;;
  *) usage ;;
esac
# The tests that start ranks with mpirun.
MPI_TESTS='^DataParallel\.|^faults\.(dist_timeout|signal_ranks)$'
THREAD_TARGETS="test_core test_data test_train test_vision test_diffusion test_mpi vtrain dittrain veval"
THREAD_TESTS='^(Loader|LoaderPinned|Log|CheckpointWrite|TrainLoop|TrainerTest|DitTrainer|DitSampleFiles)\.|^faults\.|^DataParallel\.(AFailingRankEndsEveryRank|BatchNotDivisibleByWorldIsAConfigErrorOnEveryRank)$'

export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
JOBS=${VT_JOBS:-$(nproc)}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g -DNDEBUG" \
    -DVT_CUDA=OFF -DVT_SANITIZE="$KIND" >/dev/null
fi
# thread builds only what its tests run unless told otherwise.
TARGETS=${VT_SANITIZE_TARGETS:-}
[ "$KIND" = thread ] && [ -z "$TARGETS" ] && TARGETS=$THREAD_TARGETS
# shellcheck disable=SC2086  # a list of target names
cmake --build "$BUILD" -j "$JOBS" ${TARGETS:+--target $TARGETS}

# The tests of the binaries built (each carries its binary's name as a label).
ONLY=()
[ -n "${VT_SANITIZE_TARGETS:-}" ] && ONLY=(-L "^($(echo "$VT_SANITIZE_TARGETS" | xargs | tr ' ' '|'))\$")

SUPP=$PWD/tests/sanitizers
REPORTS=$PWD/$BUILD/sanitizer-reports
rm -rf "$REPORTS"
mkdir -p "$REPORTS"
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && ! command -v llvm-symbolizer >/dev/null; then
  for s in /usr/bin/llvm-symbolizer-*; do [ -x "$s" ] && export ASAN_SYMBOLIZER_PATH=$s; done
fi
if [ "$KIND" = address ]; then
  # allocator_may_return_null: a failed host allocation returns null as
  # libc's does, so the error the project raises for it is what gets tested
  # (Tensor.FailedAllocationNamesShapeAndSize), not ASan's abort.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:check_initialization_order=1:allocator_may_return_null=1:log_path=$REPORTS/asan"
  export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$REPORTS/ubsan"
  DEFAULT=0
  [ $# -eq 0 ] && DEFAULT=1 && set -- -j "$JOBS" "${ONLY[@]}"
else
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp:log_path=$REPORTS/tsan"
  export OMP_NUM_THREADS=1 OMP_THREAD_LIMIT=1
  [ $# -eq 0 ] && set -- -j "$JOBS" -R "$THREAD_TESTS" "${ONLY[@]}"
fi

rc=0
if [ "$KIND" = address ] && [ "$DEFAULT" = 1 ]; then
  # The ranks mpirun starts: OpenMPI unloads its components (mca_*.so) in
  # MPI_Finalize, so the stacks of what they leave allocated end in an
  # unknown module unless malloc's stacks are unwound without frame
  # pointers; then they reach libmpi / libopen-pal and the suppressions
  # apply. Slow, so only for these tests.
  ctest --test-dir "$BUILD" --output-on-failure "$@" -E "$MPI_TESTS" || rc=$?
  ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
    ctest --test-dir "$BUILD" --output-on-failure "$@" -R "$MPI_TESTS" || rc=$?
else
  ctest --test-dir "$BUILD" --output-on-failure "$@" || rc=$?
fi
# A file holding only ASan's note that an allocation failed (returned null,
# allocator_may_return_null) is no report.
reports=()
for f in "$REPORTS"/*; do
  [ -f "$f" ] && grep -qvE '^(==[0-9]+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes)?$' "$f" &&
    reports+=("$f")
done
if [ ${#reports[@]} -gt 0 ]; then
  for r in "${reports[@]}"; do
    echo "==== $r" >&2
    cat "$r" >&2
  done
  echo "sanitize.sh: ${#reports[@]} $KIND sanitizer report(s) in $REPORTS" >&2
  exit 1
fi
[ "$rc" -eq 0 ] || { echo "sanitize.sh: ctest failed under $KIND (exit $rc)" >&2; exit "$rc"; }
echo "sanitize.sh: $KIND: no reports"
