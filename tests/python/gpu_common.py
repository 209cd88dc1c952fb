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
