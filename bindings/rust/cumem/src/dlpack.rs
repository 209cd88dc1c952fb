//! DLPack: a buffer exported as a versioned DLPack tensor (the consumer
//! owns it and calls its deleter), and a DLPack tensor imported as a buffer
//! (which calls the tensor's deleter when it is done).
use std::ptr::{self, NonNull};

use crate::{check, non_null, sys, Buffer, Result};

/// How a buffer is described (`cumem_dlpack_options_t`): by default
/// one-dimensional bytes; [`DlpackOptions::of`] for elements of a type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DlpackOptions {
    /// DLPack's (code, bits, lanes); (0, 0, 0): bytes (uint8).
    pub dtype: (u8, u8, u16),
    /// Elements per dimension; empty: one dimension over the whole buffer.
    pub shape: Vec<i64>,
    /// In elements; empty: compact row-major.
    pub strides: Vec<i64>,
    pub byte_offset: u64,
    /// DLPack's device type; 0: the buffer's own (kDLCUDA, kDLCUDAHost, ...).
    pub device_type: i32,
    pub read_only: bool,
}

impl DlpackOptions {
    /// `shape` elements of a DLPack dtype (code: 0 int, 1 uint, 2 float;
    /// bits), e.g. `DlpackOptions::of(2, 32, &[4, 4])` for 4x4 float32.
    pub fn of(code: u8, bits: u8, shape: &[i64]) -> DlpackOptions {
        DlpackOptions { dtype: (code, bits, 1), shape: shape.to_vec(), ..Default::default() }
    }

    fn to_sys(&self) -> sys::cumem_dlpack_options_t {
        sys::cumem_dlpack_options_t {
            dtype_code: self.dtype.0,
            dtype_bits: self.dtype.1,
            dtype_lanes: self.dtype.2,
            ndim: self.shape.len() as i32,
            shape: if self.shape.is_empty() { ptr::null() } else { self.shape.as_ptr() },
            strides: if self.strides.is_empty() { ptr::null() } else { self.strides.as_ptr() },
            byte_offset: self.byte_offset,
            device_type: self.device_type,
            read_only: u32::from(self.read_only),
            ..Default::default()
        }
    }
}

impl<T> Buffer<T> {
    /// A versioned DLPack tensor (`DLManagedTensorVersioned*`) of this
    /// buffer, validated by libcumem against its size; it keeps the buffer
    /// alive. The caller owns it: hand it to a consumer, or call its
    /// deleter. While it lives the buffer cannot be closed
    /// (`Status::INVALID_STATE`).
    pub fn to_dlpack(&self, options: &DlpackOptions) -> Result<NonNull<sys::DLManagedTensorVersioned>> {
        let o = options.to_sys();
        let mut t = ptr::null_mut();
        // SAFETY: live handle; shape and strides outlive the call (copied).
        check(unsafe { sys::cumem_buffer_to_dlpack(self.raw.as_ptr(), &o, &mut t) })?;
        Ok(non_null(t))
    }
}

impl Buffer {
    /// A buffer over a DLPack tensor's memory (compact row-major tensors
    /// only); the buffer calls the tensor's deleter when it is closed or
    /// dropped. A refused tensor stays the caller's.
    ///
    /// # Safety
    /// `tensor` is a valid `DLManagedTensorVersioned*` the caller owns;
    /// on success its ownership moves to the buffer.
    pub unsafe fn from_dlpack(tensor: NonNull<sys::DLManagedTensorVersioned>, allow_read_only: bool) -> Result<Buffer> {
        let mut raw = ptr::null_mut();
        check(sys::cumem_buffer_from_dlpack(tensor.as_ptr(), u32::from(allow_read_only), &mut raw))?;
        Ok(Buffer::adopt(non_null(raw)))
    }
}
