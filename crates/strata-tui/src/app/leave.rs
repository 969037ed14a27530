//! What leaving prints on the restored terminal, as Pi leaves its transcript: the session's
//! requests and cost, and the command that resumes it.

use super::App;

impl App {
    /// What leaving prints on the restored terminal: the session's requests and cost, and
    /// (`resumable`: the session was kept) the command that resumes it.
    pub fn exit_summary(&self, resumable: bool) -> Option<String> {
        let stats = &self.stats;
        if stats.requests == 0 {
            return None;
        }
        let read = if stats.prompt_tokens == 0 {
            0.0
        } else {
            stats.cache_read as f64 * 100.0 / stats.prompt_tokens as f64
        };
        // As the footer says it: child agents' spending in the total, and apart.
        let children = stats.children_cost + self.children.running_cost();
        let cost = if children > 0.0 {
            format!("${:.4} (children ${children:.4})", stats.cost + children)
        } else {
            format!("${:.4}", stats.cost)
        };
        let mut text = format!(
            "strata: {} request{}, {cost}, {read:.0}% of prompt tokens read from the cache",
            stats.requests,
            if stats.requests == 1 { "" } else { "s" },
        );
        let file = &self.status.session_file;
        if resumable && !file.as_os_str().is_empty() {
            text.push_str(&format!("\nresume: strata --session {}", file.display()));
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use crate::testing::app;

    #[test]
    fn leaving_prints_the_cost_and_how_to_resume() {
        let mut app = app();
        assert_eq!(app.exit_summary(true), None, "nothing was sent");
        app.stats.requests = 2;
        app.stats.cost = 0.0125;
        app.stats.prompt_tokens = 1000;
        app.stats.cache_read = 900;
        app.status.session_file = "/s/x.jsonl".into();
        assert_eq!(
            app.exit_summary(true).unwrap(),
            "strata: 2 requests, $0.0125, 90% of prompt tokens read from the cache\nresume: strata --session /s/x.jsonl"
        );
        assert!(!app.exit_summary(false).unwrap().contains("resume"));
    }
}
