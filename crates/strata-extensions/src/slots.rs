//! Memory slots: each memory decision has exactly one owner, in the order the design gives
//! (ingress filter, main compaction strategy, background pre-computation, forgetting).
//! strata's built-in policies own every slot until an extension claims it; a second claimant
//! is refused with the owner's name and nothing is written.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::json;
use strata_session::{EntryId, Session};

/// The owner of a slot nobody claimed: strata's built-in policy.
pub const BUILT_IN_OWNER: &str = "strata";

/// The `customType` of the entry recording a claim (a Pi `custom` entry: not in context).
pub const SLOT_CUSTOM_TYPE: &str = "strata.memory-slot";

/// A memory decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Slot {
    /// Rewrites or shortens a tool result before it enters the context.
    IngressFilter,
    /// The summary or kept set at a compaction.
    Compaction,
    /// Prepares the next compaction before it is needed.
    Precompute,
    /// Which finished outputs to mask or fold.
    Forgetting,
}

impl Slot {
    /// Every slot, in the design's order.
    pub const ALL: [Slot; 4] = [
        Slot::IngressFilter,
        Slot::Compaction,
        Slot::Precompute,
        Slot::Forgetting,
    ];

    /// The protocol's name.
    pub fn name(self) -> &'static str {
        match self {
            Slot::IngressFilter => "ingress_filter",
            Slot::Compaction => "compaction",
            Slot::Precompute => "precompute",
            Slot::Forgetting => "forgetting",
        }
    }

    /// The slot of a protocol name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|slot| slot.name() == name)
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a claim was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SlotError {
    /// Another extension owns the slot.
    #[error("memory slot `{slot}` is owned by extension `{owner}`; `{claimant}` was refused")]
    Taken {
        /// The slot.
        slot: Slot,
        /// Its owner.
        owner: String,
        /// Who asked.
        claimant: String,
    },
    /// No such slot.
    #[error(
        "`{claimant}` claimed `{name}`, which is not a memory slot (ingress_filter, compaction, precompute, forgetting)"
    )]
    Unknown {
        /// The name asked for.
        name: String,
        /// Who asked.
        claimant: String,
    },
    /// The claim could not be recorded (the slot stays as it was).
    #[error("recording the claim failed: {0}")]
    Session(String),
}

/// Who owns each slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemorySlots {
    /// Claimed slots; a slot not here is the built-in's.
    owners: BTreeMap<Slot, String>,
}

impl MemorySlots {
    /// Every slot owned by the built-ins.
    pub fn new() -> Self {
        Self::default()
    }

    /// The owner of `slot`.
    pub fn owner(&self, slot: Slot) -> &str {
        self.owners
            .get(&slot)
            .map_or(BUILT_IN_OWNER, String::as_str)
    }

    /// Gives `slot` (by protocol name) to `claimant` and appends one `custom` entry saying so.
    /// Refused, with nothing written, when another extension owns it; claiming a slot one
    /// already owns writes nothing.
    pub fn claim(
        &mut self,
        name: &str,
        claimant: &str,
        session: &mut Session,
    ) -> Result<Option<EntryId>, SlotError> {
        let Some(slot) = Slot::from_name(name) else {
            return Err(SlotError::Unknown {
                name: name.to_owned(),
                claimant: claimant.to_owned(),
            });
        };
        match self.owners.get(&slot) {
            Some(owner) if owner == claimant => return Ok(None),
            Some(owner) => {
                return Err(SlotError::Taken {
                    slot,
                    owner: owner.clone(),
                    claimant: claimant.to_owned(),
                });
            }
            None => {}
        }
        let id = session
            .append_custom(
                SLOT_CUSTOM_TYPE,
                Some(json!({"slot": slot.name(), "owner": claimant, "previous": BUILT_IN_OWNER})),
            )
            .map_err(|error| SlotError::Session(error.to_string()))?;
        self.owners.insert(slot, claimant.to_owned());
        Ok(Some(id))
    }

    /// Every slot an extension named `owner` holds goes back to the built-ins (the extension
    /// stopped or was removed). Nothing is written: the built-in policy simply resumes.
    pub fn release_all(&mut self, owner: &str) {
        self.owners.retain(|_, holder| holder != owner);
    }
}
