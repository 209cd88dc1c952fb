// Handle checks shared by every entry point (see capi.hpp).
#include "capi.hpp"

namespace cumem::capi {

void bad_handle(const char* name, const char* expected, Tag found) {
  const char* what = nullptr;
  switch (found) {
    case Tag::dead: what = nullptr; break;
    case Tag::device: what = "cumem_device_t"; break;
    case Tag::stream: what = "cumem_stream_t"; break;
    case Tag::event: what = "cumem_event_t"; break;
    case Tag::resource: what = "cumem_resource_t"; break;
    case Tag::buffer: what = "cumem_buffer_t"; break;
    case Tag::program: what = "cumem_program_t"; break;
    case Tag::library: what = "cumem_library_t"; break;
    case Tag::kernel: what = "cumem_kernel_t"; break;
    case Tag::allocation_handle: what = "cumem_allocation_handle_t"; break;
    case Tag::virtual_ipc_handle: what = "cumem_virtual_ipc_handle_t"; break;
    case Tag::graph: what = "cumem_graph_t"; break;
    case Tag::snapshot: what = "cumem_snapshot_t"; break;
  }
  if (found == Tag::dead)
    fail(Status::invalid_argument, std::string("argument '") + name + "' is not a live " +
                                       expected + ": its object was released and destroyed");
  if (what)
    fail(Status::invalid_argument,
         std::string("argument '") + name + "' is a " + what + ", not a " + expected);
  fail(Status::invalid_argument, std::string("argument '") + name + "' is not a " + expected +
                                     " handle made by libcumem");
}

void released_handle(const char* name, const char* type) {
  fail(Status::invalid_argument, std::string("argument '") + name + "' is a " + type +
                                     " handle that was released already (every reference given back)");
}

void surplus_retain(const char* name, const char* type) {
  fail(Status::invalid_argument, std::string("cannot retain argument '") + name + "': this " + type +
                                     " handle was released already (every reference given back)");
}

void surplus_release(const char* name, const char* type) {
  fail(Status::invalid_argument,
       std::string("argument '") + name + "' is a " + type +
           " handle released once too often (the user holds no reference to it); nothing was "
           "released");
}

}  // namespace cumem::capi
