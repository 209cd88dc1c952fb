#!/usr/bin/env python3
"""Feeds a trace to replay_trace on its standard input: a gzip-compressed
trace file, or what a Python script that writes one prints.
Usage: replay_trace.py REPLAY_TRACE TRACE.gz|SCRIPT.py [ARGS...]"""
import gzip
import subprocess
import sys

source = sys.argv[2]
if source.endswith(".py"):
    data = subprocess.run([sys.executable, source], capture_output=True, check=True).stdout
else:
    with gzip.open(source, "rb") as trace:
        data = trace.read()
sys.exit(subprocess.run([sys.argv[1], *sys.argv[3:]], input=data).returncode)
