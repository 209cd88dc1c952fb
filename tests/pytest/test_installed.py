"""The package finds its own library: installed (a wheel), `import cumem`
loads the libcumem.so.1 inside the package with no environment variable;
$CUMEM_LIBRARY still overrides it. .ci/run sets CUMEM_EXPECT_INSTALLED=1
when it runs this suite against the wheel in a fresh virtual environment."""
import os

import pytest

import cumem
from conftest import HERE, run_python

SOURCE_PACKAGE = os.path.join(HERE, "..", "..", "bindings", "python", "cumem")
PACKAGE = os.path.dirname(os.path.abspath(cumem.__file__))
INSTALLED = os.environ.get("CUMEM_EXPECT_INSTALLED") == "1"


@pytest.mark.skipif(not INSTALLED, reason="runs against an installed package "
                                          "(CUMEM_EXPECT_INSTALLED=1, as .ci/run sets)")
class TestInstalledPackage:
    def test_imported_from_outside_the_source_tree(self):
        assert os.path.realpath(PACKAGE) != os.path.realpath(SOURCE_PACKAGE), PACKAGE
        assert "CUMEM_LIBRARY" not in os.environ, "the installed package must need no variable"

    def test_loads_its_own_library(self):
        path = cumem.library_path()
        assert os.path.dirname(os.path.realpath(path)) == os.path.realpath(PACKAGE), path
        assert os.path.basename(path) == "libcumem.so.1"
        assert cumem.version() >= 10100

    def test_every_module_of_the_source_package_is_installed(self):
        if not os.path.isdir(SOURCE_PACKAGE):
            pytest.skip("the source tree is not next to this test")
        source = sorted(f for f in os.listdir(SOURCE_PACKAGE) if f.endswith(".py"))
        installed = sorted(f for f in os.listdir(PACKAGE) if f.endswith(".py"))
        assert installed == source, "bindings/python/meson.build lists other modules than the package has"

    def test_headers_are_in_the_package(self):
        include = cumem.get_include()
        assert include and os.path.isfile(os.path.join(include, "cumem", "cumem.h"))
        for header in ("cumem.hpp", "dlpack.h", "cumem_api.h"):
            assert os.path.isfile(os.path.join(include, "cumem", header)), header


def test_cumem_library_overrides_the_bundled_library():
    # A path that does not exist: the import fails naming it, so the variable
    # was tried first.
    rc, out = run_python("import cumem", env={"CUMEM_LIBRARY": "/nonexistent/libcumem.so.1"})
    assert rc != 0
    assert "cannot load libcumem" in out and "/nonexistent/libcumem.so.1" in out, out
    # The real file named: it is the one loaded.
    real = os.path.realpath(cumem.library_path())
    rc, out = run_python("import cumem; print(cumem.library_path())", env={"CUMEM_LIBRARY": real})
    assert rc == 0, out
    assert out.strip().splitlines()[-1] == real


def test_without_a_driver_the_host_side_works_and_gpu_calls_say_why():
    rc, out = run_python(
        "import cumem\n"
        "r = cumem.Resource.host(); b = r.allocate(8); b.fill(1); assert b.read() == bytes([1]) * 8\n"
        "try:\n"
        "    cumem.device_count()\n"
        "except cumem.CumemError as e:\n"
        "    print(e.status_name, e.message)\n",
        env={"CUMEM_LIBCUDA": "/nonexistent/libcuda.so.1"})
    assert rc == 0, out
    assert "CUMEM_ERROR_NO_DRIVER" in out and "/nonexistent/libcuda.so.1" in out, out
