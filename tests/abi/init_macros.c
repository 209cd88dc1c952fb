#include <cumem/cumem.h>
int main(void) {
  cumem_device_properties_t a = CUMEM_DEVICE_PROPERTIES_INIT;
  cumem_resource_properties_t b = CUMEM_RESOURCE_PROPERTIES_INIT;
  cumem_resource_statistics_t c = CUMEM_RESOURCE_STATISTICS_INIT;
  cumem_pool_attributes_t d = CUMEM_POOL_ATTRIBUTES_INIT;
  cumem_buffer_info_t e = CUMEM_BUFFER_INFO_INIT;
  cumem_kernel_attributes_t f = CUMEM_KERNEL_ATTRIBUTES_INIT;
  cumem_stream_options_t g = CUMEM_STREAM_OPTIONS_INIT;
  cumem_event_options_t h = CUMEM_EVENT_OPTIONS_INIT;
  cumem_host_resource_options_t i = CUMEM_HOST_RESOURCE_OPTIONS_INIT;
  cumem_pool_options_t j = CUMEM_POOL_OPTIONS_INIT;
  cumem_managed_resource_options_t k = CUMEM_MANAGED_RESOURCE_OPTIONS_INIT;
  cumem_program_options_t l = CUMEM_PROGRAM_OPTIONS_INIT;
  cumem_launch_config_t m = CUMEM_LAUNCH_CONFIG_INIT;
  cumem_caching_statistics_t n = CUMEM_CACHING_STATISTICS_INIT;
  cumem_dlpack_options_t o = CUMEM_DLPACK_OPTIONS_INIT;
  cumem_resource_callbacks_t q = CUMEM_RESOURCE_CALLBACKS_INIT;
  cumem_caching_resource_options_t r = CUMEM_CACHING_RESOURCE_OPTIONS_INIT;
  cumem_capture_info_t s = CUMEM_CAPTURE_INFO_INIT;
  cumem_graph_options_t t = CUMEM_GRAPH_OPTIONS_INIT;
  cumem_graph_memory_attributes_t u = CUMEM_GRAPH_MEMORY_ATTRIBUTES_INIT;
  cumem_copy_options_t v = CUMEM_COPY_OPTIONS_INIT;
  cumem_batch_statistics_t w = CUMEM_BATCH_STATISTICS_INIT;
  cumem_failure_callback_t x = CUMEM_FAILURE_CALLBACK_INIT;
  cumem_failure_info_t y = CUMEM_FAILURE_INFO_INIT;
  cumem_dmabuf_t z = CUMEM_DMABUF_INIT;
  cumem_unmap_event_t ze = CUMEM_UNMAP_EVENT_INIT;
  return (int)(a.struct_size + b.struct_size + c.struct_size + d.struct_size + e.struct_size + f.struct_size +
               g.struct_size + h.struct_size + i.struct_size + j.struct_size + k.struct_size + l.struct_size + m.struct_size +
               n.struct_size + o.struct_size + q.struct_size + r.struct_size + s.struct_size +
               t.struct_size + u.struct_size + v.struct_size + w.struct_size + x.struct_size +
               y.struct_size + z.struct_size + ze.struct_size) & 0;
}
