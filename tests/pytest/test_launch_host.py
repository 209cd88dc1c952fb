"""Host-only tests of the package's kernel parts (no GPU): the launch
configuration made from the library's defaults, kernel argument
conversion, NVRTC's version or its clear absence. Run by meson (suite host)
with the system python3."""
import ctypes
import sys
import unittest

import cumem
from cumem import _lib


class LaunchHost(unittest.TestCase):
    def test_launch_config_matches_the_library(self):
        c = cumem.launch_config(4, 256)
        # cumem_launch_config_init writes the C struct's size: the ctypes
        # struct must be exactly as large.
        self.assertEqual(c.struct_size, ctypes.sizeof(_lib.LaunchConfig))
        self.assertEqual(list(c.grid), [4, 1, 1])
        self.assertEqual(list(c.block), [256, 1, 1])
        self.assertEqual(c.shared_memory_bytes, 0)
        self.assertEqual(list(c.cluster), [0, 0, 0])  # the library's default: no clusters
        c = cumem.launch_config((2, 3), (8, 4, 2), shared_memory_bytes=1024)
        self.assertEqual(list(c.grid), [2, 3, 1])
        self.assertEqual(list(c.block), [8, 4, 2])
        self.assertEqual(c.shared_memory_bytes, 1024)

    def test_launch_config_rejects_more_than_three_dimensions(self):
        with self.assertRaises(ValueError) as e:
            cumem.launch_config((1, 1, 1, 1), 32)
        self.assertIn("grid takes 1 to 3 dimensions, got 4", str(e.exception))
        with self.assertRaises(ValueError) as e:
            cumem.launch_config(1, ())
        self.assertIn("block takes 1 to 3 dimensions, got 0", str(e.exception))

    def test_kernel_arguments(self):
        r = cumem.Resource.host()
        b = r.allocate(64)
        values = cumem.kernel_arguments([b, ctypes.c_size_t(7), ctypes.c_float(2.5)])
        self.assertIsInstance(values[0], ctypes.c_void_p)
        self.assertEqual(values[0].value, b.ptr)
        self.assertEqual(values[1].value, 7)
        self.assertEqual(values[2].value, 2.5)
        with self.assertRaises(TypeError) as e:
            cumem.kernel_arguments([b, 3])
        self.assertIn("kernel argument 1 is a int", str(e.exception))
        b.close()
        with self.assertRaises(cumem.CumemError) as e:
            cumem.kernel_arguments([b])  # a closed buffer has no pointer to give
        self.assertEqual(e.exception.status_name, "CUMEM_ERROR_BUFFER_CLOSED")

    def test_nvrtc_version_or_its_absence(self):
        try:
            major, minor = cumem.nvrtc_version()
        except cumem.CumemError as e:
            self.assertEqual(e.status_name, "CUMEM_ERROR_NO_COMPILER")
            self.assertIn("nvrtc", e.message.lower())
        else:
            self.assertGreaterEqual(major, 12)
            self.assertGreaterEqual(minor, 0)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    sys.exit(0 if result.wasSuccessful() else 1)
