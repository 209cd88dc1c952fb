#!/usr/bin/env python3
"""Writes the API reference's front page (Doxygen Markdown) from the comment
at the top of cumem.h: its opening paragraphs, then its Conventions section,
so the reference never repeats that prose by hand.

Usage: conventions_mainpage.py CUMEM_H OUTPUT_MD"""
import re
import sys

CONVENTIONS = "Conventions, valid for every function"


def top_comment(text):
    """The lines of the first /* ... */ comment, without the comment marks."""
    match = re.match(r"\s*/\*(.*?)\*/", text, re.S)
    if not match:
        raise SystemExit("cumem.h does not start with a comment")
    lines = match.group(1).split("\n")
    out = []
    for line in lines:
        # " * text" -> "text", keeping the indentation after the star (lists).
        stripped = re.sub(r"^ ?\* ?", "", line, count=1) if line.strip().startswith("*") else line
        out.append(stripped.rstrip())
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


def escape(line):
    """Doxygen reads backslash and at-sign commands and <tags>; the header's
    prose means neither."""
    line = line.replace("\\", "\\\\").replace("@", "\\@")
    # Outside `code spans`: < and > are text, not HTML; name fragments
    # that start with an underscore (_INIT, _get_, _init()) are code, not
    # Markdown emphasis.
    parts = line.split("`")
    for i in range(0, len(parts), 2):
        text = parts[i].replace("<", "\\<").replace(">", "\\>")
        parts[i] = re.sub(r"(?<![\w])(_\w+(?:\(\))?)", r"`\1`", text)
    return "`".join(parts)


def end_nested_lists(lines):
    """A blank line where a line goes back to an outer list item's
    indentation after a nested item, as the header's indentation means
    (Markdown would continue the nested item otherwise)."""
    out = []
    nested = False
    for line in lines:
        indent = len(line) - len(line.lstrip())
        bullet = line.lstrip().startswith("- ")
        if bullet:
            nested = indent > 1
        elif nested and line.strip() and indent <= 3:
            out.append("")
            nested = False
        out.append(line)
    return out


def main():
    header, output = sys.argv[1], sys.argv[2]
    with open(header, encoding="utf-8") as f:
        lines = top_comment(f.read())
    start = next((i for i, l in enumerate(lines) if l.startswith(CONVENTIONS)), None)
    if start is None:
        raise SystemExit(f"no line starting with {CONVENTIONS!r} in the top comment of {header}")
    intro, conventions = lines[:start], lines[start:]
    page = ["# libcumem C API reference {#mainpage}", ""]
    page += [escape(l) for l in intro]
    page += ["", "Every function, type and macro is documented in cumem.h.", "",
             "## Conventions {#conventions}", ""]
    page += [escape(l) for l in end_nested_lists(conventions)]
    page += ["", "<small>This page is the comment at the top of include/cumem/cumem.h, "
             "extracted when the reference is built.</small>", ""]
    with open(output, "w", encoding="utf-8") as f:
        f.write("\n".join(page))


if __name__ == "__main__":
    main()
