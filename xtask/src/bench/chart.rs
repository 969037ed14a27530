//! SVG charts (plotters): per request, tokens read from the cache and tokens missed for each
//! strategy; the cumulative cost over the session.

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use crate::bench::run::Run;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
];

fn color(index: usize) -> RGBColor {
    COLORS[index % COLORS.len()]
}

/// Per request: tokens read from the cache (solid) and missed — written or uncached — (thin)
/// for each run, all of one workload and cache model.
pub fn tokens_chart(path: &Path, title: &str, runs: &[&Run]) -> Result<()> {
    let requests = runs.iter().map(|r| r.requests.len()).max().unwrap_or(1);
    let top = runs
        .iter()
        .flat_map(|r| r.requests.iter().map(|row| row.input))
        .max()
        .unwrap_or(1)
        .max(1);
    let root = SVGBackend::new(path, (960, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(34)
        .y_label_area_size(64)
        .build_cartesian_2d(0..requests + 1, 0..top + top / 10)
        .map_err(|e| anyhow!("{e:?}"))?;
    chart
        .configure_mesh()
        .x_desc("request")
        .y_desc("prompt tokens")
        .draw()
        .map_err(|e| anyhow!("{e:?}"))?;
    for (index, run) in runs.iter().enumerate() {
        let c = color(index);
        chart
            .draw_series(LineSeries::new(
                run.requests.iter().map(|row| (row.seq, row.cache_read)),
                c.stroke_width(2),
            ))
            .map_err(|e| anyhow!("{e:?}"))?
            .label(format!("{} read", run.strategy))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(
                run.requests.iter().map(|row| (row.seq, row.missed())),
                c.mix(0.6).stroke_width(1),
            ))
            .map_err(|e| anyhow!("{e:?}"))?
            .label(format!("{} written + uncached", run.strategy))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.mix(0.6)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e:?}"))?;
    root.present().map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}

/// Cumulative cost (USD) over the session for each run.
pub fn cost_chart(path: &Path, title: &str, runs: &[&Run]) -> Result<()> {
    let requests = runs.iter().map(|r| r.requests.len()).max().unwrap_or(1);
    let top = runs
        .iter()
        .map(|r| r.totals().cost)
        .fold(0.0f64, f64::max)
        .max(1e-6);
    let root = SVGBackend::new(path, (960, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e:?}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(34)
        .y_label_area_size(64)
        .build_cartesian_2d(0..requests + 1, 0.0..top * 1.1)
        .map_err(|e| anyhow!("{e:?}"))?;
    chart
        .configure_mesh()
        .x_desc("request")
        .y_desc("cumulative cost (USD)")
        .draw()
        .map_err(|e| anyhow!("{e:?}"))?;
    for (index, run) in runs.iter().enumerate() {
        let c = color(index);
        let mut sum = 0.0;
        let points: Vec<(usize, f64)> = run
            .requests
            .iter()
            .map(|row| {
                sum += row.cost;
                (row.seq, sum)
            })
            .collect();
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))
            .map_err(|e| anyhow!("{e:?}"))?
            .label(run.strategy.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e:?}"))?;
    root.present().map_err(|e| anyhow!("{e:?}"))?;
    Ok(())
}
