//! Helpers shared by the test modules.

use std::path::Path;

use serde_json::Value;
use strata_tools::{ToolCall, ToolContext, ToolOutput, ToolSet, UpdateSender};
use tempfile::TempDir;

/// A temp dir, a context rooted in it (temp files go to its `tmp/`), and every built-in tool.
pub struct Env {
    pub dir: TempDir,
    pub ctx: ToolContext,
    pub tools: ToolSet,
}

impl Env {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let temp = dir.path().join("tmp");
        std::fs::create_dir(&temp).unwrap();
        let mut ctx = ToolContext::new(dir.path().join("work"));
        std::fs::create_dir(&ctx.cwd).unwrap();
        ctx.temp_dir = temp;
        Self {
            dir,
            ctx,
            tools: ToolSet::all(),
        }
    }

    pub fn cwd(&self) -> &Path {
        &self.ctx.cwd
    }

    pub fn temp_dir(&self) -> &Path {
        &self.ctx.temp_dir
    }

    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.cwd().join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.cwd().join(rel)).unwrap()
    }

    pub async fn call(&self, name: &str, arguments: Value) -> ToolOutput {
        self.call_with_updates(name, arguments, None).await
    }

    pub async fn call_with_updates(
        &self,
        name: &str,
        arguments: Value,
        updates: Option<UpdateSender>,
    ) -> ToolOutput {
        self.tools
            .execute(ToolCall::new("call", name, arguments), &self.ctx, updates)
            .await
    }
}

/// The only text block of a result.
pub fn text(output: &ToolOutput) -> String {
    output.text_content()
}

/// Names of the entries of a directory, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Processes (not zombies) whose process group is `pgid`, read from /proc.
pub fn live_processes_in_group(pgid: i32) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap() {
        let entry = entry.unwrap();
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the parenthesised command name: state ppid pgrp ...
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            found.push(pid);
        }
    }
    found
}

/// Waits (bounded) until no live process is left in the group; returns what is left.
pub async fn wait_for_group_to_die(pgid: i32) -> Vec<i32> {
    for _ in 0..100 {
        let left = live_processes_in_group(pgid);
        if left.is_empty() {
            return left;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    live_processes_in_group(pgid)
}
