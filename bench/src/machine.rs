//! The machine and software a run measured on, and the Linux facts read from /proc.

use serde::Serialize;

use crate::script;

/// The machine and software a run measured on.
#[derive(Debug, Serialize)]
pub(super) struct Machine {
    /// UTC date of the run (YYYY-MM-DD).
    pub(super) date: String,
    pub(super) os: &'static str,
    pub(super) arch: &'static str,
    pub(super) cpu: String,
    pub(super) cpus: usize,
    pub(super) memory_bytes: u64,
    /// One-minute load average when the run started (other work skews timings).
    pub(super) load_average: f64,
    pub(super) node: String,
    pub(super) python: String,
}

impl Machine {
    /// The machine now (Linux facts from /proc; empty or 0 elsewhere).
    pub(super) fn now() -> Self {
        Self {
            date: today(),
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            cpu: proc_field("/proc/cpuinfo", "model name").unwrap_or_default(),
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            memory_bytes: proc_bytes("/proc/meminfo", "MemTotal"),
            load_average: std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0),
            node: script::version("node"),
            python: script::version("python3"),
        }
    }
}

/// The value of `key` in a `key: value` file of /proc (Linux).
fn proc_field(file: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.trim_start().strip_prefix(':'))
        .map(|v| v.trim().to_owned())
}

/// A `key: N kB` value of a /proc file, in bytes (0 where there is none, as off Linux).
pub(super) fn proc_bytes(file: &str, key: &str) -> u64 {
    proc_field(file, key)
        .and_then(|kib| kib.trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Today's UTC date as YYYY-MM-DD.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
