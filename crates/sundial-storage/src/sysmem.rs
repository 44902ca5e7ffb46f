//! How much memory the process may use, for defaults that scale with the machine (the memtable budget,
//! [`limits::MEMTABLE_MEMORY_DIVISOR`]): `MemTotal` from `/proc/meminfo`, or the cgroup's limit when it
//! is lower (a container sees the host's `MemTotal`). `None` where neither can be read (not Linux).

use crate::limits;

/// The lower of the machine's memory and the cgroup's (v2 `memory.max`, v1 `memory.limit_in_bytes`)
/// limit, in bytes; `None` when neither is readable.
pub fn memory_bytes() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| meminfo_total(&s));
    let cgroup = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok()));
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes (the file gives kB).
fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb = line["MemTotal:".len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok()?;
    kb.checked_mul(1024)
}

/// The default memtable budget for a process that may use `memory` bytes: see
/// [`limits::MEMTABLE_MEMORY_DIVISOR`].
pub fn memtable_bytes_default(memory: Option<u64>) -> usize {
    memory_share(memory, limits::MEMTABLE_MEMORY_DIVISOR, limits::MEMTABLE_BYTES_DEFAULT_MIN, limits::MEMTABLE_BYTES_DEFAULT_MAX)
}

/// The default memory for decoded pages for a process that may use `memory` bytes: see
/// [`limits::DECODED_PAGES_MEMORY_DIVISOR`].
pub fn decoded_pages_bytes_default(memory: Option<u64>) -> usize {
    memory_share(memory, limits::DECODED_PAGES_MEMORY_DIVISOR, limits::DECODED_PAGES_BYTES_DEFAULT_MIN, limits::DECODED_PAGES_BYTES_DEFAULT_MAX)
}

/// A `divisor`th of `memory` within `min..=max`; `min` where the memory is unknown.
fn memory_share(memory: Option<u64>, divisor: u64, min: usize, max: usize) -> usize {
    let Some(m) = memory else { return min };
    usize::try_from(m / divisor).unwrap_or(usize::MAX).clamp(min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn meminfo_total_is_read_in_bytes() {
        let text = "MemTotal:       24684084 kB\nMemFree:        12000000 kB\n";
        assert_eq!(meminfo_total(text), Some(24684084 * 1024));
        assert_eq!(meminfo_total("MemFree: 3 kB\n"), None);
        assert_eq!(meminfo_total("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn memtable_default_is_an_eighth_of_memory_within_bounds() {
        assert_eq!(memtable_bytes_default(Some(4096 * MIB)), 512 * MIB as usize);
        assert_eq!(memtable_bytes_default(Some(24 * 1024 * MIB)), limits::MEMTABLE_BYTES_DEFAULT_MAX);
        assert_eq!(memtable_bytes_default(Some(256 * MIB)), limits::MEMTABLE_BYTES_DEFAULT_MIN);
        assert_eq!(memtable_bytes_default(None), limits::MEMTABLE_BYTES_DEFAULT_MIN);
    }

    #[test]
    fn decoded_pages_default_is_a_sixty_fourth_of_memory_within_bounds() {
        assert_eq!(decoded_pages_bytes_default(Some(24 * 1024 * MIB)), 384 * MIB as usize);
        assert_eq!(decoded_pages_bytes_default(Some(1024 * 1024 * MIB)), limits::DECODED_PAGES_BYTES_DEFAULT_MAX);
        assert_eq!(decoded_pages_bytes_default(Some(1024 * MIB)), limits::DECODED_PAGES_BYTES_DEFAULT_MIN);
        assert_eq!(decoded_pages_bytes_default(None), limits::DECODED_PAGES_BYTES_DEFAULT_MIN);
    }

    #[test]
    fn this_machine_reports_its_memory() {
        if cfg!(target_os = "linux") {
            let m = memory_bytes().expect("/proc/meminfo is readable on Linux");
            assert!(m >= 64 * MIB, "{m} bytes of memory");
        }
    }
}
