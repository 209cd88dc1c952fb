#!/bin/sh
# A Rust crate outside the repository that depends on bindings/rust/cumem
# (by path, as a user's crate would by version) builds, and its program
# runs without LD_LIBRARY_PATH or CUMEM_LIBRARY: cumem-sys loads libcumem
# at run time from the folder found when it was built. Then, that folder
# gone (another machine), from the dynamic loader's search path; and with
# no libcumem anywhere, the program fails with a clear message. Offline,
# no crates from outside. Usage: tools/check-rust-dependent.sh (after
# tools/build.sh).
set -eu
cd "$(dirname "$0")/.."
root=$PWD
command -v cargo >/dev/null || export PATH=$HOME/.cargo/bin:$PATH
work=$(mktemp -d /tmp/cumem-rust-dependent.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/app/src" "$work/built" "$work/system"
cp -L build/libcumem.so.1 "$work/built/libcumem.so.1"  # the folder the build finds
cat > "$work/app/Cargo.toml" <<TOML
[package]
name = "cumem-dependent"
version = "0.1.0"
edition = "2021"

[dependencies]
cumem = { path = "$root/bindings/rust/cumem" }
TOML
cat > "$work/app/src/main.rs" <<'RS'
// A user's program: typed host buffers and the framework configuration.
fn main() -> Result<(), cumem::Error> {
    let host = cumem::Resource::host()?;
    let values: Vec<u32> = (0..256).collect();
    let b = host.from_slice(&values, None)?;
    assert_eq!(b.copy_to_vec(None)?, values);
    cumem::framework_configure("kind:caching,limit:1GiB")?;
    println!("libcumem {} from {}", cumem::version(), cumem::library_path()?);
    Ok(())
}
RS
(cd "$work/app" && CUMEM_LIB_DIR="$work/built" CARGO_TARGET_DIR="$work/target" cargo build --offline --quiet)
app="$work/target/debug/cumem-dependent"

expect() {  # expect WHAT PATTERN OUTPUT
  case "$3" in
    *"$2"*) echo "rust dependent: $1" ;;
    *) echo "rust dependent: $1 FAILED: $3" >&2; exit 1 ;;
  esac
}
out=$(env -u LD_LIBRARY_PATH -u CUMEM_LIBRARY -u CUMEM_LIB_DIR "$app")
expect "runs without LD_LIBRARY_PATH (the folder found at build time)" "from $work/built/libcumem.so.1" "$out"
mv "$work/built/libcumem.so.1" "$work/system/libcumem.so.1"
out=$(env -u CUMEM_LIBRARY LD_LIBRARY_PATH="$work/system" "$app")
expect "finds an installed libcumem on the loader's path" "from $work/system/libcumem.so.1" "$out"
out=$(env -u LD_LIBRARY_PATH CUMEM_LIBRARY="$work/system/libcumem.so.1" "$app")
expect "takes \$CUMEM_LIBRARY" "from $work/system/libcumem.so.1" "$out"
if out=$(env -u LD_LIBRARY_PATH -u CUMEM_LIBRARY "$app" 2>&1); then
  echo "rust dependent: ran with no libcumem anywhere: $out" >&2; exit 1
fi
expect "says why without any libcumem" "libcumem could not be loaded" "$out"
