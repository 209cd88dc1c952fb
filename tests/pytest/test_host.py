"""Host-only tests of the Python package (no GPU, no torch): the host
resource, buffers, DLPack both ways on host memory (and NumPy when it is
importable), and errors. Run by meson (suite host) with the system python3."""
import gc
import sys
import unittest

import cumem


class HostPython(unittest.TestCase):
    def setUp(self):
        self.r = cumem.Resource.host()

    def test_buffers_and_statistics(self):
        b = self.r.allocate(64)
        b.write(bytes(range(64)))
        self.assertEqual(b.read(10, 3), bytes([10, 11, 12]))
        b.fill(7)
        self.assertEqual(b.read(), bytes([7]) * 64)
        self.assertEqual(b.memory_kind, "host")
        self.assertEqual(self.r.statistics()["bytes_in_use"], 64)
        b.close()
        self.assertTrue(b.is_closed)
        self.assertEqual(self.r.statistics()["live_allocations"], 0)

    def test_aligned_and_caching_adaptors(self):
        a = cumem.Resource.aligned(self.r, 1 << 16)
        b = a.allocate(100)
        self.assertEqual(b.ptr % (1 << 16), 0)
        b.close()
        with self.assertRaises(cumem.CumemError) as e:
            cumem.Resource.aligned(self.r, 3)
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_INVALID_ARGUMENT")
        c = cumem.Resource.caching(self.r)
        c.allocate(1000).close()
        self.assertEqual(c.caching_statistics()["bytes_cached"], 1024)
        c.trim(0)
        self.assertEqual(c.caching_statistics()["bytes_cached"], 0)
        self.assertEqual(self.r.statistics()["bytes_in_use"], 0)
        with self.assertRaises(cumem.CumemError) as e:
            self.r.trim()
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_NOT_SUPPORTED")

    def test_ctypes_structs_have_the_header_layout_and_zero_defaults(self):
        import ctypes
        from cumem import _lib
        # sizeof from cumem.h (no padding: the fields' sizes add up).
        self.assertEqual(ctypes.sizeof(_lib.BufferInfo), 48)
        self.assertEqual(_lib.BufferInfo.reserved0.offset, 44)
        self.assertEqual(ctypes.sizeof(_lib.HostResourceOptions), 16)
        self.assertEqual(ctypes.sizeof(_lib.DlpackOptions), 48)
        # A zero-filled struct with struct_size set is the defaults:
        # alignment 0 means 64.
        o = _lib.HostResourceOptions(ctypes.sizeof(_lib.HostResourceOptions))
        r = cumem.Resource(cumem._out(_lib.lib.cumem_host_resource_create, ctypes.byref(o)))
        b = r.allocate(3)
        self.assertEqual(b.info().ptr % 64, 0)
        b.close()
        # Left wholly zero, it is refused with a message saying so.
        with self.assertRaises(cumem.CumemError) as e:
            cumem._out(_lib.lib.cumem_host_resource_create, ctypes.byref(_lib.HostResourceOptions()))
        self.assertIn("looks zero-filled", e.exception.message)
        self.assertIn("cumem_host_resource_options_init()", e.exception.message)

    def test_log_callback_and_level(self):
        seen = []
        cumem.set_log_callback(lambda level, message: seen.append((level, message)))
        try:
            cumem.set_log_level("debug")
            self.assertEqual(cumem.log_level(), "debug")
            with self.assertRaises(cumem.CumemError):
                cumem.Resource.aligned(self.r, 3)
            self.assertTrue(any(level == "debug" and "power of two" in m for level, m in seen), seen)
            seen.clear()
            cumem.set_log_level("error")
            with self.assertRaises(cumem.CumemError):
                cumem.Resource.aligned(self.r, 3)
            self.assertEqual(seen, [])
            with self.assertRaises(ValueError):
                cumem.set_log_level("loud")
        finally:
            cumem.set_log_level("warning")
            cumem.set_log_callback(None)

    def test_errors_carry_status_and_message(self):
        b = self.r.allocate(8)
        b.close()
        with self.assertRaises(cumem.CumemError) as e:
            b.read()
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_BUFFER_CLOSED")
        self.assertIn("closed", e.exception.message)
        with self.assertRaises(cumem.CumemError) as e:
            b.fill(1, width=3)
        self.assertEqual(e.exception.status, 6)  # closed is checked first

    def test_dlpack_round_trip_calls_the_deleter_once(self):
        b = self.r.allocate(32)
        b.write(bytes(range(32)))
        self.assertEqual(b.__dlpack_device__(), (cumem.DLDeviceType.kDLCPU, 0))
        back = cumem.from_dlpack(b)  # through __dlpack__ (versioned)
        self.assertEqual(back.ptr, b.ptr)
        b.release()
        self.assertEqual(self.r.statistics()["live_allocations"], 1)  # the tensor keeps it
        self.assertEqual(back.read(30), bytes([30, 31]))
        back.release()
        self.assertEqual(self.r.statistics()["live_allocations"], 0)

    def test_unconsumed_capsules_free_their_tensor(self):
        b = self.r.allocate(16)
        legacy = b.__dlpack__()  # no max_version: a legacy capsule
        versioned = b.__dlpack__(max_version=(1, 0))
        with self.assertRaises(cumem.CumemError) as e:
            b.close()
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_INVALID_STATE")
        del legacy, versioned
        gc.collect()
        b.close()  # no tensor left
        self.assertEqual(self.r.statistics()["live_allocations"], 0)

    def test_typed_exports_are_validated(self):
        b = self.r.allocate(24)
        cap = b.to_dlpack(dtype="float32", shape=(2, 3))
        back = cumem.from_dlpack(cap)
        self.assertEqual(back.size, 24)
        back.release()
        with self.assertRaises(cumem.CumemError) as e:
            b.to_dlpack(dtype="float64", shape=(4,))
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_OUT_OF_RANGE")
        with self.assertRaises(cumem.CumemError) as e:
            b.to_dlpack(dtype="float32", shape=(2, 3), strides=(3, 3))
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_OUT_OF_RANGE")
        # A non-contiguous export is refused on import, and the capsule keeps it.
        cap = b.to_dlpack(dtype="uint8", shape=(3, 4), strides=(1, 3))
        with self.assertRaises(cumem.CumemError) as e:
            cumem.from_dlpack(cap)
        self.assertIn("not contiguous", e.exception.message)
        del cap
        gc.collect()
        with self.assertRaises(BufferError):
            b.__dlpack__(dl_device=(cumem.DLDeviceType.kDLCUDA, 0))
        with self.assertRaises(BufferError):
            b.__dlpack__(copy=True)
        ro = b.to_dlpack(read_only=True)
        with self.assertRaises(cumem.CumemError) as e:
            cumem.from_dlpack(ro)
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_NOT_SUPPORTED")
        cumem.from_dlpack(ro, allow_read_only=True).release()
        b.close()

    def test_numpy(self):
        try:
            import numpy
        except ImportError:
            self.skipTest("numpy is not importable")
        b = self.r.allocate(16)
        b.write(bytes(range(16)))
        a = numpy.from_dlpack(b.dlpack_view(dtype="int32", shape=(2, 2)))
        self.assertEqual(a.shape, (2, 2))
        self.assertEqual(int(a[1, 1]), int.from_bytes(bytes([12, 13, 14, 15]), "little"))
        a[0, 0] = -1
        self.assertEqual(b.read(0, 4), b"\xff\xff\xff\xff")
        n = numpy.arange(6, dtype=numpy.float64).reshape(2, 3)
        view = cumem.from_dlpack(n)
        self.assertEqual(view.read(8, 8), numpy.float64(1.0).tobytes())
        view.release()
        with self.assertRaises(cumem.CumemError):
            cumem.from_dlpack(n.T)  # not contiguous
        del a
        gc.collect()
        b.close()


class CachingOptionsHost(unittest.TestCase):
    """The caching adaptor's options (cumem_caching_resource_create_with_options)."""

    def test_expandable_needs_device_memory_and_structs_match_the_header(self):
        import ctypes
        from cumem import _lib
        self.assertEqual(ctypes.sizeof(_lib.CachingResourceOptions), 24)
        self.assertEqual(_lib.CachingResourceOptions.page_size.offset, 8)
        self.assertEqual(_lib.CachingResourceOptions.libcumem_captures_only.offset, 16)
        self.assertEqual(ctypes.sizeof(_lib.CachingStatistics), 112)
        host = cumem.Resource.host()
        c = cumem.Resource.caching(host)
        self.assertEqual(c.caching_statistics()["pages_mapped"], 0)
        self.assertEqual(c.caching_statistics()["capture_pools"], 0)
        quick = cumem.Resource.caching(host, libcumem_captures_only=True)
        self.assertEqual(quick.properties()["kind"], c.properties()["kind"])
        with self.assertRaises(cumem.CumemError) as e:
            c.release_capture_pool(7)
        self.assertIn("no private pool of capture 7", e.exception.message)
        with self.assertRaises(cumem.CumemError) as e:
            cumem.Resource.caching(host, expandable=True)
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_NOT_SUPPORTED")
        self.assertIn("expandable segments are device memory", e.exception.message)
        with self.assertRaises(cumem.CumemError) as e:
            cumem.Resource.caching(host, page_size=2 << 20)
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_INVALID_ARGUMENT")
        self.assertIn("page_size", e.exception.message)


class BatchesPython(unittest.TestCase):
    """Copies at scale where no GPU is needed: batches of host buffers, copy_to
    with no destination, the failure-callback adaptor, locations."""

    def setUp(self):
        self.r = cumem.Resource.host()

    def test_copy_batch_over_host_buffers(self):
        a, b, c = self.r.allocate(64), self.r.allocate(64), self.r.allocate(128)
        a.write(bytes(range(64)))
        before = cumem.batch_statistics()
        cumem.copy_batch(None, [a, a], [b, c], sizes=[64, 32], dst_offsets=[0, 96],
                         src_offsets=[0, 32])
        self.assertEqual(b.read(), bytes(range(64)))
        self.assertEqual(c.read(96, 32), bytes(range(32, 64)))
        after = cumem.batch_statistics()
        self.assertEqual(after["copy_batches"], before["copy_batches"] + 1)
        self.assertEqual(after["copies"], before["copies"] + 2)
        self.assertIsInstance(after["driver_copy_batch"], bool)
        with self.assertRaises(cumem.CumemError) as e:
            cumem.copy_batch(None, [a], [c])  # whole buffers of different sizes
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_SIZE_MISMATCH")
        with self.assertRaises(cumem.CumemError) as e:
            cumem.copy_batch(None, [a, a], [b, b])  # the same destination twice
        self.assertIn("overlapping destinations", e.exception.message)
        with self.assertRaises(ValueError):
            cumem.copy_batch(None, [a], [b, c])
        with self.assertRaises(TypeError):
            cumem.copy_batch(None, a, b)
        cumem.copy_batch(None, [a], [b], options=cumem.CopyOptions("any", cumem.Host()))
        with self.assertRaises(ValueError):
            cumem.CopyOptions("sometimes")
        with self.assertRaises(cumem.CumemError) as e:
            cumem.copy_batch(None, [a], [b],
                             options=cumem.CopyOptions(dst_location_hint=cumem.Host(numa_id=4096)))
        self.assertIn("host NUMA node 4096", e.exception.message)

    def test_copy_batch_raw(self):
        # Raw pointers always go to the driver (libcumem cannot tell host
        # memory from device memory without asking it).
        a, b = self.r.allocate(16), self.r.allocate(16)
        a.write(b"0123456789abcdef")
        try:
            cumem.copy_batch_raw(None, [b.ptr], [a.ptr], [8], dst_offsets=[8], src_offsets=[0])
        except cumem.CumemError as e:
            self.assertEqual(e.status_name, "CUMEM_ERROR_NO_DRIVER")
            return
        self.assertEqual(b.read(8, 8), b"01234567")

    def test_copy_to_with_no_destination(self):
        a = self.r.allocate(10)
        a.write(b"abcdefghij")
        copy = a.copy_to()
        self.assertEqual(copy.read(), b"abcdefghij")
        self.assertNotEqual(copy.ptr, a.ptr)
        same = self.r.allocate(10)
        self.assertIs(a.copy_to(same), same)

    def test_failure_callback_frees_and_retries(self):
        limited = cumem.Resource.limit(self.r, 4096)
        held = [limited.allocate(3000)]
        seen = []

        def free_some(info):
            seen.append(info)
            if held:
                held.pop().close()
                return True
            return False

        r = cumem.Resource.failure_callback(limited, free_some)
        self.assertEqual(r.properties()["kind"], 16)  # CUMEM_RESOURCE_FAILURE_CALLBACK
        b = r.allocate(2000)
        self.assertEqual(len(seen), 1)
        self.assertEqual(seen[0]["size"], 2000)
        self.assertEqual(seen[0]["attempt"], 1)
        self.assertEqual(seen[0]["statistics"]["bytes_in_use"], 0)
        self.assertIn("limit", seen[0]["message"])
        with self.assertRaises(cumem.CumemError) as e:
            r.allocate(3000)
        self.assertIn("gave up", e.exception.message)
        # The callback outlives the Resource object while a buffer holds it.
        del r
        gc.collect()
        b.close()

        def boom(info):
            raise RuntimeError("no")

        r2 = cumem.Resource.failure_callback(limited, boom, max_retries=2)
        with self.assertRaises(cumem.CumemError):
            r2.allocate(5000)
        with self.assertRaises(cumem.CumemError):
            cumem.Resource.failure_callback(limited, boom, max_retries=5000)

    def test_locations(self):
        from cumem import _batch
        self.assertEqual(_batch.to_location(cumem.Host()).type, 2)
        self.assertEqual(_batch.to_location(cumem.Host(numa_id=1)).id, 1)
        self.assertEqual(_batch.to_location(cumem.Host.numa_current()).type, 4)
        self.assertEqual(_batch.to_location(3).type, 1)
        with self.assertRaises(TypeError):
            _batch.to_location("host")
        self.assertIsNone(_batch.from_location(_batch._lib.Location(0, 0)))
        self.assertEqual(_batch.from_location(_batch._lib.Location(3, 2)), cumem.Host(numa_id=2))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
