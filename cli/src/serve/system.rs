//! What `edgerag serve` borrows from the system and may run out of: file descriptors, buffers
//! and memory.

use std::io;

/// Whether `error` says the process or the system ran out of something (file descriptors,
/// socket buffers, memory) that closing connections gives back; any other failure of one
/// operation (a connection reset before it was accepted, say) says nothing about the next.
pub(super) fn out_of_resources(error: &io::Error) -> bool {
    #[cfg(unix)]
    let codes = [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM];
    // WSAEMFILE and WSAENOBUFS.
    #[cfg(windows)]
    let codes = [10_024, 10_055];
    #[cfg(not(any(unix, windows)))]
    let codes: [i32; 0] = [];
    error.kind() == io::ErrorKind::OutOfMemory
        || error.raw_os_error().is_some_and(|code| codes.contains(&code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn only_exhaustion_is_out_of_resources() {
        for code in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert!(out_of_resources(&io::Error::from_raw_os_error(code)), "{code}");
        }
        for code in [libc::ECONNABORTED, libc::EPROTO, libc::EPERM, libc::EINTR, libc::ENOENT] {
            assert!(!out_of_resources(&io::Error::from_raw_os_error(code)), "{code}");
        }
        assert!(!out_of_resources(&io::ErrorKind::ConnectionAborted.into()));
    }
}
