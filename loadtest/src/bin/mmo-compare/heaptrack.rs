//! Reading a heaptrack trace: the summary `heaptrack_print` prints at its end.

use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::path::Path;
use std::process::Command;

/// The figures of one heaptrack trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct HeapFigures {
    /// Calls to allocation functions (malloc, calloc, realloc, new, ...).
    pub alloc_calls: u64,
    /// Allocations freed again right after (heaptrack's "temporary").
    pub temporary_allocs: u64,
    /// Peak heap consumption, bytes.
    pub peak_heap_bytes: u64,
    /// Peak RSS including heaptrack's own overhead, bytes.
    pub peak_rss_bytes: u64,
    /// Bytes not freed at exit.
    pub leaked_bytes: u64,
}

/// Runs `heaptrack_print` on `trace` (summary only: every backtrace listing off) and parses it.
pub fn summarize(trace: &Path) -> Result<HeapFigures> {
    let out = Command::new("heaptrack_print")
        .arg("-f")
        .arg(trace)
        .args(["--print-peaks", "0", "--print-allocators", "0", "--print-temporary", "0", "--print-leaks", "0"])
        .output()
        .context("running heaptrack_print")?;
    if !out.status.success() {
        bail!("heaptrack_print {} failed: {}", trace.display(), String::from_utf8_lossy(&out.stderr));
    }
    parse_summary(&String::from_utf8_lossy(&out.stdout))
}

/// Parses the summary lines of `heaptrack_print` 1.4:
/// ```text
/// calls to allocation functions: 902 (295/s)
/// temporary memory allocations: 106 (34/s)
/// peak heap memory consumption: 34.75M
/// peak RSS (including heaptrack overhead): 41.65M
/// total memory leaked: 5.14K
/// ```
/// Sizes use heaptrack's binary units (K = 1024 bytes).
pub fn parse_summary(text: &str) -> Result<HeapFigures> {
    let mut f = HeapFigures::default();
    let mut seen = 0;
    for line in text.lines() {
        let Some((name, value)) = line.split_once(": ") else { continue };
        let first = value.split_whitespace().next().unwrap_or("");
        match name.trim() {
            "calls to allocation functions" => {
                f.alloc_calls = first.parse().context("allocation calls")?;
                seen += 1;
            }
            "temporary memory allocations" => {
                f.temporary_allocs = first.parse().context("temporary allocations")?;
                seen += 1;
            }
            "peak heap memory consumption" => {
                f.peak_heap_bytes = parse_size(first)?;
                seen += 1;
            }
            "peak RSS (including heaptrack overhead)" => {
                f.peak_rss_bytes = parse_size(first)?;
                seen += 1;
            }
            "total memory leaked" => {
                f.leaked_bytes = parse_size(first)?;
                seen += 1;
            }
            _ => {}
        }
    }
    if seen < 5 {
        bail!("heaptrack_print's summary is missing lines (found {seen} of 5)");
    }
    Ok(f)
}

/// "34.75M" -> bytes (K, M, G, T are powers of 1024; a bare number or "B" is bytes).
pub fn parse_size(text: &str) -> Result<u64> {
    let (number, unit) = match text.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => (&text[..i], &text[i..]),
        None => (text, ""),
    };
    let value: f64 = number.parse().with_context(|| format!("size '{text}'"))?;
    let scale = match unit {
        "" | "B" => 1.0,
        "K" => 1024.0,
        "M" => 1024.0 * 1024.0,
        "G" => 1024.0 * 1024.0 * 1024.0,
        "T" => 1024.0f64.powi(4),
        other => bail!("unknown size unit '{other}' in '{text}'"),
    };
    Ok((value * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_heaptrack_1_4_summary() {
        let text = "total runtime: 3.05s.\ncalls to allocation functions: 902 (295/s)\ntemporary memory allocations: 106 (34/s)\n\
                    peak heap memory consumption: 34.75M\npeak RSS (including heaptrack overhead): 41.65M\ntotal memory leaked: 5.14K\n";
        let f = parse_summary(text).unwrap();
        assert_eq!(f.alloc_calls, 902);
        assert_eq!(f.temporary_allocs, 106);
        assert_eq!(f.peak_heap_bytes, (34.75 * 1024.0 * 1024.0) as u64);
        assert_eq!(f.leaked_bytes, (5.14f64 * 1024.0).round() as u64);
    }

    #[test]
    fn a_truncated_summary_is_an_error_not_zeros() {
        assert!(parse_summary("calls to allocation functions: 902 (295/s)\n").is_err());
        assert!(parse_size("12Q").is_err());
        assert_eq!(parse_size("512B").unwrap(), 512);
        assert_eq!(parse_size("7").unwrap(), 7);
    }
}
