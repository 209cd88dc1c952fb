#!/usr/bin/env python3
"""Writes the seed corpus of tests/ipc/fuzz_descriptor.cpp into tests/ipc/corpus/.

The descriptors are built here from the layout in src/ipc/descriptor.hpp with
struct and zlib, not with libcumem's encoder, so the seeds also cross-check
it. valid_* decode; near_* are each one step from valid. Run it again after a
change of the layout and commit the files.
"""
import os
import struct
import zlib

HOST, DEVICE, PINNED, MANAGED = 1, 2, 3, 4
UUID = bytes(range(0x10, 0x20))
POOL_ID = bytes(range(0xA0, 0xB0))
EXPORT = bytes((3 * i + 1) & 0xFF for i in range(64))


KEY = bytes(range(0x60, 0x70))


def body(type_, kind, size, offset, uuid, pool_id, export, pid, version=2, tag=0, key=bytes(16)):
    return (b"CUMEMIPC" + struct.pack("<HHIQQ", version, type_, kind, size, offset) + uuid +
            pool_id + export + struct.pack("<I", pid) + struct.pack("<Q", tag) + key)


def seal(b):
    assert len(b) == 156
    return b + struct.pack("<I", zlib.crc32(b))


valid = {
    # Tags are arbitrary here: decode cannot check them (that needs the key).
    "valid_pool_buffer_device": body(1, DEVICE, 1 << 20, 0, UUID, POOL_ID, EXPORT, 4242, tag=7),
    "valid_pool_buffer_pinned": body(1, PINNED, 0x100000200, 0, UUID, POOL_ID, EXPORT, 1, tag=1 << 63),
    "valid_legacy_buffer": body(2, DEVICE, 4096, 0x30000, UUID, bytes(16), EXPORT, 77),
    "valid_host_shared_buffer": body(3, HOST, 512, 8192, bytes(16), POOL_ID, bytes(64), 99, tag=3),
    "valid_pool_host": body(4, HOST, 64 << 20, 0, bytes(16), POOL_ID, bytes(64), 99, key=KEY),
    "valid_pool_device": body(4, DEVICE, 0, 0, UUID, POOL_ID, bytes(64), 0x7FFFFFFF, key=KEY),
    "valid_pool_pinned": body(4, PINNED, 0, 0, UUID, POOL_ID, bytes(64), 5, key=KEY),
}
good = seal(valid["valid_pool_buffer_device"])
near = {
    "near_bad_crc": good[:156] + bytes([good[156] ^ 1]) + good[157:],
    "near_version_1": seal(body(1, DEVICE, 1 << 20, 0, UUID, POOL_ID, EXPORT, 4242, version=1)),
    "near_version_3": seal(body(1, DEVICE, 1 << 20, 0, UUID, POOL_ID, EXPORT, 4242, version=3)),
    "near_truncated_159": good[:159],
    "near_too_long_161": good + b"\0",
    "near_bad_magic": b"CUMEMIPX" + good[8:],
    "near_key_in_buffer": seal(body(1, DEVICE, 1, 0, UUID, POOL_ID, EXPORT, 1, key=KEY)),
    "near_pool_without_key": seal(body(4, DEVICE, 0, 0, UUID, POOL_ID, bytes(64), 5)),
    "near_tag_on_legacy": seal(body(2, DEVICE, 4096, 0, UUID, bytes(16), EXPORT, 77, tag=1)),
    "near_pinned_legacy": seal(body(2, PINNED, 4096, 0, UUID, bytes(16), EXPORT, 77)),
    "near_managed_pool": seal(body(4, MANAGED, 0, 0, UUID, POOL_ID, bytes(64), 5)),
    "near_zero_size": seal(body(3, HOST, 0, 8192, bytes(16), POOL_ID, bytes(64), 99)),
    "near_offset_overflow": seal(body(3, HOST, 2, (1 << 64) - 1, bytes(16), POOL_ID, bytes(64), 99)),
    "near_host_with_uuid": seal(body(3, HOST, 512, 0, UUID, POOL_ID, bytes(64), 99)),
    "near_no_pool_id": seal(body(1, DEVICE, 1, 0, UUID, bytes(16), EXPORT, 1)),
    "near_pid_0": seal(body(2, DEVICE, 4096, 0, UUID, bytes(16), EXPORT, 0)),
}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(out, exist_ok=True)
for name, b in valid.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(seal(b))
for name, b in near.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(b)
print(f"wrote {len(valid)} valid and {len(near)} near-miss descriptors to {out}")
