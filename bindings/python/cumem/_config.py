"""The framework entry points' configuration from Python (cumem.configure):
the keys of $CUMEM_ALLOC_CONF, parsed by libcumem (cumem_framework_configure),
so that the two always agree on what each key means and refuses."""
import ctypes

from . import _lib
from ._lib import lib
from . import _check

_lib._declare("cumem_framework_configure", _lib.status_t, ctypes.c_char_p)

# In the order libcumem documents them (cumem.h, cumem_framework_configure).
KEYS = ("kind", "expandable", "page_size", "limit", "release_threshold", "managed")


def _value(key, value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"configure: {key}={value!r} must be a bool, an int (bytes) or a string such "
                    "as '40GiB'")


def configuration_text(text=None, **settings):
    """The CUMEM_ALLOC_CONF text for `settings` (None values are left out)."""
    if text is not None:
        if settings:
            raise TypeError("configure: give the text or keyword settings, not both")
        if not isinstance(text, str):
            raise TypeError(f"configure: the text must be a str, not {type(text).__name__}")
        return text
    return ",".join(f"{k}:{_value(k, v)}" for k, v in settings.items() if v is not None)


def configure(text=None, **settings):
    """Configures the resource libcumem's framework allocators make for each
    device that has none set (cumem.set_framework_resource): the PyTorch and
    CuPy hook-ups, the Numba plugin, cumem.framework_resource. The same keys
    as $CUMEM_ALLOC_CONF, as keywords or as its text:

        cumem.configure(kind="caching", expandable=True, limit="40GiB")
        cumem.configure("kind:caching,expandable:true,limit:40GiB")
        cumem.configure()                      # the defaults, whatever the environment says
        cumem.configure(kind="device")         # the device resource itself

    With no key but limit, libcumem chooses: the expandable cache where the
    device maps virtual memory, else the device's memory resource.
    kind ("device" or "caching"), expandable (bool, needs kind="caching"),
    page_size (with expandable), limit (bytes at most held), release_threshold
    (a pool of the framework's own with this threshold), managed (bool:
    unified memory). Sizes are ints (bytes) or strings with a unit ("512MiB",
    "40GiB", "1GB"). It replaces the environment's configuration for the
    next choice of each device; allocations made before are freed by the
    resources that made them. A key libcumem does not know, a bad value or
    keys that do not go together raise CumemError
    (CUMEM_ERROR_INVALID_ARGUMENT) naming the key, and nothing changes."""
    _check(lib.cumem_framework_configure(configuration_text(text, **settings).encode()))
