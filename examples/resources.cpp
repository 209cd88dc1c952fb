// Allocates from every resource kind, copies a pattern through all of them
// (host -> device -> pinned pool -> legacy pinned -> managed -> host), checks
// it arrived intact, and prints each resource's statistics.
#include <cumem/cumem.hpp>

#include <cstdio>
#include <vector>

int main() try {
  auto dev = cumem::Device::get(0);
  auto stream = cumem::Stream::create(dev);
  auto managed_options = cumem::managed_resource_options();
  managed_options.preferred_location = cumem::location::device(0);
  const char* names[] = {"host", "device", "pinned", "legacy pinned", "managed"};
  std::vector<cumem::Resource> resources;
  resources.push_back(cumem::Resource::host());
  resources.push_back(cumem::Resource::device(dev));
  resources.push_back(cumem::Resource::pinned(dev));
  resources.push_back(cumem::Resource::legacy_pinned(dev));
  resources.push_back(cumem::Resource::managed(dev, managed_options));

  const size_t size = 1 << 20;
  std::vector<cumem::Buffer> buffers;
  for (auto& r : resources) buffers.push_back(r.allocate(size, stream));
  auto* first = buffers.front().data<unsigned char>();
  for (size_t i = 0; i < size; ++i) first[i] = static_cast<unsigned char>(i * 31 + 7);
  for (size_t k = 1; k < buffers.size(); ++k) buffers[k - 1].copy_to(buffers[k], stream);
  stream.synchronize();
  const auto* last = buffers.back().data<unsigned char>();  // managed: readable on the host
  size_t bad = 0;
  for (size_t i = 0; i < size; ++i) bad += last[i] != static_cast<unsigned char>(i * 31 + 7);
  std::printf("copied %zu bytes host -> device -> pinned -> legacy pinned -> managed: %s\n", size,
              bad ? "MISMATCH" : "OK");

  for (size_t k = 0; k < resources.size(); ++k) {
    const auto p = resources[k].properties();
    const auto s = resources[k].statistics();
    std::printf("%-14s pool:%s device:%s host:%s  in use %llu B, peak %llu B, live %llu, total %llu\n",
                names[k], p.is_pool ? "yes" : "no ", p.device_accessible ? "yes" : "no ",
                p.host_accessible ? "yes" : "no ", static_cast<unsigned long long>(s.bytes_in_use),
                static_cast<unsigned long long>(s.peak_bytes_in_use),
                static_cast<unsigned long long>(s.live_allocations),
                static_cast<unsigned long long>(s.total_allocations));
  }
  for (auto& b : buffers) b.close(stream);  // stream-ordered frees
  stream.synchronize();
  return bad ? 1 : 0;
} catch (const cumem::Error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return e.status() == CUMEM_ERROR_NO_DRIVER || e.status() == CUMEM_ERROR_NO_DEVICE ? 77 : 1;
}
