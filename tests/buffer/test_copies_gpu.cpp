// Copies between every pair of memory kinds, and fills, verified byte-exact.
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_fixture.hpp"

namespace {

struct Kind {
  std::string name;
  cumem_resource_t* resource = nullptr;  // null for registered memory
};

class CopyTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    cumem_managed_resource_options_t managed = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
    managed.preferred_location = {CUMEM_LOCATION_DEVICE, 0};
    add("host", cumem_host_resource_create(nullptr, &res[0]), res[0]);
    add("device", cumem_device_resource_create(device, nullptr, &res[1]), res[1]);
    add("pinned", cumem_pinned_resource_create(device, nullptr, &res[2]), res[2]);
    add("legacy_pinned", cumem_legacy_pinned_resource_create(device, &res[3]), res[3]);
    add("managed", cumem_managed_resource_create(device, &managed, &res[4]), res[4]);
    kinds.push_back({"registered", nullptr});
    CUMEM_ASSERT_OK(cumem_stream_create(device, nullptr, &stream));
  }
  void TearDown() override {
    cumem_stream_release(stream);
    for (auto* r : res) cumem_resource_release(r);
    GpuTest::TearDown();
  }
  void add(const char* name, cumem_status_t s, cumem_resource_t* r) {
    ASSERT_EQ(s, CUMEM_SUCCESS) << name << ": " << cumem_last_error_message();
    kinds.push_back({name, r});
  }
  // A buffer of `kind`; registered memory is host memory registered here.
  cumem_buffer_t* make(const Kind& kind, size_t size) {
    cumem_buffer_t* b = nullptr;
    if (kind.resource) {
      EXPECT_EQ(cumem_resource_allocate(kind.resource, size, stream, &b), CUMEM_SUCCESS)
          << kind.name << ": " << cumem_last_error_message();
      return b;
    }
    void* host = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
    EXPECT_EQ(cumem_buffer_register_host(device, host, size, &b), CUMEM_SUCCESS)
        << cumem_last_error_message();
    registered.push_back(host);
    return b;
  }
  void free_registered() {
    for (void* p : registered) std::free(p);
    registered.clear();
  }
  // Fills `b` with `data` through a host staging buffer, and reads it back.
  void write(cumem_buffer_t* b, const std::vector<uint8_t>& data) {
    cumem_buffer_t* stage = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_wrap(const_cast<uint8_t*>(data.data()), data.size(), nullptr,
                                      nullptr, &stage));
    CUMEM_ASSERT_OK(cumem_buffer_copy_to(stage, b, stream));
    CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
    cumem_buffer_release(stage);
  }
  std::vector<uint8_t> read(cumem_buffer_t* b, size_t size) {
    std::vector<uint8_t> out(size, 0xCD);
    cumem_buffer_t* stage = nullptr;
    EXPECT_EQ(cumem_buffer_wrap(out.data(), size, nullptr, nullptr, &stage), CUMEM_SUCCESS);
    EXPECT_EQ(cumem_buffer_copy_from(stage, b, stream), CUMEM_SUCCESS) << cumem_last_error_message();
    EXPECT_EQ(cumem_stream_synchronize(stream), CUMEM_SUCCESS);
    cumem_buffer_release(stage);
    return out;
  }

  cumem_resource_t* res[5] = {};
  std::vector<Kind> kinds;
  std::vector<void*> registered;
  cumem_stream_t* stream = nullptr;
  std::mt19937 rng{12345};
};

TEST_F(CopyTest, EveryPairOfKindsByteExact) {
  const size_t size = (1u << 20) + 13;  // odd size: no alignment luck
  for (const Kind& from : kinds) {
    for (const Kind& to : kinds) {
      SCOPED_TRACE(from.name + " -> " + to.name);
      std::vector<uint8_t> data(size);
      for (auto& v : data) v = static_cast<uint8_t>(rng());
      cumem_buffer_t* src = make(from, size);
      cumem_buffer_t* dst = make(to, size);
      ASSERT_NE(src, nullptr);
      ASSERT_NE(dst, nullptr);
      write(src, data);
      CUMEM_ASSERT_OK(cumem_buffer_fill(dst, 0, 1, stream));
      CUMEM_ASSERT_OK(cumem_buffer_copy_to(src, dst, stream));
      const std::vector<uint8_t> got = read(dst, size);
      EXPECT_TRUE(got == data) << "copy differs";
      CUMEM_ASSERT_OK(cumem_buffer_close(src, stream));
      CUMEM_ASSERT_OK(cumem_buffer_close(dst, stream));
      cumem_buffer_release(src);
      cumem_buffer_release(dst);
    }
  }
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  free_registered();
}

TEST_F(CopyTest, RegionCopiesBetweenDeviceAndPinned) {
  const size_t size = 4096;
  cumem_buffer_t* d = make(kinds[1], size);
  cumem_buffer_t* p = make(kinds[2], size);
  std::vector<uint8_t> data(size);
  for (auto& v : data) v = static_cast<uint8_t>(rng());
  write(d, data);
  CUMEM_ASSERT_OK(cumem_buffer_fill(p, 0xFF, 1, stream));
  CUMEM_ASSERT_OK(cumem_buffer_copy_region(p, 100, d, 1000, 500, stream));
  const std::vector<uint8_t> got = read(p, size);
  for (size_t i = 0; i < size; ++i) {
    const uint8_t want = (i >= 100 && i < 600) ? data[1000 + i - 100] : 0xFF;
    ASSERT_EQ(got[i], want) << "byte " << i;
  }
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_region(p, 4000, d, 0, 97, stream), CUMEM_ERROR_OUT_OF_RANGE,
                     "destination");
  cumem_buffer_t* small = make(kinds[1], 16);
  CUMEM_EXPECT_ERROR(cumem_buffer_copy_to(d, small, stream), CUMEM_ERROR_SIZE_MISMATCH, "4096");
  // A slice of device memory copies like a buffer.
  cumem_buffer_t* view = nullptr;
  CUMEM_ASSERT_OK(cumem_buffer_slice(d, 16, 16, &view));
  CUMEM_ASSERT_OK(cumem_buffer_copy_to(view, small, stream));
  const std::vector<uint8_t> piece = read(small, 16);
  EXPECT_TRUE(std::equal(piece.begin(), piece.end(), data.begin() + 16));
  cumem_buffer_release(view);
  cumem_buffer_release(small);
  cumem_buffer_release(d);
  cumem_buffer_release(p);
}

TEST_F(CopyTest, FillsOfEachWidthOnEveryKind) {
  const size_t size = 1u << 16;
  for (const Kind& k : kinds) {
    SCOPED_TRACE(k.name);
    cumem_buffer_t* b = make(k, size);
    const struct {
      uint32_t value, width;
    } fills[] = {{0xA5, 1}, {0xBEEF, 2}, {0xDEADBEEF, 4}};
    for (const auto& f : fills) {
      CUMEM_ASSERT_OK(cumem_buffer_fill(b, f.value, f.width, stream));
      const std::vector<uint8_t> got = read(b, size);
      size_t wrong = 0;
      for (size_t i = 0; i < size; i += f.width) {
        uint32_t v = 0;
        std::memcpy(&v, got.data() + i, f.width);
        wrong += v != f.value;
      }
      EXPECT_EQ(wrong, 0u) << "width " << f.width;
    }
    // Misaligned slices cannot take 2- or 4-byte fills on device-visible memory.
    cumem_buffer_t* odd = nullptr;
    CUMEM_ASSERT_OK(cumem_buffer_slice(b, 1, 8, &odd));
    if (k.name != "host")
      CUMEM_EXPECT_ERROR(cumem_buffer_fill(odd, 1, 4, stream), CUMEM_ERROR_INVALID_ARGUMENT, "aligned");
    CUMEM_ASSERT_OK(cumem_buffer_fill(odd, 1, 1, stream));
    cumem_buffer_release(odd);
    cumem_buffer_release(b);
  }
  CUMEM_ASSERT_OK(cumem_stream_synchronize(stream));
  free_registered();
}

}  // namespace
