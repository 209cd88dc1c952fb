"""The Julia guide (bindings/julia/README.md) against cumem.h, as the Rust
layout test checks cumem-sys: Julia cannot be installed where libcumem is
tested, so what can be checked without it is checked here.

- every ccall((:name, libcumem), Ret, (Args...), ...) names a function of
  cumem.h, with as many arguments, each of the Julia type the guide's type
  table gives the C type (and the return type likewise);
- the release functions made by @eval take (Ptr{Cvoid},) and return Int32;
- every Julia struct marked `# cumem_X_t` has the C struct's fields, in its
  order, of the matching types;
- the signatures the guide's Notes list are the header's;
- the guide says plainly that it is untested.

Usage: check_guide.py README.md cumem.h (exit status 1 on a mismatch)."""
import re
import sys

SCALARS = {
    "cumem_status_t": {"Int32"}, "int32_t": {"Int32"}, "uint32_t": {"UInt32"},
    "uint64_t": {"UInt64"}, "int64_t": {"Int64"}, "size_t": {"Csize_t", "UInt64"},
    "int": {"Cint", "Int32"}, "cumem_bool_t": {"UInt32"}, "uint8_t": {"UInt8"},
    "uint16_t": {"UInt16"}, "float": {"Float32", "Cfloat"}, "void": {"Cvoid"},
}


def fail(errors, message):
    errors.append(message)


def header_functions(header):
    text = re.sub(r"/\*.*?\*/", " ", header, flags=re.S)
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    text = re.sub(r"\s+", " ", text)
    out = {}
    for ret, name, params in re.findall(r"CUMEM_API ([^;()]*?)\b(cumem_\w+)\s*\(([^;]*?)\)\s*;", text):
        params = params.strip()
        plist = [] if params in ("", "void") else [p.strip() for p in params.split(",")]
        out[name] = (ret.strip(), [param_type(p) for p in plist])
    return out


def param_type(p):
    """The C type of a parameter declaration, without its name."""
    p = p.strip()
    m = re.match(r"^(.*?[\s*])(\w+)$", p)
    if m and m.group(2) not in SCALARS and not m.group(2).endswith("_t"):
        p = m.group(1)
    return re.sub(r"\s*\*", "*", p.strip())


def header_enums(header):
    return set(re.findall(r"}\s*(cumem_\w+_t);", re.sub(r"typedef struct.*?}", "", header, flags=re.S))) | \
        set(re.findall(r"typedef enum (cumem_\w+_t)", header))


def header_structs(header):
    out = {}
    for body, name in re.findall(r"typedef struct \w+ \{(.*?)\} (cumem_\w+_t);", header, flags=re.S):
        body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
        fields = []
        for decl in body.split(";"):
            decl = " ".join(decl.split())
            if not decl:
                continue
            m = re.match(r"^(.*?)\s*\b(\w+)(\[(\w+)\])?$", decl)
            fields.append((m.group(2), m.group(1).replace(" *", "*"), m.group(4)))
        out[name] = fields
    return out


def julia_for(c, enums, structs, direction):
    """The Julia types the guide's table allows for the C type `c`."""
    c = c.replace("const ", "").strip()
    if c in SCALARS:
        return SCALARS[c]
    if c in enums:
        return {"Int32"}
    if c == "char*":
        return {"Cstring"}
    if c.endswith("**"):
        return {"Ref{Ptr{Cvoid}}", "Ptr{Ptr{Cvoid}}"}
    if c.endswith("*"):
        base = c[:-1]
        if base in SCALARS and base != "void":
            return {f"Ref{{{t}}}" for t in SCALARS[base]} | {f"Ptr{{{t}}}" for t in SCALARS[base]}
        if base in structs:
            return {f"Ref{{{camel(base)}}}", "Ptr{Cvoid}"}  # a struct, or C_NULL for the defaults
        return {"Ptr{Cvoid}"}  # handles and memory
    return set()


def camel(c_struct):
    return "".join(w.capitalize() for w in c_struct[len("cumem_"):-len("_t")].split("_"))


def split_types(text):
    """Julia type tuple contents into types (braces nest, commas separate)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def main(readme_path, header_path):
    readme = open(readme_path).read()
    header = open(header_path).read()
    functions, enums, structs = header_functions(header), header_enums(header), header_structs(header)
    errors = []
    if "**Untested.**" not in readme:
        fail(errors, "the guide must say plainly that it is untested")

    calls = re.findall(r"ccall\(\(:(\w+), libcumem\),\s*([\w{}]+),\s*\(([^()]*)\)", readme)
    evals = re.findall(r"\(:\w+, :(cumem_\w+_release)\)", readme)
    if re.search(r"@eval \$f\(h::Ptr\{Cvoid\}\) = ccall\(\(\$\(QuoteNode\(c\)\), libcumem\), "
                 r"Int32, \(Ptr\{Cvoid\},\), h\)", readme):
        calls += [(name, "Int32", "Ptr{Cvoid},") for name in evals]
    elif evals:
        fail(errors, "the @eval release methods are not the ccall this check knows")
    if len(calls) < 10:
        fail(errors, f"only {len(calls)} ccalls found: the pattern no longer matches the guide")
    for name, ret, args in calls:
        if name not in functions:
            fail(errors, f"ccall of {name}: not a function of cumem.h")
            continue
        c_ret, c_params = functions[name]
        if ret not in julia_for(c_ret, enums, structs, "out"):
            fail(errors, f"ccall of {name}: returns {ret}, but cumem.h returns {c_ret}")
        jargs = split_types(args)
        if len(jargs) != len(c_params):
            fail(errors, f"ccall of {name}: {len(jargs)} arguments, cumem.h has {len(c_params)}")
            continue
        for i, (j, c) in enumerate(zip(jargs, c_params)):
            if j not in julia_for(c, enums, structs, "in"):
                fail(errors, f"ccall of {name}: argument {i + 1} is {j}, cumem.h has {c}")

    julia_types = {"UInt32": "uint32_t", "Int32": "int32_t", "UInt64": "uint64_t", "Int64": "int64_t",
                   "UInt8": "uint8_t", "UInt16": "uint16_t"}
    checked = 0
    for c_name, fields_text in re.findall(r"# (cumem_\w+_t)[^\n]*\nstruct \w+\n(.*?)\nend", readme, flags=re.S):
        checked += 1
        jfields = re.findall(r"^\s*(\w+)::([\w{},]+)", fields_text, flags=re.M)
        cfields = structs.get(c_name)
        if cfields is None:
            fail(errors, f"struct for {c_name}: no such struct in cumem.h")
            continue
        if [f for f, _ in jfields] != [f for f, _, _ in cfields]:
            fail(errors, f"struct for {c_name}: fields {[f for f, _ in jfields]}, cumem.h has "
                         f"{[f for f, _, _ in cfields]}")
            continue
        for (jf, jt), (cf, ct, count) in zip(jfields, cfields):
            m = re.match(r"NTuple\{(\w+),(\w+)\}", jt)
            jbase, jcount = (m.group(2), m.group(1)) if m else (jt, None)
            c_base = "uint32_t" if ct in ("cumem_bool_t",) or ct in enums and ct != "cumem_status_t" else ct
            if julia_types.get(jbase) != c_base.replace("cumem_status_t", "int32_t") or \
                    (jcount or None) != (count or None):
                fail(errors, f"struct for {c_name}: field {jf} is {jt}, cumem.h has {ct}"
                             f"{'[' + count + ']' if count else ''}")
    if checked < 2:
        fail(errors, f"only {checked} structs checked: the pattern no longer matches the guide")

    notes = readme.split("- Signatures used above, as declared in `cumem.h`:", 1)
    listed = re.findall(r"`(cumem_\w+)\(([^`]*)\)`", notes[1].split("\n- ", 1)[0]) if len(notes) == 2 else []
    if not listed:
        fail(errors, "the guide's Notes list no signatures")
    for name, params in listed:
        if name not in functions:
            fail(errors, f"Notes: {name} is not a function of cumem.h")
            continue
        plist = [] if not params.strip() else [param_type(p) for p in params.split(",")]
        if [p.replace("const ", "") for p in plist] != [p.replace("const ", "") for p in functions[name][1]] \
                or plist != functions[name][1]:
            fail(errors, f"Notes: {name}({params}) differs from cumem.h's ({', '.join(functions[name][1])})")

    for e in errors:
        print("julia guide:", e)
    print(f"julia guide: {len(calls)} ccalls, {checked} structs and {len(listed)} listed signatures "
          f"checked against cumem.h: {'FAILED' if errors else 'OK'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
