"""The Python package's dma-buf export (Buffer.get_dmabuf, DmaBuf) and unmap
notifications (subscribe_unmap) on the engines fake driver, whose memory is
host memory; the device properties' fabric and dma-buf fields. Run by meson
(suite host) with CUMEM_LIBCUDA naming the fake."""
import fcntl
import os
import unittest

import cumem

MIB = 1 << 20
PAGE = os.sysconf("SC_PAGESIZE")


def open_fds():
    return len(os.listdir("/proc/self/fd"))


class EnginesPython(unittest.TestCase):
    def test_properties_say_dma_buf_and_fabric(self):
        p = cumem.Device(0).properties()
        self.assertIs(p["dma_buf_supported"], True)
        self.assertIs(p["fabric_export_supported"], False)  # no IMEX channel in the fake
        self.assertNotIn("reserved0", p)

    def test_a_cached_block_exports_its_segment_with_its_offset(self):
        pool = cumem.Resource.device(0)
        cache = cumem.Resource.caching(pool)
        a = cache.allocate(3 * MIB)
        b = cache.allocate(3 * MIB)
        before = open_fds()
        with b.get_dmabuf() as d:
            self.assertIsInstance(d, cumem.DmaBuf)
            self.assertEqual(d.address + d.offset, b.ptr)
            self.assertGreater(d.offset, 0)
            self.assertEqual(d.length, 20 * MIB)
            self.assertEqual(d.address % PAGE, 0)
            self.assertTrue(d.whole_allocation)
            self.assertEqual(d.device_id, 0)
            self.assertTrue(fcntl.fcntl(d.fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)
            self.assertEqual(open_fds(), before + 1)
        self.assertEqual(open_fds(), before, "the with block closed the fd")
        d = a.get_dmabuf()
        fd = d.detach()
        self.assertEqual(d.fd, -1)
        os.close(fd)
        with self.assertRaises(cumem.CumemError) as e:
            a.get_dmabuf(pcie=True)  # the fake has no BAR1 path
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_NOT_SUPPORTED")

    def test_host_memory_is_refused_by_name(self):
        b = cumem.Resource.host().allocate(4096)
        with self.assertRaises(cumem.CumemError) as e:
            b.get_dmabuf()
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_NOT_SUPPORTED")
        self.assertIn("pageable host memory", e.exception.message)

    def test_unmap_notifications(self):
        seen = []
        vr = cumem.Resource.virtual_memory(0, chunk_size=2 * MIB)
        with cumem.subscribe_unmap(seen.append) as sub:
            self.assertNotEqual(sub.id, 0)
            b = vr.allocate(4 * MIB)
            ptr = b.ptr
            b.close()
            self.assertEqual(len(seen), 1)
            self.assertEqual(seen[0]["reason"], "virtual")
            self.assertEqual(seen[0]["address"], ptr)
            self.assertEqual(seen[0]["size"], 4 * MIB)
            self.assertEqual(seen[0]["device_id"], 0)
            pool = cumem.Resource.device(0, new_pool=True)
            pool.pool_trim()
            self.assertEqual(seen[-1]["reason"], "pool_trim")
            self.assertEqual(seen[-1]["size"], 0)
        n = len(seen)
        pool.pool_trim()
        self.assertEqual(len(seen), n, "unsubscribed at the end of the with block")
        sub.unsubscribe()  # twice: nothing more to do
        from cumem import _engines
        self.assertEqual(_engines.lib.cumem_unmap_unsubscribe(12345), 14)  # NOT_FOUND


if __name__ == "__main__":
    unittest.main()
