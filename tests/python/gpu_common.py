"""Shared by the GPU Python tests: skip (exit 77) without a usable GPU."""
import sys

import cumem

SKIP = 77


def require_gpu():
    try:
        if cumem.device_count() == 0:
            print("skipped: the CUDA driver reports no device")
            sys.exit(SKIP)
    except cumem.CumemError as e:
        print(f"skipped: {e}")
        sys.exit(SKIP)


def kinds():
    """(name, resource) for every memory kind this machine has."""
    out = []
    for name, make in (("device", cumem.Resource.device), ("pinned", cumem.Resource.pinned),
                       ("legacy_pinned", cumem.Resource.legacy_pinned),
                       ("managed", cumem.Resource.managed)):
        try:
            out.append((name, make(0)))
        except cumem.CumemError as e:
            if e.status_name != "CUMEM_ERROR_NOT_SUPPORTED":
                raise
            print(f"note: {name} memory not supported here ({e.message})")
    return out


def pattern(n, seed):
    return bytes((i * 7 + seed) & 0xFF for i in range(n))


def run(tests):
    failures = 0
    for t in tests:
        try:
            t()
            print(f"ok   {t.__name__}")
        except Exception as e:  # noqa: BLE001
            import traceback
            traceback.print_exc()
            print(f"FAIL {t.__name__}: {e}")
            failures += 1
    print(f"{len(tests) - failures} passed, {failures} failed")
    sys.exit(1 if failures else 0)


# The framework resources (CUMEM_FRAMEWORK_RESOURCE) the graph-capture tests
# run with. The caching adaptor joins when it gives each capture a private
# pool (issue 19, the caching adaptor's part): add "caching" here then; until
# then its cases skip, saying so.
CAPTURE_SAFE_RESOURCES = ("device", "caching", "expandable")
FRAMEWORK_RESOURCES = ("device", "caching", "expandable")


def require_capture_safe(kind):
    """Skips (exit 77) unless the framework resource `kind` is capture-safe yet."""
    if kind not in FRAMEWORK_RESOURCES:
        raise SystemExit(f"unknown framework resource {kind!r}")
    if kind not in CAPTURE_SAFE_RESOURCES:
        print(f"skipped: the {kind} framework resource is not capture-safe yet (expected to be "
              "enabled with the caching adaptor's private pools: CAPTURE_SAFE_RESOURCES in "
              "tests/python/gpu_common.py)")
        sys.exit(SKIP)
