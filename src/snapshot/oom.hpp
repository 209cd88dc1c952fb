// Snapshots written to files: on request (cumem_snapshot_write_json), and
// automatically when a call runs out of memory and $CUMEM_OOM_SNAPSHOT
// names a path (PyTorch's OOM observer writing _dump_snapshot).
#pragma once

#include <string>

namespace cumem::core::snapshot {

// Writes `text` to `path` (through a temporary file renamed over it, so a
// reader never sees half a snapshot). Throws invalid_argument naming the
// path and the system's reason.
void write_file(const std::string& path, const std::string& text);

// With $CUMEM_OOM_SNAPSHOT set (read once): a snapshot of every live
// resource, with the history's events, written to that path, where "%p"
// becomes the process id and "%n" the number of this out-of-memory failure
// (1, 2, ...; without %n each one overwrites the file). Returns the path
// written, or "" (not set, or writing failed: the log says why). Never
// throws; a failure inside it (an allocation of its own) writes nothing.
std::string on_out_of_memory() noexcept;

}  // namespace cumem::core::snapshot
