"""The Python package's virtual memory (Resource.virtual_memory, Buffer.resize,
the virtual_* methods, virtual IPC handles) on the VMM fake driver, whose
memory is host memory. Run by meson (suite host) with CUMEM_LIBCUDA naming
the fake and two fake devices."""
import ctypes
import os
import socket
import unittest

import cumem

GRANULE = 64 << 10  # the fake's minimum granularity


def read(buffer, n):
    return ctypes.string_at(buffer.ptr, n)


class VirtualPython(unittest.TestCase):
    def make(self, **options):
        options.setdefault("granularity", "minimum")
        options.setdefault("chunk_size", GRANULE)
        return cumem.Resource.virtual_memory(0, **options)

    def test_allocate_resize_and_statistics(self):
        r = self.make()
        self.assertEqual(r.properties()["kind"], 14)  # CUMEM_RESOURCE_VIRTUAL
        b = r.allocate(3 * GRANULE + 5)
        ctypes.memset(b.ptr, 0x42, 3 * GRANULE + 5)
        self.assertEqual(r.virtual_statistics()["bytes_mapped"], 4 * GRANULE)
        b.resize(20 * GRANULE)
        self.assertEqual(b.size, 20 * GRANULE)
        self.assertEqual(read(b, 3 * GRANULE + 5), b"\x42" * (3 * GRANULE + 5))
        b.resize(GRANULE)
        s = r.virtual_statistics()
        self.assertEqual(s["bytes_mapped"], GRANULE)
        self.assertEqual(s["shrinks"], 1)
        with self.assertRaises(cumem.CumemError) as e:
            b.resize(0)
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_INVALID_ARGUMENT")
        b.close()
        r.release_pending()
        s = r.virtual_statistics()
        self.assertEqual(s["bytes_mapped"], 0)
        self.assertEqual(s["chunks_created"], s["chunks_released"])

    def test_options_with_cuda_core_names(self):
        r = self.make(peers=[1], peer_access="r", handle_type="posix_fd")
        self.assertEqual(r.virtual_get_access(1), "r")
        self.assertEqual(r.virtual_get_access(0), "rw")
        r.virtual_set_access(1, None)
        self.assertIsNone(r.virtual_get_access(1))
        self.assertTrue(r.properties()["ipc_enabled"])
        with self.assertRaises(ValueError):
            self.make(location_type="moon")
        with self.assertRaises(cumem.CumemError) as e:
            self.make(handle_type=["posix_fd", "fabric"])
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_NOT_SUPPORTED")
        self.assertIn("probe", e.exception.message)
        h = self.make(location_type="host_numa", location_id=0)
        self.assertTrue(h.properties()["host_accessible"])

    def test_ipc_handle_over_a_socket(self):
        r = self.make(handle_type="posix_fd", chunk_size=2 * GRANULE)
        b = r.allocate(5 * GRANULE)
        ctypes.memset(b.ptr, 0x17, 5 * GRANULE)
        h = b.get_virtual_ipc_handle()
        self.assertEqual(len(h.fds), 3)
        self.assertEqual(h.descriptor[:8], b"CUMEMVMM")
        a, c = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        cumem.ipc_send_virtual(a, h)
        got = cumem.ipc_receive_virtual(c)
        a.close()
        c.close()
        again = cumem.VirtualIpcHandle.from_fds(got.descriptor, [os.dup(f) for f in got.fds])
        imported = cumem.Buffer.from_virtual_ipc_handle(0, again)
        self.assertEqual(read(imported, 5 * GRANULE), b"\x17" * (5 * GRANULE))
        imported.close()
        b.close()


if __name__ == "__main__":
    unittest.main()
