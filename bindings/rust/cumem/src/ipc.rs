//! IPC (cuda.core's IPCAllocationHandle and IPCBufferDescriptor): a pool
//! exported as an allocation handle (a file descriptor and the pool's
//! descriptor), buffers shared by their descriptors, both sent over Unix
//! sockets. See cumem.h, "IPC", for what a descriptor can and cannot do
//! (the trust model).
use std::ptr::{self, NonNull};

use crate::{check, non_null, opt_stream, sys, Buffer, Device, Error, Resource, Result, Status, Stream};

/// A pool's or a buffer's descriptor: 160 plain bytes, safe to copy and
/// send over any channel; every field is validated when it is opened.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct IpcDescriptor(pub sys::cumem_ipc_descriptor_t);

impl IpcDescriptor {
    pub fn as_bytes(&self) -> &[u8] {
        &self.0.bytes
    }

    /// A descriptor from its bytes (`Status::INVALID_ARGUMENT` for another length).
    pub fn from_bytes(bytes: &[u8]) -> Result<IpcDescriptor> {
        let mut d = sys::cumem_ipc_descriptor_t { bytes: [0; sys::CUMEM_IPC_DESCRIPTOR_SIZE] };
        if bytes.len() != d.bytes.len() {
            return Err(Error {
                status: Status::INVALID_ARGUMENT,
                message: format!("an IPC descriptor is {} bytes, not {}", d.bytes.len(), bytes.len()),
            });
        }
        d.bytes.copy_from_slice(bytes);
        Ok(IpcDescriptor(d))
    }
}

impl std::fmt::Debug for IpcDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IpcDescriptor(")?;
        for b in &self.0.bytes[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "...)")
    }
}

/// An exported pool: a file descriptor (owned, closed on `Drop`) and the
/// pool's descriptor.
#[derive(Debug)]
pub struct AllocationHandle {
    raw: NonNull<sys::cumem_allocation_handle_t>,
}
// SAFETY: the handle never changes once made; every call only reads it.
unsafe impl Send for AllocationHandle {}
unsafe impl Sync for AllocationHandle {}

impl AllocationHandle {
    /// The file descriptor, borrowed: valid while the handle lives.
    pub fn fd(&self) -> Result<i32> {
        let mut fd = -1;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_allocation_handle_fd(self.raw.as_ptr(), &mut fd) })?;
        Ok(fd)
    }

    /// A duplicate of the file descriptor (close-on-exec), the caller's to close.
    pub fn dup_fd(&self) -> Result<i32> {
        let mut fd = -1;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { sys::cumem_allocation_handle_dup_fd(self.raw.as_ptr(), &mut fd) })?;
        Ok(fd)
    }

    /// The pool's descriptor, to send with the file descriptor.
    pub fn descriptor(&self) -> Result<IpcDescriptor> {
        let mut d = sys::cumem_ipc_descriptor_t { bytes: [0; sys::CUMEM_IPC_DESCRIPTOR_SIZE] };
        // SAFETY: live handle, valid out struct.
        check(unsafe { sys::cumem_allocation_handle_descriptor(self.raw.as_ptr(), &mut d) })?;
        Ok(IpcDescriptor(d))
    }

    /// A handle from a pool descriptor and a file descriptor received with
    /// it; on success the handle owns `fd` (on failure the caller does).
    pub fn from_fd(descriptor: &IpcDescriptor, fd: i32) -> Result<AllocationHandle> {
        let mut raw = ptr::null_mut();
        // SAFETY: a valid descriptor struct and out pointer.
        check(unsafe { sys::cumem_allocation_handle_from_fd(&descriptor.0, fd, &mut raw) })?;
        Ok(AllocationHandle { raw: non_null(raw) })
    }
}

impl Drop for AllocationHandle {
    fn drop(&mut self) {
        // SAFETY: we own one reference (the last closes the fd).
        unsafe { sys::cumem_allocation_handle_release(self.raw.as_ptr()) };
    }
}

impl Resource {
    /// Host memory other processes can map: one sealed memfd of `capacity`
    /// bytes (needs no driver); share it with `get_allocation_handle`.
    pub fn host_shared(capacity: u64) -> Result<Resource> {
        // SAFETY: a plain value and a valid out pointer.
        Self::make(|out| unsafe { sys::cumem_host_shared_resource_create(capacity, out) })
    }

    /// Stream-ordered device memory with pool options (a new pool with
    /// `new_pool`; `ipc_enabled` to share it).
    pub fn device_with_options(device: &Device, options: &sys::cumem_pool_options_t) -> Result<Resource> {
        // SAFETY: live device, options as the header reads them.
        Self::make(|out| unsafe { sys::cumem_device_resource_create(device.raw.as_ptr(), options, out) })
    }

    /// Exports an IPC-enabled pool (or a host shared resource).
    pub fn get_allocation_handle(&self) -> Result<AllocationHandle> {
        let mut raw = ptr::null_mut();
        // SAFETY: live resource, valid out pointer.
        check(unsafe { sys::cumem_resource_get_allocation_handle(self.raw.as_ptr(), &mut raw) })?;
        Ok(AllocationHandle { raw: non_null(raw) })
    }

    /// Imports another process's pool: a resource that opens its buffer
    /// descriptors and cannot allocate. `device`: the pool's device (device
    /// memory), the device that maps it (pinned), None (host shared).
    pub fn from_allocation_handle(device: Option<&Device>, handle: &AllocationHandle) -> Result<Resource> {
        let d = device.map_or(ptr::null(), |d| d.raw.as_ptr() as *const _);
        // SAFETY: optional live device, live handle.
        Self::make(|out| unsafe { sys::cumem_resource_from_allocation_handle(d, handle.raw.as_ptr(), out) })
    }
}

impl<T> Buffer<T> {
    /// This buffer's descriptor (a buffer of an IPC-enabled pool, a host
    /// shared resource or a legacy device resource).
    pub fn get_ipc_descriptor(&self) -> Result<IpcDescriptor> {
        let mut d = sys::cumem_ipc_descriptor_t { bytes: [0; sys::CUMEM_IPC_DESCRIPTOR_SIZE] };
        // SAFETY: live handle, valid out struct.
        check(unsafe { sys::cumem_buffer_get_ipc_descriptor(self.raw.as_ptr(), &mut d) })?;
        Ok(IpcDescriptor(d))
    }
}

impl Buffer {
    /// Opens another process's buffer from its descriptor, with the resource
    /// imported from its pool (or a legacy device resource), mapped on
    /// `stream`. Dropping it unmaps it here, never frees the exporter's memory.
    pub fn from_ipc_descriptor(resource: &Resource, descriptor: &IpcDescriptor, stream: Option<&Stream>) -> Result<Buffer> {
        let mut raw = ptr::null_mut();
        // SAFETY: live resource, a valid descriptor, optional live stream.
        check(unsafe {
            sys::cumem_buffer_from_ipc_descriptor(resource.raw.as_ptr(), &descriptor.0, opt_stream(stream), &mut raw)
        })?;
        Ok(Buffer::adopt(non_null(raw)))
    }
}

/// Sends one message over a connected Unix socket (its fd): the handle's
/// file descriptor and pool descriptor when given, then `descriptors` (at
/// most 1024 in all). Blocks until all is sent.
pub fn ipc_send(socket: i32, handle: Option<&AllocationHandle>, descriptors: &[IpcDescriptor]) -> Result<()> {
    let h = handle.map_or(ptr::null(), |h| h.raw.as_ptr() as *const _);
    let count = u32::try_from(descriptors.len()).unwrap_or(u32::MAX);
    let d = if descriptors.is_empty() { ptr::null() } else { descriptors.as_ptr() as *const sys::cumem_ipc_descriptor_t };
    // SAFETY: IpcDescriptor is a newtype of the C struct (same layout);
    // `count` descriptors at `d`.
    check(unsafe { sys::cumem_ipc_send(socket, h, d, count) })
}

/// Receives one message sent by [`ipc_send`]: the allocation handle if one
/// came, and up to `capacity` descriptors.
pub fn ipc_receive(socket: i32, capacity: usize) -> Result<(Option<AllocationHandle>, Vec<IpcDescriptor>)> {
    let mut descriptors =
        vec![IpcDescriptor(sys::cumem_ipc_descriptor_t { bytes: [0; sys::CUMEM_IPC_DESCRIPTOR_SIZE] }); capacity];
    let mut raw = ptr::null_mut();
    let mut count = 0u32;
    let cap = u32::try_from(capacity).unwrap_or(u32::MAX);
    // SAFETY: room for `capacity` descriptors, valid out pointers.
    check(unsafe {
        sys::cumem_ipc_receive(socket, &mut raw, descriptors.as_mut_ptr() as *mut sys::cumem_ipc_descriptor_t, cap, &mut count)
    })?;
    descriptors.truncate(count as usize);
    Ok((NonNull::new(raw).map(|raw| AllocationHandle { raw }), descriptors))
}
