//! The host side of strata extensions (`docs/extensions.md`).
//!
//! - [`Extension::start`] spawns an extension, runs the `initialize` handshake and returns
//!   its [`Manifest`](strata_extension_client::Manifest).
//! - [`Extension::hook`] asks it about a hook event; the answer is read exactly like a
//!   command hook's JSON (strata-hooks' [`Outcome`](strata_hooks::Outcome)).
//! - [`Extension::notify_event`], [`Extension::command`], [`Extension::call_tool`].
//! - UI requests it sends arrive as [`UiCall`]s on a channel a front end answers.
//! - [`ExtensionTools`] declares extensions' tools to the agent like an MCP server's.
//! - [`MemorySlots`] gives each memory decision one owner.
//! - [`ExtensionSet`] is a run's extensions: started together, hook responders, tools,
//!   slot claims and the `memory/<slot>` requests, reports.

mod host;
mod set;
mod slots;
mod tools;

pub use host::{
    Extension, ExtensionError, ExtensionReport, ExtensionSpec, MAX_MESSAGE_BYTES, Outlets, UiCall,
    UiRequest,
};
pub use set::{ExtensionSet, ExtensionState, ExtensionStatus, SetTools};
pub use slots::{BUILT_IN_OWNER, MemorySlots, SLOT_CUSTOM_TYPE, Slot, SlotError};
/// An extension's operation for the session runtime (defined beside the hook types, which the
/// agent also speaks).
pub use strata_hooks::OpCall;
pub use tools::ExtensionTools;
