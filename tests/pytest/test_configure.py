"""cumem.configure: CUMEM_ALLOC_CONF's keys from Python, parsed by
libcumem (so both refuse alike), and what the framework resource becomes."""
import pytest

import cumem
from cumem._config import configuration_text
from conftest import run_python

LIMIT, CACHING, MANAGED = 6, 9, 5  # cumem_resource_kind_t


def test_keywords_become_the_text():
    assert configuration_text(kind="caching", expandable=True, limit="40GiB") == \
        "kind:caching,expandable:true,limit:40GiB"
    assert configuration_text(limit=1 << 30, managed=False, release_threshold=None) == \
        "limit:1073741824,managed:false"
    assert configuration_text() == ""
    assert configuration_text("kind:caching") == "kind:caching"
    with pytest.raises(TypeError, match="not both"):
        configuration_text("kind:caching", limit=1)
    with pytest.raises(TypeError, match="limit=1.5"):
        configuration_text(limit=1.5)


@pytest.mark.parametrize("settings, message", [
    ({"colour": "blue"}, "unknown key 'colour' (the keys are kind, expandable, page_size, limit, "
                         "release_threshold, managed)"),
    ({"kind": "pool"}, "kind:pool is not a kind (device or caching)"),
    ({"expandable": True}, "expandable:true needs kind:caching"),
    ({"kind": "caching", "page_size": "2MiB"}, "page_size is the expandable segments' page"),
    ({"limit": "lots"}, "limit:lots is not a size"),
    ({"managed": True, "release_threshold": 0}, "do not go together"),
])
def test_refusals_name_the_key(settings, message):
    with pytest.raises(cumem.CumemError) as e:
        cumem.configure(**settings)
    assert e.value.status_name == "CUMEM_ERROR_INVALID_ARGUMENT"
    assert message in e.value.message
    assert "cumem_framework_configure" in e.value.message


def test_text_form_and_its_refusal():
    with pytest.raises(cumem.CumemError, match="the key 'kind' is given twice"):
        cumem.configure("kind:caching,kind:device")
    cumem.configure("kind:caching, limit:1GiB")  # parsing needs no driver
    cumem.configure()


@pytest.mark.device
def test_the_framework_resource_follows_the_configuration(device):
    try:
        cumem.configure(kind="caching", limit="1MiB")
        r = cumem.framework_resource(0)
        assert r.properties()["kind"] == LIMIT
        b = r.allocate(4096)
        with pytest.raises(cumem.CumemError) as e:
            r.allocate(2 << 20)
        assert e.value.status_name == "CUMEM_ERROR_OUT_OF_MEMORY"
        b.close()
        cumem.configure(kind="caching")
        c = cumem.framework_resource(0)
        assert c.properties()["kind"] == CACHING
        c.caching_statistics()  # a caching adaptor answers it
        cumem.configure(managed=True)
        assert cumem.framework_resource(0).properties()["kind"] == MANAGED
        cumem.configure(kind="device")
        assert cumem.framework_resource(0).handle == device.memory_resource.handle
        cumem.configure()  # the defaults: the expandable cache where the device maps virtual memory
        d = cumem.framework_resource(0)
        assert d.properties()["kind"] in (CACHING, device.memory_resource.properties()["kind"])
        if d.properties()["kind"] == CACHING:
            d.caching_statistics()
        else:
            assert d.handle == device.memory_resource.handle  # a device without VMM: the fake
    finally:
        cumem.configure()


@pytest.mark.device
def test_the_environment_variable_is_read():
    rc, out = run_python(
        "import cumem\n"
        "print(cumem.framework_resource(0).properties()['kind'])\n",
        env={"CUMEM_ALLOC_CONF": "kind:caching"})
    assert rc == 0, out
    assert out.strip().splitlines()[-1] == str(CACHING)
    rc, out = run_python(
        "import cumem\n"
        "try:\n"
        "    cumem.framework_resource(0)\n"
        "except cumem.CumemError as e:\n"
        "    print(e.message)\n"
        "cumem.configure()\n"
        "print(cumem.framework_resource(0).properties()['kind'] != 0)\n",
        env={"CUMEM_ALLOC_CONF": "limit:12parsecs"})
    assert rc == 0, out
    assert "CUMEM_ALLOC_CONF: limit:12parsecs is not a size" in out
    assert out.strip().splitlines()[-1] == "True", "configure() replaces a bad environment"
