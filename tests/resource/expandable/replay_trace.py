#!/usr/bin/env python3
"""Feeds a gzip-compressed trace to replay_trace on its standard input.
Usage: replay_trace.py REPLAY_TRACE TRACE.gz [ARGS...]"""
import gzip
import subprocess
import sys

with gzip.open(sys.argv[2], "rb") as trace:
    data = trace.read()
sys.exit(subprocess.run([sys.argv[1], *sys.argv[3:]], input=data).returncode)
