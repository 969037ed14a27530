//! Every play of the session, its bill, and the tables the demo prints.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use strata_context::RenderPolicy;
use strata_mock::RequestRecord;
use strata_provider::{Catalog, Prices, Usage};

use crate::bill::{self, Row, Totals};
use crate::bundle;
use crate::error::{DemoError, Doing as _};
use crate::script::{self, Progress, TARGETS, Target};

/// One play of the session, as printed with `--json`.
#[derive(Debug, Serialize)]
pub struct RunReport {
    provider: &'static str,
    model: &'static str,
    cache_model: &'static str,
    /// `strata` or `naive`.
    renderer: &'static str,
    /// USD per million tokens, from the capability table.
    prices: Prices,
    rows: Vec<Row>,
    totals: Totals,
    /// Every request exactly as strata-mock recorded it (bodies left out).
    mock_records: Vec<RequestRecord>,
    /// Usage of each answered turn as the agent's adapter read it from the stream.
    client_usage: Vec<Usage>,
    /// The output of every `sh test.sh` the agent ran.
    test_runs: Vec<String>,
    session_file: PathBuf,
    working_copy: PathBuf,
}

impl RunReport {
    /// How many requests the mock received in this play.
    pub fn requests(&self) -> usize {
        self.rows.len()
    }
}

/// Strata against naive on one provider.
#[derive(Debug, Serialize)]
pub struct Comparison {
    provider: &'static str,
    model: &'static str,
    cache_model: &'static str,
    strata_usd: f64,
    naive_usd: f64,
    strata_hit_rate: f64,
    naive_hit_rate: f64,
    /// `naive_usd / strata_usd`.
    ratio: f64,
}

/// Every play and the comparison of the renderers, as `strata demo --json` prints it.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Each play, the narrated one first.
    pub runs: Vec<RunReport>,
    /// Strata against naive on each provider.
    pub comparison: Vec<Comparison>,
}

fn policy_name(policy: RenderPolicy) -> &'static str {
    match policy {
        RenderPolicy::Strata => "strata",
        RenderPolicy::Naive => "naive",
        _ => "other",
    }
}

/// Plays the session six times under `root` (two renderers on each of three cache models),
/// the first narrated through `progress` as it goes, the others at the same time.
pub async fn play_all(
    catalog: &Catalog,
    root: &Path,
    mut progress: Progress<'_>,
) -> Result<Report, DemoError> {
    let plays: Vec<(Target, RenderPolicy)> = TARGETS
        .iter()
        .flat_map(|target| [RenderPolicy::Strata, RenderPolicy::Naive].map(|p| (*target, p)))
        .collect();
    let Some((&(first_target, first_policy), rest)) = plays.split_first() else {
        return Err(DemoError::new("the demo has nothing to play"));
    };
    // The first play is narrated as it goes; the others replay the same work silently, each
    // on its own mock and copy, at the same time.
    let dir = |target: Target, policy: RenderPolicy| {
        root.join(format!("{}-{}", target.provider, policy_name(policy)))
    };
    if let Some(say) = progress.as_mut() {
        for line in opening(first_target, &dir(first_target, first_policy)) {
            say(&line);
        }
    }
    // A shorter borrow for the narrated play; the opening and the closing line use it too.
    let narrated: Progress<'_> = match progress.as_mut() {
        Some(say) => Some(&mut **say),
        None => None,
    };
    let first = script::play(
        catalog,
        first_target,
        first_policy,
        &dir(first_target, first_policy),
        narrated,
    )
    .await
    .doing(|| context(first_target, first_policy))?;
    if let Some(say) = progress.as_mut() {
        say(
            "\nThe same session again, each on a fresh mock and a fresh copy: the naive renderer, then OpenAI and DeepSeek with both renderers …",
        );
    }
    let mut others = tokio::task::JoinSet::new();
    for (index, &(target, policy)) in rest.iter().enumerate() {
        let catalog = catalog.clone();
        let dir = dir(target, policy);
        others.spawn(async move {
            let play = script::play(&catalog, target, policy, &dir, None).await;
            (index, play)
        });
    }
    let mut played: Vec<Option<script::Play>> = rest.iter().map(|_| None).collect();
    while let Some(joined) = others.join_next().await {
        let (index, play) = joined.doing(|| "a demo play stopped".to_owned())?;
        let (target, policy) = rest[index];
        let play = play.doing(|| context(target, policy))?;
        if let Some(slot) = played.get_mut(index) {
            *slot = Some(play);
        }
    }
    let mut runs = vec![report(catalog, first_target, first_policy, first)?];
    for (&(target, policy), play) in rest.iter().zip(played) {
        let play = play.doing(|| "a demo play did not finish".to_owned())?;
        runs.push(report(catalog, target, policy, play)?);
    }
    let comparison = TARGETS
        .iter()
        .filter_map(|target| {
            let find = |renderer: &str| {
                runs.iter()
                    .find(|r| r.provider == target.provider && r.renderer == renderer)
            };
            let (strata, naive) = (find("strata")?, find("naive")?);
            Some(Comparison {
                provider: target.provider,
                model: target.model,
                cache_model: target.cache,
                strata_usd: strata.totals.cost_usd,
                naive_usd: naive.totals.cost_usd,
                strata_hit_rate: strata.totals.hit_rate,
                naive_hit_rate: naive.totals.hit_rate,
                ratio: if strata.totals.cost_usd > 0.0 {
                    naive.totals.cost_usd / strata.totals.cost_usd
                } else {
                    0.0
                },
            })
        })
        .collect();
    Ok(Report { runs, comparison })
}

fn report(
    catalog: &Catalog,
    target: Target,
    policy: RenderPolicy,
    play: script::Play,
) -> Result<RunReport, DemoError> {
    let prices = catalog
        .model(target.provider, target.model)
        .doing(|| {
            format!(
                "the capability table has no {}/{}",
                target.provider, target.model
            )
        })?
        .prices;
    let mock_records: Vec<RequestRecord> = play
        .records
        .into_iter()
        .map(|mut record| {
            record.body = None;
            record
        })
        .collect();
    let rows: Vec<Row> = mock_records
        .iter()
        .map(|record| bill::row(record, &prices))
        .collect();
    let totals = bill::totals(&rows);
    Ok(RunReport {
        provider: target.provider,
        model: target.model,
        cache_model: target.cache,
        renderer: policy_name(policy),
        prices,
        rows,
        totals,
        mock_records,
        client_usage: play.client_usage,
        test_runs: play.test_runs,
        session_file: play.session_file,
        working_copy: play.repo,
    })
}

fn context(target: Target, policy: RenderPolicy) -> String {
    format!(
        "playing the demo on {}/{} with the {} renderer",
        target.provider,
        target.model,
        policy_name(policy)
    )
}

fn opening(target: Target, dir: &Path) -> [String; 3] {
    [
        "strata demo — a scripted model on strata-mock, in process: no key, no network.".to_owned(),
        format!(
            "The model's tool calls are real: they run in {} ({}).",
            dir.join("textkit").display(),
            bundle::repo_files().join(", ")
        ),
        format!(
            "Model: {}/{} ({}), strata's renderer.",
            target.provider, target.model, target.cache
        ),
    ]
}

/// Writes the first play's requests, strata against naive, and the totals per cache model.
pub fn print_tables(report: &Report, out: &mut dyn Write) -> std::io::Result<()> {
    let Some(strata) = report.runs.first() else {
        return Ok(());
    };
    let naive = report
        .runs
        .iter()
        .find(|r| r.provider == strata.provider && r.renderer == "naive");
    writeln!(
        out,
        "\nEvery request on {}/{} ({}), as strata-mock accounted it (tokens; chapters = tools / system / messages):",
        strata.provider, strata.model, strata.cache_model
    )?;
    write_rows(out, &strata.rows, naive.map(|n| n.rows.as_slice()))?;
    writeln!(
        out,
        "\nTotals for the same work (prices per the capability table; naive = a renderer that rewrites its prefix on every change):"
    )?;
    writeln!(
        out,
        "{:<34} {:<21} {:>9} {:>9}  {:>10} {:>10}  {:>6}",
        "model", "cache", "hit", "naive hit", "strata", "naive", "naive÷strata"
    )?;
    for c in &report.comparison {
        writeln!(
            out,
            "{:<34} {:<21} {:>9} {:>9}  {:>10} {:>10}  {:>11.2}×",
            format!("{}/{}", c.provider, c.model),
            c.cache_model,
            percent(c.strata_hit_rate),
            percent(c.naive_hit_rate),
            usd(c.strata_usd),
            usd(c.naive_usd),
            c.ratio
        )?;
    }
    Ok(())
}

/// Writes a session's requests as the mock accounted them and their total, in the table's
/// columns (the interactive demo's bill: one session, no naive play beside it).
pub fn print_bill(rows: &[Row], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\nEvery request of this session, as strata-mock accounted it (tokens; chapters = tools / system / messages):"
    )?;
    write_rows(out, rows, None)
}

/// The request table: one line per row, the naive play's matching request beside it when
/// there is one, then the totals, each under its own column.
fn write_rows(out: &mut dyn Write, rows: &[Row], naive: Option<&[Row]>) -> std::io::Result<()> {
    let line = |out: &mut dyn Write, cells: [&dyn std::fmt::Display; 12]| {
        writeln!(
            out,
            "{:>3}  {:<21} {:>6} {:>6} {:>8}  {:>7} {:>7} {:>8} {:>5}  {:>9}   {:>11} {:>9}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6],
            cells[7],
            cells[8],
            cells[9],
            cells[10],
            cells[11]
        )
    };
    line(
        out,
        [
            &"#",
            &"request",
            &"tools",
            &"system",
            &"messages",
            &"read",
            &"write",
            &"uncached",
            &"hit",
            &"cost",
            &"naive: hit",
            &"cost",
        ],
    )?;
    for (index, row) in rows.iter().enumerate() {
        // Pair by kind and occurrence: a compaction's two summary requests arrive in no fixed
        // order, so the naive run's row at the same index may be the other one.
        let occurrence = rows[..index].iter().filter(|r| r.kind == row.kind).count();
        let other = naive.and_then(|n| n.iter().filter(|r| r.kind == row.kind).nth(occurrence));
        let (naive_hit, naive_cost) = other.map_or_else(
            || ("-".to_owned(), "-".to_owned()),
            |o| (percent(o.hit_rate), usd(o.cost_usd)),
        );
        line(
            out,
            [
                &row.seq,
                &row.kind,
                &row.tools,
                &row.system,
                &row.messages,
                &row.cache_read,
                &row.cache_write,
                &row.uncached,
                &percent(row.hit_rate),
                &usd(row.cost_usd),
                &naive_hit,
                &naive_cost,
            ],
        )?;
    }
    let t = bill::totals(rows);
    let sum = |chapter: fn(&Row) -> u64| rows.iter().map(chapter).sum::<u64>();
    let naive_totals = naive.map(bill::totals);
    line(
        out,
        [
            &"",
            &"total",
            &sum(|r| r.tools),
            &sum(|r| r.system),
            &sum(|r| r.messages),
            &t.cache_read,
            &t.cache_write,
            &t.uncached,
            &percent(t.hit_rate),
            &usd(t.cost_usd),
            &naive_totals
                .as_ref()
                .map_or_else(|| "-".to_owned(), |n| percent(n.hit_rate)),
            &naive_totals
                .as_ref()
                .map_or_else(|| "-".to_owned(), |n| usd(n.cost_usd)),
        ],
    )
}

fn percent(rate: f64) -> String {
    format!("{:.0}%", rate * 100.0)
}

fn usd(value: f64) -> String {
    format!("${value:.4}")
}
