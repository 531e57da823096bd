//! `--out-dir` output: the classic `.hgrm` percentile distribution text and the SVG
//! percentile plot on a "nines" axis.

use mmo_loadtest::metrics::Merged;
use mmo_loadtest::plot::{hgrm, nines_label, percentile_svg, write_out_dir};

fn sample() -> Merged {
    let mut m = Merged::new();
    for v in 1..=10_000u64 {
        m.record(v);
    }
    m
}

#[test]
fn hgrm_has_the_classic_columns_and_footer() {
    let text = hgrm(sample().histogram());
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("Value") && lines[0].contains("Percentile") && lines[0].contains("TotalCount"));
    assert_eq!(lines[1], "");
    let first: Vec<&str> = lines[2].split_whitespace().collect();
    assert_eq!(first, ["1.000", "0.000000000000", "1", "1.00"]);
    let last_row = lines.iter().rev().find(|l| !l.starts_with('#')).unwrap();
    let fields: Vec<&str> = last_row.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "the 100% row has no 1/(1-p) column: {last_row}");
    assert_eq!(fields[1], "1.000000000000");
    assert_eq!(fields[2], "10000");
    let mean_line = lines.iter().find(|l| l.starts_with("#[Mean    = ")).unwrap();
    let mean: f64 = mean_line["#[Mean    = ".len()..].split(',').next().unwrap().trim().parse().unwrap();
    assert!((mean - 5000.5).abs() < 5.0, "mean {mean} (3 significant digits)");
    assert!(text.contains("Total count    =        10000]"));
    assert!(text.contains("SubBuckets     =         2048]"));
    // Percentiles never go down, counts never go down.
    let rows: Vec<(f64, u64)> = lines[2..]
        .iter()
        .take_while(|l| !l.starts_with('#'))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1].parse().unwrap(), f[2].parse().unwrap())
        })
        .collect();
    assert!(rows.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
    // Empty histograms still give a well-formed file.
    assert!(hgrm(Merged::new().histogram()).contains("Total count    =            0]"));
}

#[test]
fn nines_axis_labels() {
    assert_eq!(nines_label(0.0), "0%");
    assert_eq!(nines_label(1.0), "90%");
    assert_eq!(nines_label(2.0), "99%");
    assert_eq!(nines_label(3.0), "99.9%");
    assert_eq!(nines_label(5.0), "99.999%");
}

#[test]
fn svg_plot_names_every_series_and_writes_files() {
    let a = sample();
    let mut b = Merged::new();
    b.record(42);
    let svg = percentile_svg("round trips", &[("move_rtt", a.histogram()), ("economy_rtt", b.histogram())]).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("move_rtt (n=10000)") && svg.contains("economy_rtt (n=1)"));
    assert!(svg.contains("99.9%"), "nines labels on the x axis");

    let dir = std::env::temp_dir().join(format!("mmo-loadtest-plot-{}", std::process::id()));
    let empty = Merged::new();
    let files = write_out_dir(&dir, "t", &[("move_rtt", &a, true), ("aoi", &b, false), ("unused", &empty, true)]).unwrap();
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["move_rtt.hgrm", "aoi.hgrm", "rtt-percentiles.svg"]);
    let svg = std::fs::read_to_string(dir.join("rtt-percentiles.svg")).unwrap();
    assert!(svg.contains("move_rtt") && !svg.contains("aoi (n="), "only round trips are plotted");
    std::fs::remove_dir_all(&dir).unwrap();
}
