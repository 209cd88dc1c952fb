#!/usr/bin/env bash
# The GPU machine's checks, in phases that each fit one call of at most ten
# minutes (the GPU machine is lent in short calls: see the README's Tests).
# Each phase writes its logs under $OUT (or ./gpu-logs) and ends with a
# short summary, which is what a call's reply shows.
#
#   tools/gpu_check.sh tests      the README's test command: every suite
#                                 (gpu, host, python, examples), then the
#                                 failing tests' logs
#   tools/gpu_check.sh quick      the gpu suite, then the python suite, in
#                                 ./build-gpu (no examples, no benchmarks):
#                                 for a lease with a few minutes left (the
#                                 host suite runs on any machine)
#   tools/gpu_check.sh probes     the driver probes of tools/probes that
#                                 need a GPU (stream ids, page calls while
#                                 kernels run)
#   tools/gpu_check.sh sanitize [NAME...]
#                                 compute-sanitizer memcheck over the IPC,
#                                 framework, caching and graph programs (or
#                                 the gpu tests named), each split in four
#                                 processes run side by side
#   tools/gpu_check.sh bench      the benchmark programs (a release build)
#   tools/gpu_check.sh workloads  the PyTorch memory workloads of bench/python
#                                 (one process per allocator)
#   tools/gpu_check.sh trainings  the three trainings (bench/python/bench_train_*)
#                                 with the allocators in a balanced order
#                                 (libcumem, PyTorch, PyTorch expandable, then
#                                 the reverse), so that no allocator gains
#                                 from its place in the call; builds only the
#                                 library and the PyTorch extension when
#                                 ./build is not there
#   tools/gpu_check.sh pages      the MLP and GPT-2 trainings on the expandable
#                                 cache with its default pages (8 MiB large,
#                                 2 MiB small) and with 16 MiB pages for all,
#                                 beside PyTorch native, in a balanced order:
#                                 whether fewer, larger pages win back the
#                                 steps/s that mapping costs the first
#                                 training (issue 18)
#   tools/gpu_check.sh traces     the three trainings' requests recorded
#                                 (tools/probes/trace_training.py) as
#                                 $OUT/<workload>.trace.gz, for
#                                 tests/resource/expandable/traces/
set -uo pipefail
cd "$(dirname "$0")/.."
phase=${1:-tests}
out=${OUT:-gpu-logs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
# A meson test log's failing tests and totals.
summarize() {
  grep -E "^ *[0-9]+/[0-9]+ .*(FAIL|ERROR|TIMEOUT)|^(Ok|Fail|Skipped|Timeout):" "$1"
}
python=/opt/torch/.venv/bin/python3
[ -x "$python" ] || python=python3

case "$phase" in
  tests)
    tools/build.sh >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
    meson test -C build --print-errorlogs --num-processes 8 >"$out/test.log" 2>&1
    status=$?
    cp build/meson-logs/testlog.txt "$out/testlog.txt"
    summarize "$out/test.log"
    exit $status
    ;;
  quick)
    [ -f build-gpu/build.ninja ] ||
      meson setup build-gpu -Dexamples=disabled -Dbenchmarks=disabled >"$out/setup.log" 2>&1 ||
      { tail -40 "$out/setup.log"; exit 1; }
    meson compile -C build-gpu >"$out/build-gpu.log" 2>&1 || { tail -40 "$out/build-gpu.log"; exit 1; }
    status=0
    for suite in gpu python; do
      meson test -C build-gpu --no-rebuild --suite "$suite" --print-errorlogs --num-processes 8 \
        >"$out/test-$suite.log" 2>&1 || status=1
      echo "== $suite suite"
      summarize "$out/test-$suite.log"
    done
    exit $status
    ;;
  probes)
    cuda=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
    probe=$(mktemp)
    gcc -O2 tools/probes/stream_id_probe.c -I"$cuda/include" -L"$cuda/lib64/stubs" -lcuda \
      -o "$probe" && timeout 60 "$probe" | tee "$out/stream_id_probe.txt"
    rm -f "$probe"
    (cd tools/probes && for args in "8 32 5" "2 32 5"; do
      timeout 120 "$python" vmm_stall_probe.py $args 2>&1 | tail -6
    done) | tee "$out/vmm_stall_probe.txt"
    ;;
  sanitize)
    [ -f build/build.ninja ] || tools/build.sh >"$out/build.log" 2>&1
    shift
    [ $# -gt 0 ] || set -- ipc_gpu framework_gpu framework_stream_lifetime_gpu resource_caching_gpu graph_gpu
    tools/gpu_sanitize.py build memcheck "$out/sanitize" --shards 4 --only "$@" 2>&1 | tee "$out/sanitize.txt"
    ;;
  bench)
    [ -f build-rel/build.ninja ] ||
      meson setup build-rel --buildtype=release -Dtests=disabled -Dexamples=disabled >"$out/setup.log" 2>&1
    meson compile -C build-rel >"$out/build-rel.log" 2>&1 || { tail -40 "$out/build-rel.log"; exit 1; }
    for b in bench_capture bench_batches bench_virtual bench_expandable; do
      [ -x "build-rel/bench/$b" ] || continue
      timeout 120 "build-rel/bench/$b" >"$out/$b.txt" 2>&1
      echo "== $b (exit $?)"; tail -25 "$out/$b.txt"
    done
    timeout 60 build-rel/bench/bench_memory --benchmark_filter='getters|caching_raw|caching_buffer' \
      >"$out/bench_memory.txt" 2>&1
    if [ -x build-rel/bench/bench_peers ]; then
      timeout 240 build-rel/bench/bench_peers >"$out/bench_peers.txt" 2>&1
      echo "== bench_peers (exit $?)"; tail -40 "$out/bench_peers.txt"
    fi
    ;;
  workloads)
    [ -f build/build.ninja ] || tools/build.sh >"$out/build.log" 2>&1
    export CUMEM_LIBRARY=build/libcumem.so.1 PYTHONPATH=bindings/python:bench/python
    export CUMEM_TORCH_EXTENSION=build/bindings/python/torch_extension/_cumem_torch.so
    for w in bench_torch_pair bench_torch_alloc bench_fragmentation bench_train_mlp \
             bench_random_trace bench_train_gpt2 bench_train_resnet50; do
      timeout 150 "$python" "bench/python/$w.py" >"$out/$w.txt" 2>&1
      echo "== $w (exit $?)"; tail -12 "$out/$w.txt"
    done
    ;;
  trainings|pages)
    dir=build
    if [ ! -f build/build.ninja ]; then
      dir=build-lib
      [ -f build-lib/build.ninja ] ||
        meson setup build-lib -Dtests=disabled -Dexamples=disabled >"$out/setup.log" 2>&1
    fi
    meson compile -C "$dir" cumem:shared_library _cumem_torch:shared_module \
      >"$out/build-lib.log" 2>&1 || { tail -40 "$out/build-lib.log"; exit 1; }
    export CUMEM_LIBRARY=$dir/libcumem.so.1 PYTHONPATH=bindings/python:bench/python
    export CUMEM_TORCH_EXTENSION=$dir/bindings/python/torch_extension/_cumem_torch.so
    order=libcumem-expandable,pytorch,pytorch-expandable,pytorch-expandable,pytorch,libcumem-expandable
    workloads=("mlp" "gpt2 --steps 40" "resnet50 --steps 50")
    if [ "$phase" = pages ]; then
      # Six processes, as trainings runs: its time limits hold.
      order=libcumem-expandable,libcumem-expandable-16MiB,pytorch
      order=$order,pytorch,libcumem-expandable-16MiB,libcumem-expandable
      workloads=("mlp" "gpt2 --steps 40")
    fi
    for w in "${workloads[@]}"; do
      set -- $w
      timeout 170 "$python" "bench/python/bench_train_$1.py" "${@:2}" --allocators "$order" \
        >"$out/train_$1.txt" 2>&1
      echo "== $w (exit $?)"; grep "^| [A-Z]" "$out/train_$1.txt"
    done
    ;;
  traces)
    [ -f build/build.ninja ] || tools/build.sh >"$out/build.log" 2>&1
    export CUMEM_FRAMEWORK_RESOURCE=expandable CUMEM_LIBRARY=build/libcumem.so.1
    export PYTHONPATH=bindings/python:bench/python
    # Through CUDAPluggableAllocator, as the committed traces were recorded.
    unset CUMEM_TORCH_EXTENSION
    for w in mlp gpt2 resnet50; do
      timeout 150 "$python" tools/probes/trace_training.py "$w" "$out/$w.trace.gz" >"$out/$w.trace.txt" 2>&1
      echo "== $w (exit $?)"; tail -4 "$out/$w.trace.txt"
    done
    ;;
  *)
    echo "usage: tools/gpu_check.sh tests|quick|probes|sanitize|bench|workloads|trainings|pages|traces" >&2
    exit 2
    ;;
esac
