#!/usr/bin/env python3
"""A snapshot's page as a PNG, for the README: `cumem snapshot view` makes the
page, headless Chromium (Debian's chromium) takes its screenshot.
  tools/snapshot_picture.py SNAPSHOT.json OUT.png [--cumem PATH] [--height PIXELS]
The width is 1280 pixels; the height (default 1180) shows the totals, the
timeline and the map of segments. Standard library only."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("snapshot")
    p.add_argument("output")
    p.add_argument("--cumem", default=os.path.join(here, "..", "build", "tools", "cli", "cumem"))
    p.add_argument("--height", type=int, default=1180)
    a = p.parse_args()
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome")
                    if shutil.which(b)), None)
    if not browser:
        sys.exit("no Chromium: apt-get install chromium")
    with tempfile.TemporaryDirectory() as d:
        page = os.path.join(d, "snapshot.html")
        subprocess.run([a.cumem, "snapshot", "view", a.snapshot, "-o", page], check=True)
        shot = os.path.join(d, "shot.png")
        subprocess.run([browser, *FLAGS, f"--user-data-dir={os.path.join(d, 'profile')}",
                        f"--window-size=1280,{a.height}", f"--screenshot={shot}",
                        "file://" + page], check=True, capture_output=True, timeout=60)
        shutil.copy(shot, a.output)
    print(f"wrote {a.output} ({os.path.getsize(a.output)} bytes)")


if __name__ == "__main__":
    main()
