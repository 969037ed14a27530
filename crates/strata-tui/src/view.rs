//! Drawing: the transcript, the queue and hint lines, the editor, the footer, and a picker
//! over them. Every function reads the [`App`] and writes to the frame; none changes state.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use serde_json::Value;
use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};

use super::app::{App, ChildStatus, Item, Level, ToolItem, ToolState};
use super::command;
use super::markdown;
use super::picker::{Picker, PickerKind};
use super::stats;
use super::wrap::{wrap_spans, wrap_verbatim};

const MUTED: Style = Style::new().fg(Color::DarkGray);
const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];
/// Lines of a collapsed tool output.
const COLLAPSED_OUTPUT: usize = 3;
/// Lines of a collapsed diff (what an edit changed is worth more room than output).
const COLLAPSED_DIFF: usize = 12;
/// Most lines the editor grows to.
const EDITOR_MAX: usize = 8;

/// Draws the whole screen; `tick` animates the spinner. Returns the largest useful scroll
/// offset when the transcript's top is on screen (the caller clamps to it).
pub fn draw(frame: &mut Frame<'_>, app: &App, tick: usize) -> Option<usize> {
    let area = frame.area();
    let inner_width = area.width.saturating_sub(2).max(1);
    let editor_lines = editor_rows(app, usize::from(inner_width))
        .len()
        .clamp(1, EDITOR_MAX);
    let status = status_lines(app, tick);
    let footer_text = footer_lines(app, area.width);
    let [transcript, status_area, editor, footer] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(status.len() as u16),
        Constraint::Length(editor_lines as u16 + 2),
        Constraint::Length(footer_text.len() as u16),
    ])
    .areas(area);
    let max_scroll = draw_transcript(frame, app, transcript);
    frame.render_widget(Paragraph::new(status), status_area);
    draw_editor(frame, app, editor);
    frame.render_widget(Paragraph::new(footer_text), footer);
    if let Some(picker) = &app.picker {
        draw_picker(frame, app, picker, transcript);
    }
    super::theme::apply(app.theme, frame.buffer_mut());
    max_scroll
}

// ----- transcript ---------------------------------------------------------------------

/// The banner's lines at `width` columns.
fn banner_lines(banner: &str, width: usize) -> Vec<Line<'static>> {
    let style = Style::new().fg(Color::Magenta);
    let mut lines = Vec::new();
    for line in banner.lines() {
        lines.extend(wrap_spans(
            vec![Span::styled(line.to_owned(), style)],
            width,
            &[],
            &[],
        ));
    }
    lines.push(Line::default());
    lines
}

/// The last `wanted` transcript lines (fewer when the transcript is shorter), laid out from
/// the newest item back so a long session costs only what is on screen.
pub fn transcript_tail(app: &App, width: u16, wanted: usize) -> Vec<Line<'static>> {
    let mut chunks: Vec<Vec<Line<'static>>> = Vec::new();
    let mut total = 0;
    for item in app.shown_items().iter().rev() {
        if total >= wanted {
            break;
        }
        let mut lines = Vec::new();
        item_lines(app, item, width, &mut lines);
        lines.push(Line::default());
        total += lines.len();
        chunks.push(lines);
    }
    if total < wanted
        && app.children.viewing.is_none()
        && let Some(banner) = &app.banner
    {
        chunks.push(banner_lines(banner, usize::from(width.max(8))));
    }
    chunks.into_iter().rev().flatten().collect()
}

fn item_lines(app: &App, item: &Item, width: u16, out: &mut Vec<Line<'static>>) {
    let width_us = usize::from(width.max(8));
    match item {
        Item::User(text) => {
            let style = Style::new()
                .fg(Color::LightBlue)
                .add_modifier(Modifier::BOLD);
            let first = [Span::styled("❯ ", style)];
            let next = [Span::raw("  ")];
            for (index, line) in text.split('\n').enumerate() {
                let prefix = if index == 0 { &first[..] } else { &next[..] };
                out.extend(wrap_spans(
                    vec![Span::styled(line.to_owned(), Style::new().fg(Color::White))],
                    width_us,
                    prefix,
                    &next,
                ));
            }
        }
        Item::Assistant(text) => out.extend(markdown::render(text, width, Style::default())),
        Item::Thinking(text) => {
            let style = MUTED.add_modifier(Modifier::ITALIC);
            if app.expand_thinking {
                out.push(Line::from(Span::styled("∴ thinking", style)));
                let bar = [Span::styled("│ ", MUTED)];
                for line in text.lines() {
                    out.extend(wrap_spans(
                        vec![Span::styled(line.to_owned(), style)],
                        width_us,
                        &bar,
                        &bar,
                    ));
                }
            } else {
                let count = text.lines().filter(|l| !l.trim().is_empty()).count();
                let noun = if count == 1 { "line" } else { "lines" };
                out.push(Line::from(Span::styled(
                    format!("∴ thinking ({count} {noun}, Ctrl+T shows)"),
                    style,
                )));
            }
        }
        Item::Tool(tool) => tool_lines(app, tool, width_us, out),
        Item::Notice(notice) => {
            let (mark, style) = match notice.level {
                Level::Info => ("· ", MUTED),
                Level::Warning => ("! ", Style::new().fg(Color::Yellow)),
                Level::Error => ("✗ ", Style::new().fg(Color::Red)),
            };
            let first = [Span::styled(mark, style)];
            let next = [Span::raw("  ")];
            for line in notice.text.lines() {
                out.extend(wrap_spans(
                    vec![Span::styled(line.to_owned(), style)],
                    width_us,
                    &first,
                    &next,
                ));
            }
        }
        Item::Block { title, lines } => {
            out.push(Line::from(Span::styled(
                title.clone(),
                Style::new().add_modifier(Modifier::BOLD),
            )));
            let indent = [Span::raw("  ")];
            for line in lines {
                out.extend(wrap_verbatim(
                    vec![Span::raw(line.clone())],
                    width_us,
                    &indent,
                ));
            }
        }
    }
}

fn tool_lines(app: &App, tool: &ToolItem, width: usize, out: &mut Vec<Line<'static>>) {
    let (mark, mark_style) = match tool.state {
        ToolState::Streaming => ("…", Style::new().fg(Color::Cyan)),
        ToolState::Running => ("⋯", Style::new().fg(Color::Cyan)),
        ToolState::Done => ("✓", Style::new().fg(Color::Green)),
        ToolState::Failed => ("✗", Style::new().fg(Color::Red)),
    };
    let head = [
        Span::styled(format!("{mark} "), mark_style),
        Span::styled(
            tool.name.clone(),
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        ),
        Span::raw(" "),
    ];
    let arguments = arguments_text(&tool.arguments);
    let mut argument_lines = wrap_spans(
        vec![Span::styled(arguments, Style::new().fg(Color::Gray))],
        width,
        &head,
        &[Span::raw("    ")],
    );
    if !app.expand_tools && argument_lines.len() > 3 {
        argument_lines.truncate(3);
        argument_lines.push(Line::from(Span::styled("    …", MUTED)));
    }
    out.extend(argument_lines);
    if let Some(diff) = &tool.diff {
        diff_lines(app, diff, width, out);
    }
    if tool.output.is_empty() {
        return;
    }
    let gutter = [Span::styled("  │ ", MUTED)];
    let lines: Vec<&str> = tool.output.trim_end().lines().collect();
    let shown = if app.expand_tools {
        lines.len()
    } else {
        lines.len().min(COLLAPSED_OUTPUT)
    };
    let style = if tool.state == ToolState::Failed {
        Style::new().fg(Color::Red)
    } else {
        MUTED
    };
    for line in &lines[..shown] {
        let mut wrapped = wrap_verbatim(
            vec![Span::styled(line.replace('\t', "    "), style)],
            width,
            &gutter,
        );
        if !app.expand_tools {
            wrapped.truncate(1);
        }
        out.extend(wrapped);
    }
    if shown < lines.len() {
        out.push(Line::from(Span::styled(
            format!("  … {} more lines (Ctrl+O expands)", lines.len() - shown),
            MUTED,
        )));
    }
}

/// A unified diff, added lines green and removed lines red, file headers left out.
fn diff_lines(app: &App, diff: &str, width: usize, out: &mut Vec<Line<'static>>) {
    let lines: Vec<&str> = diff
        .lines()
        .filter(|line| !line.starts_with("--- ") && !line.starts_with("+++ "))
        .collect();
    let shown = if app.expand_tools {
        lines.len()
    } else {
        lines.len().min(COLLAPSED_DIFF)
    };
    let gutter = [Span::styled("  │ ", MUTED)];
    for line in &lines[..shown] {
        let style = if line.starts_with('+') {
            Style::new().fg(Color::Green)
        } else if line.starts_with('-') {
            Style::new().fg(Color::Red)
        } else if line.starts_with("@@") {
            Style::new().fg(Color::Cyan)
        } else {
            MUTED
        };
        out.extend(wrap_verbatim(
            vec![Span::styled(line.replace('\t', "    "), style)],
            width,
            &gutter,
        ));
    }
    if shown < lines.len() {
        out.push(Line::from(Span::styled(
            format!(
                "  … {} more diff lines (Ctrl+O expands)",
                lines.len() - shown
            ),
            MUTED,
        )));
    }
}

/// Arguments as `key: value` pairs when they are a JSON object, raw text otherwise (still
/// streaming).
fn arguments_text(raw: &str) -> String {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| match value {
                Value::String(text) => format!("{key}: {text}"),
                other => format!("{key}: {other}"),
            })
            .collect::<Vec<_>>()
            .join("  "),
        _ => raw.to_owned(),
    }
}

fn draw_transcript(frame: &mut Frame<'_>, app: &App, area: Rect) -> Option<usize> {
    let height = usize::from(area.height);
    let wanted = height + app.scroll;
    let lines = transcript_tail(app, area.width, wanted);
    let max_scroll = (lines.len() < wanted).then(|| lines.len().saturating_sub(height));
    let bottom = lines
        .len()
        .saturating_sub(app.scroll.min(lines.len().saturating_sub(height)));
    let top = bottom.saturating_sub(height);
    let visible: Vec<Line<'static>> = lines[top..bottom].to_vec();
    frame.render_widget(Paragraph::new(visible), area);
    max_scroll
}

// ----- status, editor, footer ---------------------------------------------------------

fn status_lines(app: &App, tick: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    // Steering left over from an aborted run stays queued in the agent for its next run.
    let steer_label = if app.busy.is_some() {
        "↳ steer: "
    } else {
        "↳ queued for the next run: "
    };
    for text in &app.steering {
        lines.push(Line::from(vec![
            Span::styled(steer_label, Style::new().fg(Color::Yellow)),
            Span::raw(first_line(text)),
        ]));
    }
    for text in &app.follow_ups {
        lines.push(Line::from(vec![
            Span::styled("⏵ follow-up: ", Style::new().fg(Color::Yellow)),
            Span::raw(first_line(text)),
        ]));
    }
    // The children of the run in progress, each with where it stands.
    if app.busy.is_some() {
        for child in app.children.of_this_run() {
            let colour = match child.status {
                ChildStatus::Running => Color::Cyan,
                ChildStatus::Done => Color::Green,
                ChildStatus::Failed => Color::Red,
            };
            lines.push(Line::from(vec![
                Span::styled(
                    format!("⑂ child ({}) {}: ", child.start, child.description),
                    Style::new().fg(colour),
                ),
                Span::styled(child.status.as_str(), Style::new().fg(colour)),
                Span::styled(
                    format!(
                        " · {} · {} requests · {}",
                        child.activity,
                        child.requests,
                        stats::dollars(child.cost)
                    ),
                    MUTED,
                ),
            ]));
        }
    }
    if let Some(view) = &app.children.viewing {
        lines.push(Line::from(vec![
            Span::styled(
                format!("viewing {} (read-only) ", view.title),
                Style::new().fg(Color::Magenta),
            ),
            Span::styled("Esc returns to this session", MUTED),
        ]));
    }
    if let Some(busy) = &app.busy {
        let spinner = SPINNER[tick % SPINNER.len()];
        lines.push(Line::from(vec![
            Span::styled(format!("{spinner} {busy}… "), Style::new().fg(Color::Cyan)),
            Span::styled(
                "Esc aborts · Enter steers · Alt+Enter queues a follow-up",
                MUTED,
            ),
        ]));
    }
    if app.editor.is_command() && app.picker.is_none() {
        let typed = app.editor.text();
        let matches = command::matching(&typed, &app.extension_commands());
        if let [(name, what)] = matches.as_slice() {
            lines.push(Line::from(vec![
                Span::styled(format!("{name} "), Style::new().fg(Color::Cyan)),
                Span::styled(what.clone(), MUTED),
            ]));
        } else if !matches.is_empty() {
            let names: Vec<&str> = matches.iter().map(|(name, _)| name.as_str()).collect();
            lines.push(Line::from(Span::styled(names.join("  "), MUTED)));
        }
    }
    if app.picker.is_none()
        && app.files_listed()
        && let Some((_, query)) = app.at_query()
    {
        let found = app.file_matches(&query, super::app::complete::SHOWN);
        let chosen = app.chosen_suggestion(&query);
        let mut spans = vec![Span::styled("@ ", Style::new().fg(Color::Cyan))];
        if found.is_empty() {
            spans.push(Span::styled("no file matches", MUTED));
        }
        for (index, path) in found.iter().enumerate() {
            let style = if index == chosen {
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD)
            } else {
                MUTED
            };
            spans.push(Span::styled(format!("{path}  "), style));
        }
        if !found.is_empty() {
            spans.push(Span::styled("(↑↓ choose, Tab puts it in)", MUTED));
        }
        lines.push(Line::from(spans));
    }
    if let Some(hint) = &app.hint {
        lines.push(Line::from(Span::styled(hint.clone(), MUTED)));
    }
    lines
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if text.lines().nth(1).is_some() {
        format!("{line} …")
    } else {
        line.to_owned()
    }
}

/// The editor's lines cut to `width`, with where each logical line starts.
fn editor_rows(app: &App, width: usize) -> Vec<(usize, String)> {
    let mut rows = Vec::new();
    for (index, line) in app.editor.lines().iter().enumerate() {
        let mut current = String::new();
        let mut used = 0;
        for ch in line.chars() {
            let w = ch.width().unwrap_or(0);
            if used + w > width && used > 0 {
                rows.push((index, std::mem::take(&mut current)));
                used = 0;
            }
            current.push(ch);
            used += w;
        }
        rows.push((index, current));
    }
    rows
}

fn draw_editor(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let title = if app.busy.is_some() {
        " steer the agent (Enter) or queue a follow-up (Alt+Enter) "
    } else {
        " prompt (/ for commands) "
    };
    let block = Block::default()
        .borders(Borders::TOP | Borders::BOTTOM)
        .border_style(MUTED)
        .title(Span::styled(title, MUTED));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = usize::from(inner.width.saturating_sub(2).max(1));
    let rows = editor_rows(app, width);
    // Where the cursor falls among the wrapped rows.
    let (line, col) = app.editor.cursor();
    let mut cursor_row = 0;
    let mut cursor_col = 0;
    let mut seen = 0;
    for (index, (logical, text)) in rows.iter().enumerate() {
        if *logical != line {
            continue;
        }
        let chars = text.chars().count();
        if col <= seen + chars {
            cursor_row = index;
            cursor_col = text.chars().take(col - seen).collect::<String>().width();
            break;
        }
        seen += chars;
    }
    let height = usize::from(inner.height.max(1));
    let top = (cursor_row + 1).saturating_sub(height);
    let prompt_style = Style::new()
        .fg(Color::LightBlue)
        .add_modifier(Modifier::BOLD);
    let lines: Vec<Line<'static>> = rows
        .iter()
        .enumerate()
        .skip(top)
        .take(height)
        .map(|(index, (_, text))| {
            let lead = if index == 0 { "❯ " } else { "  " };
            Line::from(vec![
                Span::styled(lead, prompt_style),
                Span::raw(text.clone()),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
    if app.picker.is_none() {
        let x = (inner.x + 2 + cursor_col as u16).min(inner.right().saturating_sub(1));
        frame.set_cursor_position(Position::new(x, inner.y + (cursor_row - top) as u16));
    }
}

/// The footer: model, thinking level and context; this request's tokens and cost; the
/// session's cache hit rate and cost; a cache-break marker naming the chapter. Groups flow onto
/// as many lines as `width` needs.
pub fn footer_lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let status = &app.status;
    let stats = &app.stats;
    let used = stats.context_used().unwrap_or(0);
    let context = if status.context_window > 0 {
        format!(
            "context {}/{} ({:.0}%)",
            stats::tokens(used),
            stats::tokens(status.context_window),
            used as f64 * 100.0 / status.context_window as f64
        )
    } else {
        format!("context {}", stats::tokens(used))
    };
    if status.model.is_empty() {
        let note = app.setup_note.as_deref().unwrap_or("opening the session…");
        return vec![Line::from(Span::styled(format!(" {note}"), MUTED))];
    }
    let mut model = vec![
        Span::styled(
            status.model.clone(),
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            format!(" · thinking {} · {context}", status.thinking),
            MUTED,
        ),
    ];
    if let Some(name) = &status.session_name {
        model.push(Span::styled(format!(" · “{name}”"), MUTED));
    }
    if let Some(mode) = app.shown_mode() {
        model.push(Span::styled(
            format!(" · ⏵ {mode} mode (Alt+M)"),
            Style::new().fg(Color::Magenta),
        ));
    }
    let request = match &stats.last {
        Some(usage) => vec![Span::raw(format!(
            "last: {} in · {} cache read · {} cache write · {} out · {}",
            stats::tokens(usage.input),
            stats::tokens(usage.cache_read),
            stats::tokens(usage.cache_write()),
            stats::tokens(usage.output),
            stats::dollars(stats.last_cost)
        ))],
        None => vec![Span::styled("no requests yet", MUTED)],
    };
    let hit = stats
        .hit_rate()
        .map_or_else(|| "–".to_owned(), |rate| format!("{:.0}%", rate * 100.0));
    let pings = match stats.pings {
        0 => String::new(),
        1 => " · 1 keep-warm ping".to_owned(),
        n => format!(" · {n} keep-warm pings"),
    };
    // Children's requests are the session's spending too: in the total, and said apart.
    let children = stats.children_cost + app.children.running_cost();
    let cost = if children > 0.0 {
        format!(
            "{} (children {})",
            stats::dollars(stats.cost + children),
            stats::dollars(children)
        )
    } else {
        stats::dollars(stats.cost)
    };
    // What hooks and extensions added cost in cache writes (part of the cost, said apart).
    let attributed: f64 = status.attributed.iter().map(|a| a.cost).sum();
    let hooks = if status.attributed.is_empty() {
        String::new()
    } else {
        format!(" · hooks/extensions {}", stats::dollars(attributed))
    };
    let session = vec![Span::raw(format!(
        "session: {hit} cache hit · {cost}{pings}{hooks}"
    ))];
    let mut groups = vec![model, request];
    if let Some(cause) = &stats.cache_break {
        // An explained break (compaction, new model, …) is said plainly; only an unexplained
        // one is a warning.
        let (text, style) = if cause.is_expected() {
            (
                format!("cache rebuilt: {}", cause.short()),
                Style::new().fg(Color::Yellow),
            )
        } else {
            (
                format!("⚠ cache broke: {}", cause.short()),
                Style::new().fg(Color::Red).add_modifier(Modifier::BOLD),
            )
        };
        groups.push(vec![Span::styled(text, style)]);
    }
    groups.push(session);
    // What extensions put in the footer (`ui/status`).
    for text in app.extension_statuses() {
        groups.push(vec![Span::styled(text, Style::new().fg(Color::Blue))]);
    }
    // Where the work happens, as Pi's footer says it: the directory and its git branch.
    if !status.cwd.as_os_str().is_empty() {
        let mut place = super::info::tilde(&status.cwd);
        if let Some(branch) = &status.branch {
            place.push_str(&format!(" ({branch})"));
        }
        groups.push(vec![Span::styled(place, MUTED)]);
    }
    flow(groups, usize::from(width))
}

/// Lays groups of spans on lines, ` │ ` between groups on a line; the first group always
/// starts a line of its own.
fn flow(groups: Vec<Vec<Span<'static>>>, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Line<'static>> = Vec::new();
    let mut current: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for (index, group) in groups.into_iter().enumerate() {
        let group_width: usize = group.iter().map(|s| s.content.width()).sum();
        let fits = used + 3 + group_width <= width;
        if !current.is_empty() && (index == 1 || !fits) {
            lines.push(Line::from(std::mem::take(&mut current)));
            used = 0;
        }
        if current.is_empty() {
            current.push(Span::raw(" "));
            used = 1;
        } else {
            current.push(Span::styled(" │ ", MUTED));
            used += 3;
        }
        used += group_width;
        current.extend(group);
    }
    if !current.is_empty() {
        lines.push(Line::from(current));
    }
    lines
}

// ----- picker -------------------------------------------------------------------------

fn draw_picker(frame: &mut Frame<'_>, app: &App, picker: &Picker, area: Rect) {
    let width = (area.width * 9 / 10).max(20).min(area.width);
    let height = (area.height * 8 / 10).max(5).min(area.height);
    let rect = Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    );
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(Style::new().fg(Color::Cyan))
        .title(format!(" {} ", picker.title));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let mut lines = Vec::new();
    match &picker.kind {
        PickerKind::TreeSummary { .. } => lines.push(Line::from(vec![
            Span::styled("focus: ", MUTED),
            Span::raw(picker.query.clone()),
        ])),
        PickerKind::Model => {
            lines.push(Line::from(vec![
                Span::styled("search: ", MUTED),
                Span::raw(picker.query.clone()),
            ]));
            let chosen = picker
                .current()
                .and_then(|item| app.status.models.iter().find(|m| m.name == item.key));
            if let Some(option) = chosen.filter(|m| m.usable) {
                lines.extend(wrap_spans(
                    vec![Span::styled(
                        format!("switching {}", app.switch_note(option)),
                        Style::new().fg(Color::Yellow),
                    )],
                    usize::from(inner.width.max(8)),
                    &[],
                    &[],
                ));
            }
        }
        PickerKind::Tools => {
            let cost = app
                .picked_tool_change()
                .map(|(enable, disable)| app.tool_change(&enable, &disable).describe())
                .unwrap_or_default();
            lines.extend(wrap_spans(
                vec![Span::styled(
                    format!("change: {cost}"),
                    Style::new().fg(Color::Yellow),
                )],
                usize::from(inner.width.max(8)),
                &[],
                &[],
            ));
        }
        _ => lines.push(Line::from(vec![
            Span::styled("search: ", MUTED),
            Span::raw(picker.query.clone()),
        ])),
    }
    let visible = picker.visible();
    let rows = usize::from(inner.height).saturating_sub(lines.len()).max(1);
    let top = (picker.selected + 1).saturating_sub(rows);
    let width = usize::from(inner.width);
    for (position, index) in visible.iter().enumerate().skip(top).take(rows) {
        let item = &picker.items[*index];
        let selected = position == picker.selected;
        let mark = match item.checked {
            Some(true) => "[x] ",
            Some(false) => "[ ] ",
            None => "",
        };
        let pointer = if selected { "› " } else { "  " };
        let label_style = if selected {
            Style::new().fg(Color::Black).bg(Color::Cyan)
        } else {
            Style::default()
        };
        let label = truncate(&format!("{pointer}{mark}{}", item.label), width);
        let room = width.saturating_sub(label.width() + 2);
        let mut spans = vec![Span::styled(label, label_style)];
        if room > 4 && !item.detail.is_empty() {
            spans.push(Span::styled(
                format!("  {}", truncate(&item.detail, room)),
                MUTED,
            ));
        }
        lines.push(Line::from(spans));
    }
    if visible.is_empty() {
        lines.push(Line::from(Span::styled("  (nothing matches)", MUTED)));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

fn truncate(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = ch.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(ch);
        used += w;
    }
    out.push('…');
    out
}
