//! The connection cap against the process's open-file limit.

/// File descriptors kept out of the connection cap's reach: the listener, map and data
/// files being read or written, logs, and the `503` answers in progress.
pub const FD_RESERVE: u64 = 64 + super::MAX_REJECTING as u64;

/// The connection cap applied: `configured`, lowered (with a warning) when connections
/// plus [`FD_RESERVE`] would not fit the process's open-file limit, because past that
/// limit `accept` itself fails and nobody gets an answer, not even `/healthz`.
pub fn effective_cap(configured: u32) -> u32 {
    if let Some(limit) = open_file_limit() {
        let room = limit.saturating_sub(FD_RESERVE).max(1);
        if u64::from(configured) > room {
            let cap = u32::try_from(room).unwrap_or(u32::MAX);
            tracing::warn!(
                configured,
                cap,
                open_file_limit = limit,
                "max connections lowered to fit the open-file limit"
            );
            return cap;
        }
    }
    configured
}

/// The process's soft limit on open files (`ulimit -n`), where it can be read; `None` when
/// unlimited or unknown. On Linux it is read from `/proc/self/limits`, which needs neither
/// `unsafe` nor a system-call crate (one less dependency to compile); other Unixes ask
/// `getrlimit` through rustix.
pub fn open_file_limit() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        parse_open_file_limit(&std::fs::read_to_string("/proc/self/limits").ok()?)
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        rustix::process::getrlimit(rustix::process::Resource::Nofile).current
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The soft limit of the `Max open files` row of a `/proc/PID/limits` table.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_open_file_limit(limits: &str) -> Option<u64> {
    let row = limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))?;
    row.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_fits_the_open_file_limit() {
        assert_eq!(effective_cap(3), 3);
        let cap = effective_cap(u32::MAX);
        assert!(cap >= 1);
        if let Some(limit) = open_file_limit() {
            assert!(u64::from(cap) + FD_RESERVE <= limit.max(FD_RESERVE + 1));
        }
        #[cfg(target_os = "linux")]
        assert!(open_file_limit().is_some(), "/proc/self/limits unreadable");
    }

    #[test]
    fn reads_the_soft_open_file_limit_from_proc() {
        let table = "\
Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 1048576              files
Max locked memory         8388608              8388608              bytes
";
        assert_eq!(parse_open_file_limit(table), Some(1024));
        let unlimited = table.replace("1024                 1048576", "unlimited unlimited");
        assert_eq!(parse_open_file_limit(&unlimited), None);
        assert_eq!(parse_open_file_limit("Limit Soft Hard\n"), None);
    }
}
