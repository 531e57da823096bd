//! Latency histograms: one set per bot driver thread, merged once at the end.
//!
//! A driver thread owns every bot it plays, so one set of histograms per thread is as free of
//! locks as one per bot, and costs a megabyte in all instead of tens of kilobytes per bot. A
//! set is allocated before play for values up to a minute ([`Merged::presized`]), so neither
//! a bot's first sample nor a new largest value allocates while the thread is on schedule:
//! with one histogram per bot, 2,000 bots' first samples at the start of the measured window
//! allocated and faulted in hundreds of megabytes at once and held the thread up for a
//! tenth of a second. Values are microseconds at 3 significant digits (0.1 % resolution);
//! a value beyond the presized range still grows the histogram rather than being clipped, so
//! a multi-second stall is recorded as what it was.

use hdrhistogram::Histogram;
use serde::Serialize;

const SIGFIG: u8 = 3;

/// The range [`Merged::presized`] covers without growing: a minute, in microseconds.
pub const PRESIZED_MAX_US: u64 = 60_000_000;

/// Records `count` of `value` (0 as 1), growing the histogram to fit: `record_n` resizes an
/// auto-resizing histogram, whereas the `saturating_*` calls clamp to its current range. Only
/// a count overflow can fail, and then the count saturates.
fn record_n<T: hdrhistogram::Counter>(h: &mut Histogram<T>, value: u64, count: T) {
    let value = value.max(1);
    if h.record_n(value, count).is_err() {
        h.saturating_record_n(value, count);
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

    /// An empty histogram already sized for values up to [`PRESIZED_MAX_US`] (about 130 KB),
    /// so recording below that never allocates; larger values still grow it.
    pub fn presized() -> Merged {
        let mut h = Histogram::new_with_max(PRESIZED_MAX_US, SIGFIG).expect("a one-minute range at 3 significant digits is valid");
        h.auto(true);
        Merged(h)
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

/// A histogram reports (JSON) as its [`Summary`].
impl Serialize for Merged {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.summary().serialize(serializer)
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
        let mut a = Merged::presized();
        let mut b = Merged::new();
        assert!(a.is_empty());
        for v in 1..=1000 {
            a.record(v);
        }
        b.record(5_000_000);
        b.record(0);
        let mut m = Merged::new();
        m.add(&a);
        m.add(&b);
        m.add(&Merged::presized());
        let s = m.summary();
        assert_eq!(s.count, 1002);
        assert_eq!(s.min, 1);
        assert_eq!(s.p50, 500);
        assert!(s.max >= 5_000_000 && s.max <= 5_005_000, "{}", s.max);
        assert_eq!(Merged::new().summary(), Summary::default());
    }

    #[test]
    fn a_presized_histogram_keeps_values_beyond_its_range() {
        let mut h = Merged::presized();
        h.record(PRESIZED_MAX_US * 10);
        let max = h.summary().max;
        assert!((PRESIZED_MAX_US * 10..=PRESIZED_MAX_US * 10 / 1000 * 1001).contains(&max), "grown, not clipped: {max}");
    }
}
