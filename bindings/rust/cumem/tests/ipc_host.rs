//! IPC through the safe crate on the host shared resource (needs no
//! driver): a pool and a buffer sent to a forked child over a socket pair;
//! descriptors' bytes; refusals. A binary of its own with one test, so that
//! the fork happens while no other test thread is inside libcumem.
use cumem::{ipc_receive, ipc_send, AllocationHandle, Buffer, IpcDescriptor, Resource, Status};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;

extern "C" {
    fn fork() -> i32;
    fn waitpid(pid: i32, status: *mut i32, options: i32) -> i32;
    fn _exit(code: i32) -> !;
}

fn child(socket: &UnixStream) -> i32 {
    let Ok((Some(handle), descriptors)) = ipc_receive(socket.as_raw_fd(), 16) else { return 2 };
    let Ok(resource) = Resource::from_allocation_handle(None, &handle) else { return 3 };
    let Ok(b) = Buffer::from_ipc_descriptor(&resource, &descriptors[0], None) else { return 4 };
    let mut data = [0u8; 5];
    if b.slice(0, 5).and_then(|s| s.copy_to_slice(&mut data, None)).is_err() || &data != b"hello" {
        return 5;
    }
    if b.slice(100, 5).and_then(|s| s.copy_from_slice(b"reply", None)).is_err() {
        return 6;
    }
    let mut broken = *descriptors[0].as_bytes().first_chunk::<160>().unwrap();
    broken[40] ^= 1;
    match Buffer::from_ipc_descriptor(&resource, &IpcDescriptor::from_bytes(&broken).unwrap(), None) {
        Err(e) if e.status() == Status::INVALID_ARGUMENT => 0,
        _ => 7,
    }
}

#[test]
fn a_pool_and_a_buffer_to_a_forked_child() {
    let r = Resource::host_shared(1 << 20).unwrap();
    let b = r.allocate(4096, None).unwrap();
    b.slice(0, 5).unwrap().copy_from_slice(b"hello", None).unwrap();
    let handle = r.get_allocation_handle().unwrap();
    assert!(handle.fd().unwrap() >= 0);
    let again = AllocationHandle::from_fd(&handle.descriptor().unwrap(), handle.dup_fd().unwrap()).unwrap();
    assert_eq!(again.descriptor().unwrap(), handle.descriptor().unwrap());
    let d = b.get_ipc_descriptor().unwrap();
    assert_eq!(IpcDescriptor::from_bytes(d.as_bytes()).unwrap(), d);
    assert_eq!(IpcDescriptor::from_bytes(&[0; 3]).unwrap_err().status(), Status::INVALID_ARGUMENT);
    let not_shared = Resource::host().unwrap().allocate(8, None).unwrap();
    assert_eq!(not_shared.get_ipc_descriptor().unwrap_err().status(), Status::NOT_SUPPORTED);

    let (parent_end, child_end) = UnixStream::pair().unwrap();
    // SAFETY: the child only calls libcumem's host-only paths and exits.
    let pid = unsafe { fork() };
    if pid == 0 {
        drop(parent_end);
        let code = child(&child_end);
        // SAFETY: leave without running the test harness's teardown.
        unsafe { _exit(code) };
    }
    drop(child_end);
    ipc_send(parent_end.as_raw_fd(), Some(&handle), &[d]).unwrap();
    let mut status = 0;
    // SAFETY: our child's pid, a valid out pointer.
    assert_eq!(unsafe { waitpid(pid, &mut status, 0) }, pid);
    assert_eq!(status, 0, "the child's exit status (code {})", (status >> 8) & 0xff);
    let mut reply = [0u8; 5];
    b.slice(100, 5).unwrap().copy_to_slice(&mut reply, None).unwrap();
    assert_eq!(&reply, b"reply");
    drop(parent_end);
}
