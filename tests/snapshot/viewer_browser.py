#!/usr/bin/env python3
"""The snapshot viewer in headless Chromium (Debian's `chromium`):
  viewer_browser.py CUMEM_TOOL SNAPSHOT_SAMPLE WORKDIR
makes a snapshot (snapshot_sample), its page (cumem snapshot view), and
checks that the page loads, draws as many blocks as the snapshot holds
(the data-blocks-drawn the page's script sets, read with --dump-dom), that
its screenshot is not blank (the PNG decoded with zlib and struct), and
that it asks nothing of the network; then that segments too small to see
(a few hundred bytes beside a 64 MiB one, as a real training run's small
blocks beside its large ones) are drawn wide enough that their state's
colour shows. Exits 77 (skipped) without Chromium. Standard library only."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--mute-audio", "--hide-scrollbars"]


def find_chromium():
    for name in (os.environ.get("CUMEM_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def chromium(browser, profile, *args):
    cmd = [browser, *FLAGS, f"--user-data-dir={profile}", *args]
    r = subprocess.run(cmd, capture_output=True, timeout=50)
    if r.returncode != 0:
        sys.exit(f"chromium failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr.decode(errors='replace')[-2000:]}")
    return r.stdout.decode("utf-8", "replace")


def png_pixels(path):
    """(width, height, channels, rows): the PNG's 8-bit RGB(A) pixels."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path} is not a PNG")
    at, idat, header = 8, b"", None
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace != 0:
        sys.exit(f"unexpected PNG format: depth {depth}, color type {color}, interlace {interlace}")
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous, at = [], bytearray(stride), 0
    for _ in range(height):
        kind, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


IN_USE = bytes((0x4E, 0x79, 0xA7))  # the page's in-use colour (COLORS.in_use)


def tiny_segments(tool, browser, workdir):
    """A snapshot of one 64 MiB cached segment and 40 one-block segments of
    512 bytes in use: each tiny one is 0.009 pixels of memory across, and
    must still show its in-use colour (it was an empty outline)."""
    big, tiny, count = 64 << 20, 512, 40
    address = 1 << 32
    segments = [{"resource": 1, "kind": "segment", "address": address, "size": big, "stream": 0,
                 "device": 0, "blocks": [{"address": address, "size": big, "state": "cached",
                                          "requested_size": None, "stream": 0, "stack": 0}]}]
    for i in range(count):
        a = address + big + i * tiny
        block = {"address": a, "size": tiny, "state": "in_use", "requested_size": tiny,
                 "stream": 0, "stack": 0}
        segments.append({"resource": 1, "kind": "small", "address": a, "size": tiny, "stream": 0,
                         "device": 0, "blocks": [block]})
    totals = {"segments": count + 1, "blocks": count + 1, "bytes_reserved": big + count * tiny,
              "bytes_in_use": count * tiny, "bytes_requested": count * tiny, "bytes_cached": big,
              "bytes_unmapped": 0, "largest_free_block": big, "fragmentation": 0}
    resource = {"id": 1, "kind": "caching", "name": "caching", "device": 0, "memory": "device",
                "upstream": None, "stream_ordered": True, "is_pool": False,
                "statistics": {"bytes_in_use": count * tiny, "peak_bytes_in_use": count * tiny,
                               "live_allocations": count, "total_allocations": count},
                "caching": {"bytes_cached": big, "bytes_reserved": big + count * tiny},
                "totals": totals}
    snapshot = {"schema": "cumem.snapshot", "version": 1, "library_version": "test", "time_ns": 0,
                "pid": 1, "scope": "process", "history": {"recording": False}, "totals": totals,
                "resources": [resource], "segments": segments, "events": [], "stacks": []}
    path = os.path.join(workdir, "viewer_tiny.json")
    page = os.path.join(workdir, "viewer_tiny.html")
    picture = os.path.join(workdir, "viewer_tiny.png")
    with open(path, "w") as f:
        json.dump(snapshot, f)
    subprocess.run([tool, "snapshot", "view", path, "-o", page], check=True)
    url = "file://" + os.path.abspath(page)
    with tempfile.TemporaryDirectory() as profile:
        dom = chromium(browser, profile, "--virtual-time-budget=5000", "--dump-dom", url)
        body = re.search(r"<body[^>]*>", dom).group(0)
        stretched = re.search(r'data-segments-stretched="(\d+)"', body)
        assert stretched and int(stretched.group(1)) == count, f"tiny segments stretched: {body}"
        chromium(browser, profile, "--window-size=1280,900", f"--screenshot={picture}", url)
    width, height, channels, rows = png_pixels(picture)
    in_use = sum(1 for row in rows for x in range(0, width * channels, channels)
                 if row[x:x + 3] == IN_USE)
    # The legend's swatch is 12 x 12; the 40 tiny segments, a row 36 pixels
    # high, at least one column each inside their outlines.
    assert in_use >= 144 + count * 30, \
        f"{in_use} pixels in the in-use colour: the tiny segments are blank"
    print(f"ok: {count} tiny segments drawn in their colour ({in_use} in-use pixels)")


def main():
    tool, sample, workdir = sys.argv[1:4]
    browser = find_chromium()
    if not browser:
        print("skipped: no Chromium (apt-get install chromium, or set CUMEM_CHROMIUM)")
        return 77
    os.makedirs(workdir, exist_ok=True)
    snapshot = os.path.join(workdir, "viewer_sample.json")
    page = os.path.join(workdir, "viewer_sample.html")
    picture = os.path.join(workdir, "viewer_sample.png")
    subprocess.run([sample, snapshot], check=True)
    data = json.load(open(snapshot))
    blocks = sum(len(s["blocks"]) for s in data["segments"])
    assert blocks == data["totals"]["blocks"] and blocks > 20, blocks
    assert any(e["action"] == "out_of_memory" for e in data["events"]), "the sample has an OOM"
    subprocess.run([tool, "snapshot", "view", snapshot, "-o", page], check=True)
    html = open(page, encoding="utf-8").read()
    assert not re.search(r"https?://", html), "the page names a URL"
    url = "file://" + os.path.abspath(page)
    with tempfile.TemporaryDirectory() as profile:
        dom = chromium(browser, profile, "--virtual-time-budget=5000", "--dump-dom", url)
        body = re.search(r"<body[^>]*>", dom)
        assert body, "no body in the page as Chromium built it"
        drawn = re.search(r'data-blocks-drawn="(\d+)"', body.group(0))
        assert drawn, f"the page's script did not finish drawing: {body.group(0)}"
        assert int(drawn.group(1)) == blocks, f"drew {drawn.group(1)} blocks of {blocks}"
        assert f"cumem snapshot: {blocks} blocks drawn" in dom, "the title says what was drawn"
        chromium(browser, profile, "--window-size=1280,1600", f"--screenshot={picture}", url)
    width, height, channels, rows = png_pixels(picture)
    assert (width, height) == (1280, 1600), (width, height)
    colors, counts = set(), {}
    for row in rows[::4]:
        for x in range(0, width * channels, channels * 4):
            px = row[x:x + 3]
            colors.add(px)
            counts[px] = counts.get(px, 0) + 1
    background = max(counts.values())
    share = 1 - background / sum(counts.values())
    assert len(colors) >= 16, f"the screenshot has {len(colors)} colours: blank?"
    assert share > 0.05, f"only {share:.1%} of the screenshot differs from its background"
    print(f"ok: {blocks} blocks drawn; screenshot {width}x{height}, {len(colors)} colours, "
          f"{share:.0%} not background")
    tiny_segments(tool, browser, workdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
