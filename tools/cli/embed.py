#!/usr/bin/env python3
"""Writes the viewer page (viewer.html) as a C++ string literal for the
cumem command-line tool: embed.py INPUT OUTPUT."""
import sys

DELIMITER = "cumem_viewer"


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    if ")" + DELIMITER + '"' in text:
        sys.exit(f"{source} contains the raw string's end ){DELIMITER}\"")
    if "@CUMEM_SNAPSHOT_JSON@" not in text:
        sys.exit(f"{source} has no @CUMEM_SNAPSHOT_JSON@ placeholder")
    with open(target, "w", encoding="utf-8") as f:
        f.write("// Generated from viewer.html by embed.py: do not edit.\n")
        f.write(f'static const char kViewerHtml[] = R"{DELIMITER}({text}){DELIMITER}";\n')


if __name__ == "__main__":
    main()
