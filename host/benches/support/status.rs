//! The process's own figures from `/proc/self/status`, shared by the benchmarks that
//! print memory.

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`), 0 where there is none.
pub(crate) fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                let rest = line.strip_prefix(field)?.strip_prefix(':')?;
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
        })
        .map_or(0, |kib| kib * 1024)
}
