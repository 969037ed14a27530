//! The registry of tools by name, and running a batch of calls.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared, join_all};
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use crate::access::Access;
use crate::tool::{Tool, ToolCall, ToolContext, ToolDefinition, ToolOutput, UpdateSender};
use crate::{BashTool, EditTool, FindTool, GrepTool, LsTool, ReadTool, WriteTool};

/// The tools active by default, in order.
pub const DEFAULT_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];
/// Every built-in tool, in order.
pub const ALL_TOOL_NAMES: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// A built-in tool by name.
pub fn builtin(name: &str) -> Option<Arc<dyn Tool>> {
    let tool: Arc<dyn Tool> = match name {
        "read" => Arc::new(ReadTool),
        "bash" => Arc::new(BashTool::default()),
        "edit" => Arc::new(EditTool),
        "write" => Arc::new(WriteTool),
        "grep" => Arc::new(GrepTool),
        "find" => Arc::new(FindTool),
        "ls" => Arc::new(LsTool),
        _ => return None,
    };
    Some(tool)
}

/// Runs `calls` with `tools`: independent calls concurrently, results in call order
/// (see [`ToolSet::run_batch`]).
pub async fn run_batch(
    tools: &ToolSet,
    calls: Vec<ToolCall>,
    ctx: &ToolContext,
) -> Vec<ToolOutput> {
    tools.run_batch(calls, ctx).await
}

/// An ordered set of tools with unique names; the order is the order of the tool array sent.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: Vec<Arc<dyn Tool>>,
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// read, bash, edit, write.
    pub fn default_set() -> Self {
        Self::builtins(&DEFAULT_TOOL_NAMES)
    }

    /// Every built-in: read, bash, edit, write, grep, find, ls.
    pub fn all() -> Self {
        Self::builtins(&ALL_TOOL_NAMES)
    }

    /// The named built-ins, in the order given; unknown names are skipped.
    pub fn builtins(names: &[&str]) -> Self {
        let mut set = Self::new();
        for name in names {
            if let Some(tool) = builtin(name) {
                set.insert(tool);
            }
        }
        set
    }

    /// Adds a tool; one with the same name is replaced in place.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        match self.tools.iter().position(|t| t.name() == tool.name()) {
            Some(index) => self.tools[index] = tool,
            None => self.tools.push(tool),
        }
    }

    /// Removes and returns the tool called `name`.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let index = self.tools.iter().position(|t| t.name() == name)?;
        Some(self.tools.remove(index))
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.iter().find(|t| t.name() == name)
    }

    /// The tools' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }

    /// The tools, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the set has no tools.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The definitions sent to the provider, in order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools.iter().map(|t| t.definition()).collect()
    }

    /// Runs one call. An unknown tool or a panicking tool becomes an error result.
    pub async fn execute(
        &self,
        call: ToolCall,
        ctx: &ToolContext,
        updates: Option<UpdateSender>,
    ) -> ToolOutput {
        let Some(tool) = self.get(&call.name) else {
            return ToolOutput::error(format!("Tool {} not found", call.name));
        };
        let name = call.name.clone();
        match AssertUnwindSafe(tool.execute(call, ctx, updates))
            .catch_unwind()
            .await
        {
            Ok(output) => output,
            Err(panic) => {
                let reason = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown cause".to_owned());
                ToolOutput::error(format!("Tool {name} failed unexpectedly: {reason}"))
            }
        }
    }

    /// What a call touches; unknown tools touch nothing (they fail at once).
    fn access(&self, call: &ToolCall, ctx: &ToolContext) -> Access {
        match self.get(&call.name) {
            Some(tool) => tool.access(&call.arguments, ctx),
            None => Access::None,
        }
    }

    /// Runs the calls, independent ones concurrently, and returns the results in call order.
    /// A call waits for every earlier call it conflicts with (same file written, or a shell
    /// command next to a writer), so the outcome is the one of running them in order.
    pub async fn run_batch(&self, calls: Vec<ToolCall>, ctx: &ToolContext) -> Vec<ToolOutput> {
        self.run_batch_with_updates(calls, ctx, None).await
    }

    /// [`ToolSet::run_batch`], forwarding each call's partial results tagged with its index.
    pub async fn run_batch_with_updates(
        &self,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
        updates: Option<UnboundedSender<(usize, ToolOutput)>>,
    ) -> Vec<ToolOutput> {
        let accesses: Vec<Access> = calls.iter().map(|c| self.access(c, ctx)).collect();
        let mut scheduled: Vec<Shared<BoxFuture<'_, ToolOutput>>> = Vec::with_capacity(calls.len());
        for (index, call) in calls.into_iter().enumerate() {
            let waits_for: Vec<_> = (0..index)
                .filter(|&earlier| accesses[earlier].conflicts_with(&accesses[index]))
                .map(|earlier| scheduled[earlier].clone())
                .collect();
            let updates = updates.clone();
            let run = async move {
                for earlier in waits_for {
                    earlier.await;
                }
                self.execute_forwarding(index, call, ctx, updates).await
            };
            scheduled.push(run.boxed().shared());
        }
        join_all(scheduled).await
    }

    async fn execute_forwarding(
        &self,
        index: usize,
        call: ToolCall,
        ctx: &ToolContext,
        updates: Option<UnboundedSender<(usize, ToolOutput)>>,
    ) -> ToolOutput {
        let Some(outer) = updates else {
            return self.execute(call, ctx, None).await;
        };
        let (sender, mut receiver) = unbounded_channel();
        let forward = async move {
            while let Some(update) = receiver.recv().await {
                let _ = outer.send((index, update));
            }
        };
        let (output, ()) = futures::join!(self.execute(call, ctx, Some(sender)), forward);
        output
    }
}
