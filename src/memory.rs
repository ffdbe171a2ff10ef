//! Giving freed memory back to the system.
//!
//! Subscriptions' shared searches hold megabytes each and come and go; glibc's malloc keeps
//! what they free for reuse, so a server that once held many subscriptions kept their
//! memory resident after they were deleted (`scripts/churn.sh`). Two measures, for glibc
//! only (elsewhere both are no-ops):
//!
//! - [`configure`], at start: a fixed mmap threshold of 16 KiB, unless `GLIBC_TUNABLES`
//!   already sets one. Blocks of 16 KiB and more (a search's vertex chunks, queues, paths
//!   of long routes) get mappings of their own, which go back to the system when freed.
//!   glibc's default threshold starts at 128 KiB and rises to the largest block freed (up
//!   to 32 MiB), after which such blocks stay in the heap.
//! - [`released`], when long-lived memory was dropped: once 8 MiB have been, `malloc_trim`
//!   on a blocking thread (one at a time) hands back the free pages inside the heap too,
//!   where smaller blocks lived.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Blocks from this size up get mappings of their own.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: i32 = 16 * 1024;

/// Bytes released before a trim runs.
const TRIM_AFTER: usize = 8 << 20;

/// Bytes released since the last trim started.
static RELEASED: AtomicUsize = AtomicUsize::new(0);
/// A trim is running.
static TRIMMING: AtomicBool = AtomicBool::new(false);

/// Sets the allocator up (module docs). Call it first thing, before other threads start.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let tuned = std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("mmap_threshold"));
        if !tuned {
            // SAFETY: mallopt only sets one of the allocator's parameters (it takes the
            // allocator's own lock); no memory is touched.
            unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
        }
    }
}

/// `bytes` of long-lived memory were just dropped: once enough has been, the free heap
/// pages go back to the system, on a blocking thread (never on the caller's).
pub fn released(bytes: usize) {
    if RELEASED.fetch_add(bytes, Ordering::Relaxed) + bytes < TRIM_AFTER {
        return;
    }
    if TRIMMING.swap(true, Ordering::AcqRel) {
        return; // the running trim, or the next one, covers these bytes
    }
    RELEASED.store(0, Ordering::Relaxed);
    let job = || {
        trim();
        TRIMMING.store(false, Ordering::Release);
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn_blocking(job)),
        Err(_) => drop(std::thread::spawn(job)),
    }
}

fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim works under the allocator's own locks and only returns free
    // pages; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
