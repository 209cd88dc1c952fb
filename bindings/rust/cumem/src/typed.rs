//! Typed buffers: `Buffer<T>` for plain-data element types, as cudarc's
//! `CudaSlice<T>` (allocate `len` elements, copy whole slices in and out,
//! views of element ranges, reinterpretation).
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr;

use crate::{check, non_null, opt_stream, sys, Buffer, Error, Resource, Result, Status, Stream};

/// Element types whose values are plain bytes on the device and in host
/// memory alike (no pointers to host memory, no padding that a copy could
/// leave undefined, every bit pattern valid), so that memory copied from a
/// buffer is a valid `[T]`. cudarc's `DeviceRepr` plays the same part.
///
/// # Safety
/// Implement it only for `#[repr(C)]` (or primitive) types that are `Copy`,
/// have no padding and accept every bit pattern.
pub unsafe trait DeviceRepr: Copy + 'static {}

macro_rules! device_repr {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive with no padding; every bit pattern is a value.
        unsafe impl DeviceRepr for $t {}
    )*};
}
device_repr!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);
// SAFETY: an array of padding-free plain data is padding-free plain data.
unsafe impl<T: DeviceRepr, const N: usize> DeviceRepr for [T; N] {}

fn element_count<T>(bytes: usize) -> Result<usize> {
    let n = size_of::<T>();
    if n == 0 || bytes % n != 0 {
        return Err(Error {
            status: Status::SIZE_MISMATCH,
            message: format!(
                "{bytes} bytes are not a whole number of {} ({n} bytes each)",
                std::any::type_name::<T>()
            ),
        });
    }
    Ok(bytes / n)
}

fn bytes_of<T>(len: usize) -> Result<usize> {
    len.checked_mul(size_of::<T>()).ok_or_else(|| Error {
        status: Status::OUT_OF_RANGE,
        message: format!("{len} elements of {} overflow usize", std::any::type_name::<T>()),
    })
}

impl Resource {
    /// `len` elements of `T`, ordered on `stream` (contents undefined, as
    /// cudarc's `alloc`).
    pub fn alloc<T: DeviceRepr>(&self, len: usize, stream: Option<&Stream>) -> Result<Buffer<T>> {
        let bytes = bytes_of::<T>(len)?;
        let mut raw = ptr::null_mut();
        // SAFETY: live resource, optional live stream, valid out pointer.
        check(unsafe { sys::cumem_resource_allocate(self.raw.as_ptr(), bytes, opt_stream(stream), &mut raw) })?;
        Ok(Buffer::adopt(non_null(raw)))
    }

    /// `len` elements of `T`, all bytes zero, ordered on `stream` (cudarc's
    /// `alloc_zeros`).
    pub fn alloc_zeros<T: DeviceRepr>(&self, len: usize, stream: Option<&Stream>) -> Result<Buffer<T>> {
        let b = self.alloc::<T>(len, stream)?;
        if len > 0 {
            b.fill(0, 1, stream)?;
        }
        Ok(b)
    }

    /// A new buffer holding a copy of `values`, made on `stream` and waited
    /// for (cudarc's `clone_htod`); `stream` None: as for
    /// [`Buffer::copy_from_slice`].
    pub fn from_slice<T: DeviceRepr>(&self, values: &[T], stream: Option<&Stream>) -> Result<Buffer<T>> {
        let b = self.alloc::<T>(values.len(), stream)?;
        b.copy_from_slice(values, stream)?;
        Ok(b)
    }
}

impl<T> Buffer<T> {
    /// The number of `T` elements (the size in bytes over `size_of::<T>()`).
    pub fn len(&self) -> Result<usize> {
        element_count::<T>(self.size()?)
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.size()? == 0)
    }

    /// The same buffer, seen as bytes (one handle: no copy, no new reference).
    pub fn as_bytes(&self) -> &Buffer<u8> {
        // SAFETY: Buffer is repr(transparent) over its handle for every T.
        unsafe { &*(self as *const Buffer<T> as *const Buffer<u8>) }
    }

    /// The buffer's memory as elements of `U` (its size must be a multiple
    /// of `size_of::<U>()`: else `Status::SIZE_MISMATCH`); consumes `self`,
    /// no copy.
    pub fn cast<U: crate::DeviceRepr>(self) -> Result<Buffer<U>> {
        element_count::<U>(self.size()?)?;
        let raw = self.raw;
        std::mem::forget(self); // its reference moves into the new value
        Ok(Buffer { raw, _elements: PhantomData })
    }

    /// A view of elements [start, start + len) that keeps this buffer alive
    /// (`cumem_buffer_slice`; `Status::OUT_OF_RANGE` past the end).
    pub fn slice(&self, start: usize, len: usize) -> Result<Buffer<T>> {
        let offset = bytes_of::<T>(start)?;
        let length = bytes_of::<T>(len)?;
        let mut raw = ptr::null_mut();
        // SAFETY: live handle, valid out pointer; libcumem checks the range.
        check(unsafe { sys::cumem_buffer_slice(self.raw.as_ptr(), offset, length, &mut raw) })?;
        Ok(Buffer::adopt(non_null(raw)))
    }

    /// The buffer's elements, copied on `stream` and waited for (cudarc's
    /// `clone_dtoh`); `stream` None: as for [`Buffer::copy_to_slice`].
    pub fn copy_to_vec(&self, stream: Option<&Stream>) -> Result<Vec<T>>
    where
        T: DeviceRepr,
    {
        let n = self.len()?;
        let mut v: Vec<T> = Vec::with_capacity(n);
        self.copy_into(v.as_mut_ptr() as *mut u8, n * size_of::<T>(), stream, "copy_to_vec")?;
        // SAFETY: the copy wrote all n elements of the capacity, and any bytes
        // are valid values of a DeviceRepr type.
        unsafe { v.set_len(n) };
        Ok(v)
    }
}
