// Shards are handed out from one 64-bit map of taken shards; a thread gives
// its shard back when it exits (release), and the next thread to take that
// shard (acquire) sees every count the last owner wrote.
#include "thread_shard.hpp"

static_assert(cumem::core::kThreadShards == 64, "the taken map is one 64-bit word");

namespace cumem::core::detail {
namespace {

std::atomic<uint64_t> taken{0};

struct GiveBack {
  ~GiveBack() {
    ThisThread& t = this_thread_state;
    if (t.shard_state != 1) return;
    if (t.shard.exclusive)
      taken.fetch_and(~(uint64_t{1} << t.shard.index), std::memory_order_release);
    // Anything counted later in this thread's exit (another thread_local's
    // destructor freeing memory) goes to the shared shard.
    t.shard = ThreadShard{};
    t.shard_state = 2;
  }
};

}  // namespace

ThreadShard take_thread_shard() noexcept {
  static thread_local GiveBack give_back;  // constructed now: destroyed at thread exit
  (void)&give_back;
  uint64_t map = taken.load(std::memory_order_relaxed);
  ThreadShard shard;
  while (map != ~uint64_t{0}) {
    const int free_bit = __builtin_ctzll(~map);
    if (taken.compare_exchange_weak(map, map | (uint64_t{1} << free_bit),
                                    std::memory_order_acquire, std::memory_order_relaxed)) {
      shard.index = static_cast<size_t>(free_bit);
      shard.exclusive = true;
      break;
    }
  }
  ThisThread& t = this_thread_state;
  t.shard = shard;
  t.shard_state = 1;
  return shard;
}

}  // namespace cumem::core::detail
