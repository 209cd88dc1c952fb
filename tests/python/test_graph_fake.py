"""The Python package's CUDA graph calls on the fake capturing driver
(tests/fake_driver/fake_capture_driver.cpp, named in $CUMEM_LIBCUDA; host
memory for device memory): capture status, executable graphs, the graph
memory resource. Run by meson (suite host) with the system python3."""
import ctypes
import unittest

import cumem
from cumem import _graph


class GraphsOnTheFakeDriver(unittest.TestCase):
    def setUp(self):
        self.stream = cumem.Stream(0)
        self.pool = cumem.Resource.device(0)

    def test_structs_have_the_header_layout(self):
        self.assertEqual(ctypes.sizeof(_graph.CaptureInfo), 16)
        self.assertEqual(_graph.CaptureInfo.id.offset, 8)
        self.assertEqual(ctypes.sizeof(_graph.GraphOptions), 12)
        self.assertEqual(ctypes.sizeof(_graph.GraphMemoryAttributes), 40)

    def test_capture_info_and_a_graph_replayed(self):
        self.assertEqual(self.stream.capture_info(), {"status": "none", "id": 0})
        self.assertEqual(_graph.capture_info(None)["status"], "none")
        out = self.pool.allocate(256, self.stream)
        ids = set()
        for mode in ("global", "thread_local", "relaxed"):
            self.stream.begin_capture(mode)
            info = self.stream.capture_info()
            self.assertEqual(info["status"], "active")
            ids.add(info["id"])
            scratch = self.pool.allocate(256, self.stream)  # graph memory
            scratch.fill(0x5A, stream=self.stream)
            out.copy_from(scratch, stream=self.stream)
            scratch.close(self.stream)  # a graph free node
            graph = self.stream.end_capture_graph(auto_free_on_launch=True)
            self.assertNotEqual(graph.native, 0)
            self.assertEqual(graph.capture_id, info["id"])
            out.fill(0, stream=self.stream)
            graph.upload(self.stream)
            graph.launch(self.stream)
            self.stream.synchronize()
            self.assertEqual(out.read(), bytes([0x5A]) * 256)
            graph.release()
        self.assertEqual(len(ids), 3, "each capture has its own id")

    def test_graph_memory_resource(self):
        gm = cumem.Resource.graph_memory(0)
        self.assertEqual(gm.properties()["kind"], 15)  # CUMEM_RESOURCE_GRAPH_MEMORY
        with self.assertRaises(cumem.CumemError) as e:
            gm.allocate(64, self.stream)
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_INVALID_STATE")
        self.assertIn("is not capturing", e.exception.message)
        self.stream.begin_capture("global")
        b = gm.allocate(1 << 20, self.stream)
        self.assertEqual(gm.graph_memory_attributes()["used_mem_current"], 1 << 20)
        b.close(self.stream)
        self.stream.end_capture_graph().release()
        gm.graph_memory_reset_highs()
        gm.graph_memory_trim()
        a = gm.graph_memory_attributes()
        self.assertEqual(a["used_mem_current"], 0)
        self.assertEqual(a["used_mem_high"], 0)
        with self.assertRaises(cumem.CumemError) as e:
            self.pool.graph_memory_attributes()
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_NOT_SUPPORTED")

    def test_a_synchronous_free_on_a_capturing_stream_is_refused(self):
        legacy = cumem.Resource.legacy_pinned(0)
        b = legacy.allocate(64, self.stream)
        self.stream.begin_capture("thread_local")
        with self.assertRaises(cumem.CumemError) as e:
            b.close()
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_INVALID_STATE")
        self.assertFalse(b.is_closed)
        with self.assertRaises(cumem.CumemError) as e:
            self.stream.synchronize()
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_INVALID_STATE")
        self.stream.end_capture_graph().release()
        b.close()
        self.assertTrue(b.is_closed)


if __name__ == "__main__":
    import sys
    result = unittest.main(exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
