//! `--out-dir` files: one HdrHistogram percentile-distribution text file (`.hgrm`, the classic
//! format HdrHistogram's own plotter reads) per metric, and an SVG plot of the round-trip
//! distributions against percentile on a log "nines" axis (50 %, 90 %, 99 %, 99.9 %, ...),
//! where tail latency is visible instead of squeezed into the last pixel.

use crate::metrics::Merged;
use anyhow::Context;
use hdrhistogram::Histogram;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Quantile steps per half of the remaining distance to 100 % (the classic default).
const TICKS_PER_HALF: u32 = 5;

/// Sub-buckets per bucket at [`crate::metrics`]' 3 significant digits: the smallest power of
/// two at least `2 * 10^3`.
const SUB_BUCKETS: u32 = 2048;

/// The classic HdrHistogram percentile distribution of `h` (values in microseconds, printed
/// as is): `Value Percentile TotalCount 1/(1-Percentile)` rows, then mean, deviation, max,
/// count and the histogram's bucket layout.
pub fn hgrm(h: &Histogram<u64>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:>12} {:>14} {:>10} {:>14}\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    let mut total = 0u64;
    if !h.is_empty() {
        for v in h.iter_quantiles(TICKS_PER_HALF) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                let _ = writeln!(out, "{:12.3} {:2.12} {:10} {:14.2}", v.value_iterated_to() as f64, q, total, 1.0 / (1.0 - q));
            } else {
                let _ = writeln!(out, "{:12.3} {:2.12} {:10}", v.value_iterated_to() as f64, q, total);
            }
        }
    }
    let (mean, stdev, max) = if h.is_empty() { (0.0, 0.0, 0.0) } else { (h.mean(), h.stdev(), h.max() as f64) };
    let _ = writeln!(out, "#[Mean    = {mean:12.3}, StdDeviation   = {stdev:12.3}]");
    let _ = writeln!(out, "#[Max     = {max:12.3}, Total count    = {:12}]", h.len());
    // Every histogram here keeps 3 significant digits: 2,048 sub-buckets per bucket.
    let _ = writeln!(out, "#[Buckets = {:12}, SubBuckets     = {:12}]", h.buckets(), SUB_BUCKETS);
    out
}

/// Percentile (as "nines": `-log10(1 - q)`) and value points of `h`.
fn nines_points(h: &Histogram<u64>, max_nines: f64) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut points: Vec<(f64, f64)> =
        h.iter_quantiles(TICKS_PER_HALF).map(|v| (nines(v.quantile_iterated_to(), max_nines), v.value_iterated_to() as f64)).collect();
    points.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    points
}

fn nines(q: f64, max_nines: f64) -> f64 {
    if q >= 1.0 { max_nines } else { (-(1.0 - q).log10()).min(max_nines) }
}

/// The axis label of `x` nines: 0 -> "0%", 1 -> "90%", 2 -> "99%", 3 -> "99.9%".
pub fn nines_label(x: f64) -> String {
    let pct = 100.0 * (1.0 - 10f64.powf(-x));
    let decimals = (x.round() as i32 - 2).max(0) as usize;
    format!("{pct:.decimals$}%")
}

/// The chart both plots share (960 x 600 SVG, title, margins, a legend at the upper left):
/// `draw` adds the mesh and the series to its cartesian area.
fn svg_chart(
    title: &str,
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    draw: impl FnOnce(&mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, RangedCoordf64>>) -> anyhow::Result<()>,
) -> anyhow::Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .margin_right(48)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x, y)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        draw(&mut chart)?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(svg)
}

/// Draws the percentile plot of `series` (name, histogram in µs) as SVG text.
pub fn percentile_svg(title: &str, series: &[(&str, &Histogram<u64>)]) -> anyhow::Result<String> {
    let max_count = series.iter().map(|(_, h)| h.len()).max().unwrap_or(0).max(1);
    // Enough nines to show the largest series' tail: 10^nines samples reach it.
    let max_nines = (max_count as f64).log10().ceil().clamp(2.0, 6.0);
    let max_value = series.iter().map(|(_, h)| if h.is_empty() { 0 } else { h.max() }).max().unwrap_or(0).max(1) as f64;
    svg_chart(title, 0f64..max_nines, 0f64..max_value * 1.05, |chart| {
        chart
            .configure_mesh()
            .x_labels(max_nines as usize + 1)
            .x_label_formatter(&|x| nines_label(*x))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .x_desc("percentile")
            .y_desc("latency (µs)")
            .draw()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let colours = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
        for (i, (name, h)) in series.iter().enumerate() {
            let colour = colours[i % colours.len()];
            chart
                .draw_series(LineSeries::new(nines_points(h, max_nines), colour.stroke_width(2)))
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .label(format!("{name} (n={})", h.len()))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
        }
        Ok(())
    })
}

/// Writes `<name>.hgrm` for every non-empty metric of `metrics` and `rtt-percentiles.svg`
/// plotting those marked as round trips; returns the files written.
pub fn write_out_dir(dir: &Path, title: &str, metrics: &[(&str, &Merged, bool)]) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    for (name, m, _) in metrics.iter().filter(|(_, m, _)| !m.is_empty()) {
        let path = dir.join(format!("{name}.hgrm"));
        std::fs::write(&path, hgrm(m.histogram())).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    let series: Vec<(&str, &Histogram<u64>)> =
        metrics.iter().filter(|(_, m, round_trip)| *round_trip && !m.is_empty()).map(|(n, m, _)| (*n, m.histogram())).collect();
    let path = dir.join("rtt-percentiles.svg");
    std::fs::write(&path, percentile_svg(title, &series)?).with_context(|| format!("writing {}", path.display()))?;
    written.push(path);
    Ok(written)
}

/// The capacity search's plot as SVG text: players (x) against the move round trip p50 and
/// p99 (y, µs) of each step, with the p99 bound as a horizontal line, failing steps marked.
/// `steps` are (players, p50, p99, passed).
pub fn capacity_svg(title: &str, steps: &[(u32, u64, u64, bool)], p99_bound_us: u64) -> anyhow::Result<String> {
    let mut sorted = steps.to_vec();
    sorted.sort_by_key(|s| s.0);
    let max_players = sorted.iter().map(|s| s.0).max().unwrap_or(1).max(1) as f64;
    let max_us = sorted.iter().map(|s| s.2).max().unwrap_or(0).max(p99_bound_us).max(1) as f64;
    svg_chart(title, 0f64..max_players * 1.05, 0f64..max_us * 1.1, |chart| {
        chart
            .configure_mesh()
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .x_desc("players (bots)")
            .y_desc("move round trip (µs)")
            .draw()
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let line =
            |pick: fn(&(u32, u64, u64, bool)) -> u64| sorted.iter().map(move |s| (f64::from(s.0), pick(s) as f64)).collect::<Vec<_>>();
        for (name, colour, points) in [("p50", BLUE, line(|s| s.1)), ("p99", RED, line(|s| s.2))] {
            chart
                .draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2)));
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled()))).map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        chart
            .draw_series(sorted.iter().filter(|s| !s.3).map(|s| Cross::new((f64::from(s.0), s.2 as f64), 8, BLACK.stroke_width(2))))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label("failed step")
            .legend(|(x, y)| Cross::new((x + 10, y), 6, BLACK.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(vec![(0.0, p99_bound_us as f64), (max_players * 1.05, p99_bound_us as f64)], BLACK.mix(0.5)))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(format!("p99 bound {p99_bound_us} µs"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.5)));
        Ok(())
    })
}
