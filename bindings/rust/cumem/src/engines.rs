//! What communication engines use: a buffer's memory as a dma-buf file
//! descriptor (for `ibv_reg_dmabuf_mr`), and the unmap notifications a
//! registration cache subscribes to (cumem.h, "Communication engines").
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::raw::c_void;

use crate::{check, sys, Buffer, Result};

/// A buffer's memory as a dma-buf: the backing allocation rounded out to
/// host pages, owned as an `OwnedFd` (closed when dropped), and where the
/// buffer lies in it.
#[derive(Debug)]
pub struct DmaBuf {
    pub fd: OwnedFd,
    /// The buffer's first byte, from the start of the fd's range.
    pub offset: u64,
    /// Bytes in the fd's range.
    pub length: u64,
    /// Device address of the range's first byte.
    pub address: u64,
    pub device_id: i32,
    /// The whole backing allocation; false: only the chunks holding the buffer.
    pub whole_allocation: bool,
}

impl<T> Buffer<T> {
    /// The buffer's device memory as a dma-buf (`cumem_buffer_get_dmabuf`);
    /// `flags` 0 or `sys::CUMEM_DMABUF_MAPPING_PCIE`.
    pub fn get_dmabuf(&self, flags: u32) -> Result<DmaBuf> {
        let mut d = sys::cumem_dmabuf_t::default();
        // SAFETY: live handle; struct_size set by Default.
        check(unsafe { sys::cumem_buffer_get_dmabuf(self.raw.as_ptr(), flags, &mut d) })?;
        Ok(DmaBuf {
            // SAFETY: on success the fd is new and ours (the header's rule).
            fd: unsafe { OwnedFd::from_raw_fd(d.fd) },
            offset: d.offset,
            length: d.length,
            address: d.address,
            device_id: d.device_id,
            whole_allocation: d.whole_allocation != 0,
        })
    }
}

/// One unmap notification (`cumem_unmap_event_t`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnmapEvent {
    /// `sys::CUMEM_UNMAP_*`.
    pub reason: i32,
    /// 0 with `size` 0: the range is not known (a pool's trim or destruction).
    pub address: u64,
    pub size: u64,
    pub resource_id: u64,
    pub device_id: i32,
}

type Callback = Box<dyn Fn(&UnmapEvent) + Send + Sync>;

/// A subscription to the unmap notifications; dropping it unsubscribes (and
/// waits for calls running on other threads).
pub struct UnmapSubscription {
    id: u64,
    // Boxed twice: the C side holds a thin pointer to the inner box.
    _callback: Box<Callback>,
}

impl UnmapSubscription {
    /// The subscription's number.
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for UnmapSubscription {
    fn drop(&mut self) {
        // SAFETY: our subscription; a failure (never made) leaves nothing to do.
        unsafe { sys::cumem_unmap_unsubscribe(self.id) };
    }
}

unsafe extern "C" fn deliver(event: *const sys::cumem_unmap_event_t, user_data: *mut c_void) {
    // SAFETY: libcumem passes a valid event and our user data for the call.
    let (e, f) = unsafe { (&*event, &*(user_data as *const Callback)) };
    let ev = UnmapEvent {
        reason: e.reason,
        address: e.address,
        size: e.size,
        resource_id: e.resource_id,
        device_id: e.device_id,
    };
    // A panic must not unwind into libcumem.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&ev)));
}

/// Calls `f` before libcumem gives device memory back (on the thread that
/// gives it back, possibly under a resource's lock: `f` must not call
/// libcumem).
pub fn unmap_subscribe<F: Fn(&UnmapEvent) + Send + Sync + 'static>(f: F) -> Result<UnmapSubscription> {
    let callback: Box<Callback> = Box::new(Box::new(f));
    let mut id = 0;
    let user_data = &*callback as *const Callback as *mut c_void;
    // SAFETY: the callback lives as long as the subscription, which ends
    // before it is dropped.
    check(unsafe { sys::cumem_unmap_subscribe(Some(deliver), user_data, &mut id) })?;
    Ok(UnmapSubscription { id, _callback: callback })
}
