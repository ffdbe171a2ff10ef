//! Giving freed memory back to the system.
//!
//! Subscriptions' shared searches hold megabytes each and come and go; glibc's malloc keeps
//! what they free for reuse, so a server that once held many subscriptions kept their
//! memory resident after they were deleted (`scripts/churn.sh`). [`released`] is told when
//! long-lived memory was dropped; once 1 MiB has been, `malloc_trim` on a blocking thread
//! (one at a time) hands the free pages of every arena back to the system. For glibc only
//! (elsewhere a no-op).
//!
//! Why not a lower mmap threshold (`GLIBC_TUNABLES=glibc.malloc.mmap_threshold=16384`, which
//! gives each block of 16 KiB and more a mapping of its own that goes back when freed): it
//! returned the memory too, but with a mapping per block a server of 4,000 subscriptions
//! with goals of their own held 10,000 mappings, on the way to the kernel's limit of 65,530
//! per process (an allocation failing there aborts the process). Trimming alone gave the
//! same figures (`scripts/churn.sh`: 24-31 MiB after deleting 2,000 subscriptions) with the
//! memory in the arenas.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Bytes released before a trim runs.
const TRIM_AFTER: usize = 1 << 20;

/// Bytes released since the last trim started.
static RELEASED: AtomicUsize = AtomicUsize::new(0);
/// A trim is running.
static TRIMMING: AtomicBool = AtomicBool::new(false);

/// How long a trim waits after it is called for: the last references to what was dropped
/// go meanwhile, and a burst of deletions gets one trim.
const DELAY: Duration = Duration::from_millis(50);

/// `bytes` of long-lived memory were just dropped: once enough has been, the free pages
/// go back to the system shortly after, on a blocking thread (never on the caller's).
pub fn released(bytes: usize) {
    if RELEASED.fetch_add(bytes, Ordering::Relaxed) + bytes < TRIM_AFTER {
        return;
    }
    if TRIMMING.swap(true, Ordering::AcqRel) {
        return; // the coming trim covers these bytes, or trims again for them
    }
    let job = || {
        loop {
            RELEASED.store(0, Ordering::Relaxed);
            trim();
            TRIMMING.store(false, Ordering::Release);
            // What was released while it ran (its callers saw a trim coming) gets another.
            if RELEASED.load(Ordering::Relaxed) < TRIM_AFTER
                || TRIMMING.swap(true, Ordering::AcqRel)
            {
                break;
            }
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => drop(runtime.spawn(async move {
            tokio::time::sleep(DELAY).await;
            let _ = tokio::task::spawn_blocking(job).await;
        })),
        Err(_) => {
            let spawned = std::thread::Builder::new()
                .name("pathd-trim".into())
                .spawn(move || {
                    std::thread::sleep(DELAY);
                    job();
                });
            if spawned.is_err() {
                // No thread to spare: the next release tries again.
                TRIMMING.store(false, Ordering::Release);
            }
        }
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
