// Writes the snapshot of a small training-like loop on the caching adaptor
// over a 512 MiB limit over the host resource, with the history and its
// stacks: weights and optimizer state that stay, activations that grow with
// the batch and go in reverse, gradients, small temporaries, a trim and one
// request too large (an out-of-memory event); the snapshot is taken in the
// middle of a step. For the viewer's browser test (viewer_browser.py) and
// as an example of what a snapshot holds.
// Usage: snapshot_sample OUT.json [--expandable]
// --expandable: the same loop, twice as large, on the expandable caching
// adaptor over an upstream that says its memory is device 0's (run it on
// the VMM fake driver: CUMEM_LIBCUDA=build/tests/fake_driver/
// libfake_cuda_vmm.so), for the README's stand-in picture.
#include <cumem/cumem.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

struct Block {
  void* ptr;
  size_t size;
};

int32_t upstream_allocate(size_t size, void*, void*, void** out) {
  *out = std::aligned_alloc(256, (size + 255) / 256 * 256);
  return *out ? 0 : 1;
}
void upstream_deallocate(void* ptr, size_t, void*, void*) { std::free(ptr); }

}  // namespace

int main(int argc, char** argv) {
  const bool expandable = argc == 3 && std::strcmp(argv[2], "--expandable") == 0;
  if (argc != 2 && !expandable) {
    std::fprintf(stderr, "usage: snapshot_sample OUT.json [--expandable]\n");
    return 2;
  }
  try {
    const size_t scale = expandable ? 2 : 1;
    cumem::Resource host = cumem::Resource::host();
    cumem::Resource upstream;
    if (expandable) {
      cumem_resource_callbacks_t c = cumem::resource_callbacks();
      c.memory_kind = CUMEM_MEMORY_DEVICE;
      c.allocate = upstream_allocate;
      c.deallocate = upstream_deallocate;
      c.stream_ordered = CUMEM_TRUE;
      upstream = cumem::Resource::callback(cumem::Device::get(0), c);
    }
    cumem::Resource limit = cumem::Resource::limit(expandable ? upstream : host, 512 * MiB);
    cumem_caching_resource_options_t options = cumem::caching_resource_options();
    options.expandable = expandable ? CUMEM_TRUE : CUMEM_FALSE;
    cumem::Resource cache =
        expandable ? cumem::Resource::caching(upstream, options) : cumem::Resource::caching(limit);
    cumem_memory_history_options_t o = cumem::memory_history_options();
    o.stacks = CUMEM_TRUE;
    cumem::memory_history_start(o);
    auto alloc = [&](size_t n) { return Block{cache.allocate_raw(n), n}; };
    auto release = [&](const Block& b) { cache.deallocate_raw(b.ptr, b.size); };

    const int layers = 12;
    std::vector<Block> weights, state;
    for (int l = 0; l < layers; ++l) weights.push_back(alloc(scale * 4 * MiB));
    std::mt19937 rng(21);
    std::vector<Block> activations;
    for (int step = 1; step <= 13; ++step) {
      const size_t rows = std::uniform_int_distribution<size_t>(64, 512)(rng);
      for (int l = 0; l < layers; ++l) {
        activations.push_back(alloc(scale * rows * 8 * KiB));
        Block temporary = alloc(16 * KiB + static_cast<size_t>(l) * 512);
        release(temporary);
      }
      if (step == 13) break;  // the snapshot is taken here, mid-step
      std::vector<Block> grads;
      for (int l = layers; l-- > 0;) {
        grads.push_back(alloc(scale * 4 * MiB));
        release(activations.back());
        activations.pop_back();
      }
      if (state.empty())
        for (int l = 0; l < 2 * layers; ++l) state.push_back(alloc(scale * 4 * MiB));
      for (const Block& g : grads) release(g);
      if (step == 8) cache.trim_cache(0);
      if (step == 10 && !expandable) {
        void* p = nullptr;
        if (cumem_resource_allocate_raw(cache.get(), 600 * MiB, nullptr, &p) == CUMEM_SUCCESS)
          cache.deallocate_raw(p, 600 * MiB);  // (cannot happen: more than the limit)
      }
    }
    const cumem::Snapshot s = cumem::Snapshot::take(cache);
    s.write_json(argv[1]);
    std::printf("%llu blocks in %llu segments, %llu events\n",
                static_cast<unsigned long long>(s.totals().block_count),
                static_cast<unsigned long long>(s.totals().segment_count),
                static_cast<unsigned long long>(s.totals().event_count));
    for (const Block& b : activations) release(b);
    for (const Block& b : state) release(b);
    for (const Block& b : weights) release(b);
    return 0;
  } catch (const cumem::Error& e) {
    std::fprintf(stderr, "snapshot_sample: %s\n", e.what());
    return 1;
  }
}
