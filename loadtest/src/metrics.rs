//! Latency histograms: one set per bot task, merged once at the end.
//!
//! Each bot records into its own [`Hist`] (no lock, no atomic, no other thread touches it);
//! when the bots finish, [`Hist::merge_into`] folds them into one [`Merged`] per metric. A
//! bot's histogram is allocated on its first sample and uses 32-bit counts (a bot records
//! far fewer than 4 billion samples), so 5,000 bots cost tens of megabytes, not hundreds;
//! merged histograms use 64-bit counts. Values are microseconds and the histograms grow
//! automatically to the largest value seen, so a multi-second stall is recorded as what it
//! was, never clipped. The headline round trips keep 3 significant digits (0.1 %
//! resolution, about 20 to 45 KB per bot); diagnostics ([`Hist::coarse`]: send lag, round
//! trips from the actual send, snapshot gaps) keep 2 (1 %, a few KB), which is what keeps
//! thousands of bots' histograms in tens of megabytes.

use hdrhistogram::Histogram;
use serde::Serialize;

const SIGFIG: u8 = 3;
const COARSE_SIGFIG: u8 = 2;

/// Records `count` of `value` (0 as 1), growing the histogram to fit: `record_n` resizes an
/// auto-resizing histogram, whereas the `saturating_*` calls clamp to its current range. Only
/// a count overflow can fail, and then the count saturates.
fn record_n<T: hdrhistogram::Counter>(h: &mut Histogram<T>, value: u64, count: T) {
    let value = value.max(1);
    if h.record_n(value, count).is_err() {
        h.saturating_record_n(value, count);
    }
}

/// One task's histogram of microsecond values, allocated on first use.
#[derive(Clone, Debug)]
pub struct Hist {
    h: Option<Histogram<u32>>,
    sigfig: u8,
}

impl Default for Hist {
    fn default() -> Self {
        Hist::new()
    }
}

impl Hist {
    /// An empty histogram with 3 significant digits (no allocation yet).
    pub fn new() -> Hist {
        Hist { h: None, sigfig: SIGFIG }
    }

    /// An empty histogram with 2 significant digits, for diagnostics.
    pub fn coarse() -> Hist {
        Hist { h: None, sigfig: COARSE_SIGFIG }
    }

    /// Records one value, in microseconds (0 is recorded as 1).
    pub fn record(&mut self, us: u64) {
        let sigfig = self.sigfig;
        let h = self.h.get_or_insert_with(|| Histogram::new(sigfig).expect("2 or 3 significant digits is a valid precision"));
        record_n(h, us, 1);
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.h.as_ref().map_or(0, |h| h.len())
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds every value recorded here to `total` (exactly: bucket by bucket).
    pub fn merge_into(&self, total: &mut Merged) {
        if let Some(h) = &self.h {
            for v in h.iter_recorded() {
                record_n(&mut total.0, v.value_iterated_to(), u64::from(v.count_at_value()));
            }
        }
    }
}

/// A merged histogram of microsecond values.
#[derive(Clone, Debug)]
pub struct Merged(Histogram<u64>);

impl Default for Merged {
    fn default() -> Self {
        Merged::new()
    }
}

impl Merged {
    /// An empty histogram.
    pub fn new() -> Merged {
        Merged(Histogram::new(SIGFIG).expect("3 significant digits is a valid precision"))
    }

    /// Records one value directly (for figures gathered by one task, e.g. raid spawn times).
    pub fn record(&mut self, us: u64) {
        record_n(&mut self.0, us, 1);
    }

    /// Adds another merged histogram.
    pub fn add(&mut self, other: &Merged) {
        for v in other.0.iter_recorded() {
            record_n(&mut self.0, v.value_iterated_to(), v.count_at_value());
        }
    }

    /// The underlying histogram (for plots and `.hgrm` files).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.0
    }

    /// Number of values.
    pub fn len(&self) -> u64 {
        self.0.len()
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Count, mean and percentiles.
    pub fn summary(&self) -> Summary {
        let h = &self.0;
        if h.is_empty() {
            return Summary::default();
        }
        Summary {
            count: h.len(),
            min: h.min(),
            mean: (h.mean() * 10.0).round() / 10.0,
            p50: h.value_at_quantile(0.5),
            p90: h.value_at_quantile(0.9),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// A distribution in microseconds (all zero when empty). Percentiles are the highest value
/// equivalent to the recorded one at 3 significant digits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub count: u64,
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_is_exact_and_empty_is_zero() {
        let mut a = Hist::new();
        let mut b = Hist::new();
        assert!(a.is_empty());
        for v in 1..=1000 {
            a.record(v);
        }
        b.record(5_000_000);
        b.record(0);
        // Growing past the first range keeps the value, not a clamped one.
        let mut c = Hist::new();
        c.record(100_000);
        let mut only_c = Merged::new();
        c.merge_into(&mut only_c);
        assert!((100_000..=100_100).contains(&only_c.summary().max), "{}", only_c.summary().max);
        let mut coarse = Hist::coarse();
        coarse.record(123_456);
        let mut m2 = Merged::new();
        coarse.merge_into(&mut m2);
        assert!((123_456..=124_800).contains(&m2.summary().max), "within 1 %: {}", m2.summary().max);
        let mut m = Merged::new();
        a.merge_into(&mut m);
        b.merge_into(&mut m);
        Hist::new().merge_into(&mut m);
        let s = m.summary();
        assert_eq!(s.count, 1002);
        assert_eq!(s.min, 1);
        assert_eq!(s.p50, 500);
        assert!(s.max >= 5_000_000 && s.max <= 5_005_000, "{}", s.max);
        assert_eq!(Merged::new().summary(), Summary::default());
    }
}
