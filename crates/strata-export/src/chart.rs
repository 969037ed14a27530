//! The session's story in one picture: per request, the prompt split into cache read, cache
//! write and uncached tokens (stacked bars), its cost (a line on its own scale), and each
//! cache break marked — amber when the session explains it, red when it does not — with the
//! explanations listed under the chart. Inline SVG drawn from the accounting's records.

use std::fmt::Write as _;

use strata_accounting::{CacheReport, RequestRecord};

use crate::html::escape;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 240.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 56.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 26.0;

/// The chart and its notes (empty when the session made no request).
pub fn chart(records: &[RequestRecord], report: &CacheReport) -> String {
    if records.is_empty() {
        return String::new();
    }
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let max_tokens = records
        .iter()
        .map(|r| r.usage.prompt_tokens())
        .max()
        .unwrap_or(0)
        .max(1) as f64;
    let max_cost = records.iter().map(|r| r.cost).fold(0.0, f64::max);
    let step = plot_w / records.len() as f64;
    let bar = (step * 0.7).max(1.0);
    let y = |tokens: f64| TOP + plot_h - tokens / max_tokens * plot_h;
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"Per-request cache read, write, uncached tokens and cost\">"
    );
    // Axes and scale labels.
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{0}\" x2=\"{1}\" y2=\"{0}\"/>\
         <text class=\"tick\" x=\"{2}\" y=\"{3}\" text-anchor=\"end\">{4}</text>\
         <text class=\"tick\" x=\"{2}\" y=\"{0}\" text-anchor=\"end\">0</text>",
        TOP + plot_h,
        WIDTH - RIGHT,
        LEFT - 6.0,
        TOP + 4.0,
        escape(&tokens(max_tokens as u64)),
    );
    if max_cost > 0.0 {
        let _ = write!(
            svg,
            "<text class=\"tick cost-tick\" x=\"{0}\" y=\"{1}\">${2:.4}</text>",
            WIDTH - RIGHT + 6.0,
            TOP + 4.0,
            max_cost
        );
    }
    let mut cost_points = Vec::new();
    for (index, record) in records.iter().enumerate() {
        let number = index + 1;
        let x = LEFT + index as f64 * step + (step - bar) / 2.0;
        let usage = &record.usage;
        let mut base = 0.0;
        let _ = write!(
            svg,
            "<g class=\"request\" data-request=\"{number}\"><title>{}</title>",
            escape(&format!(
                "#{number} {}: read {} · wrote {} · uncached {} · out {} · ${:.4}",
                record.label(),
                usage.cache_read,
                usage.cache_write(),
                usage.input,
                usage.output,
                record.cost
            ))
        );
        for (class, value) in [
            ("c-read", usage.cache_read),
            ("c-write", usage.cache_write()),
            ("c-uncached", usage.input),
        ] {
            if value == 0 {
                continue;
            }
            let top = y(base + value as f64);
            let _ = write!(
                svg,
                "<rect class=\"{class}\" x=\"{x:.1}\" y=\"{top:.1}\" width=\"{bar:.1}\" height=\"{:.1}\"/>",
                y(base) - top
            );
            base += value as f64;
        }
        svg.push_str("</g>");
        if let Some(broke) = report.break_at(number) {
            let class = if broke.cause.is_expected() {
                "break-expected"
            } else {
                "break-unexpected"
            };
            let cx = x + bar / 2.0;
            let _ = write!(
                svg,
                "<g class=\"break {class}\"><title>{}</title><line x1=\"{cx:.1}\" y1=\"{TOP}\" x2=\"{cx:.1}\" y2=\"{:.1}\"/><text x=\"{cx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text></g>",
                escape(&format!(
                    "cache break at #{number}: {}",
                    broke.cause.describe()
                )),
                TOP + plot_h,
                TOP - 6.0,
                if broke.cause.is_expected() {
                    "▼"
                } else {
                    "⚠"
                }
            );
        }
        if max_cost > 0.0 {
            cost_points.push(format!(
                "{:.1},{:.1}",
                x + bar / 2.0,
                TOP + plot_h - record.cost / max_cost * plot_h
            ));
        }
        // Request numbers, thinned so they never overlap.
        let every = (records.len() / 25).max(1);
        if number == 1 || number % every == 0 {
            let _ = write!(
                svg,
                "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{number}</text>",
                x + bar / 2.0,
                HEIGHT - 8.0
            );
        }
    }
    if !cost_points.is_empty() {
        let _ = write!(
            svg,
            "<polyline class=\"cost\" points=\"{}\"/>",
            cost_points.join(" ")
        );
        for point in &cost_points {
            if let Some((cx, cy)) = point.split_once(',') {
                let _ = write!(
                    svg,
                    "<circle class=\"cost\" cx=\"{cx}\" cy=\"{cy}\" r=\"2.5\"/>"
                );
            }
        }
    }
    svg.push_str("</svg>");
    let legend = "<p class=\"legend\"><span class=\"key c-read\"></span>cache read \
         <span class=\"key c-write\"></span>cache write <span class=\"key c-uncached\"></span>uncached \
         <span class=\"key cost\"></span>cost (right scale) \
         <span class=\"mark break-expected\">▼</span>expected break \
         <span class=\"mark break-unexpected\">⚠</span>unexpected break</p>";
    format!(
        "<section class=\"cache-story\"><h2>Requests and the cache</h2>{svg}{legend}{}</section>",
        notes(records, report)
    )
}

/// Each break in words, and what was too small to cache.
fn notes(records: &[RequestRecord], report: &CacheReport) -> String {
    let unexpected = report.unexpected().count();
    let expected = report.expected().count();
    let mut out = format!(
        "<p class=\"verdict {}\">{} — {unexpected} unexpected, {expected} expected.</p>",
        if unexpected == 0 { "good" } else { "bad" },
        match report.breaks.len() {
            0 => "The cache never broke".to_owned(),
            1 => "The cache broke once".to_owned(),
            n => format!("The cache broke {n} times"),
        }
    );
    let link = |request: usize| {
        records.get(request - 1).map_or_else(String::new, |r| {
            format!("<a href=\"#entry-{0}\">#{request}</a>", escape(&r.id))
        })
    };
    if !report.breaks.is_empty() {
        out.push_str("<ul class=\"breaks\">");
        for broke in &report.breaks {
            let _ = write!(
                out,
                "<li class=\"{}\">{} {} read {} of the {} tokens the previous prompt held: {}</li>",
                if broke.cause.is_expected() {
                    "break-expected"
                } else {
                    "break-unexpected"
                },
                if broke.cause.is_expected() {
                    "▼"
                } else {
                    "⚠"
                },
                link(broke.request),
                broke.cache_read,
                broke.previous_prompt,
                escape(&broke.cause.describe())
            );
        }
        out.push_str("</ul>");
    }
    for small in &report.below_minimum {
        let _ = write!(
            out,
            "<p class=\"note\">{} had a {}-token prompt, under the model's cache minimum of {}: nothing could be cached, so nothing was written.</p>",
            link(small.request),
            small.prompt,
            small.minimum
        );
    }
    if !report.aborted.is_empty() {
        let _ = write!(
            out,
            "<p class=\"note\">Aborted or failed, not judged: {}.</p>",
            report
                .aborted
                .iter()
                .map(|&n| link(n))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1e3),
        _ => format!("{:.1}M", count as f64 / 1e6),
    }
}
