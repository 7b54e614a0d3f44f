//! What `edgerag serve` borrows from the system and may run out of: file descriptors, buffers
//! and memory.

use std::io;

/// Raises the soft limit on open files to the hard one, as far as the system lets it, and
/// returns the limit then in force: `None` where it cannot be known (not Unix).
#[cfg(unix)]
#[allow(unsafe_code)] // getrlimit(2) and setrlimit(2), each given a struct on the stack.
pub(super) fn raise_open_files() -> Option<u64> {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes a `rlimit` to the valid pointer it is given, and that is all.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } != 0 {
        return None;
    }
    // macOS refuses a soft limit over OPEN_MAX (10240) when the hard one is unlimited.
    for soft in [limit.rlim_max, limit.rlim_max.min(10_240)] {
        if soft <= limit.rlim_cur {
            break;
        }
        let raised = libc::rlimit { rlim_cur: soft, rlim_max: limit.rlim_max };
        // SAFETY: setrlimit only reads the `rlimit` behind the valid pointer it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const raised) } == 0 {
            limit.rlim_cur = soft;
            break;
        }
    }
    // `rlim_t` is a u64 on most systems, not all.
    #[allow(clippy::useless_conversion)]
    let limit = u64::try_from(limit.rlim_cur).unwrap_or(u64::MAX);
    Some(limit)
}

/// Where the limit on open files is not known.
#[cfg(not(unix))]
pub(super) fn raise_open_files() -> Option<u64> {
    None
}

/// The files (descriptors) the process has open, where the system lists them (`/dev/fd`:
/// Linux, macOS, the BSDs); else 0.
pub(super) fn open_files() -> u64 {
    // Listing the directory opens one more, which is not counted.
    std::fs::read_dir("/dev/fd").map_or(0, |entries| entries.count().saturating_sub(1) as u64)
}

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
    fn the_open_files_are_counted_and_their_limit_known() {
        let open = open_files();
        assert!(open >= 3, "the standard streams at least");
        assert!(raise_open_files().is_some_and(|limit| limit > open));
    }

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
