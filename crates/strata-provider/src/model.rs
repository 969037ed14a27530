//! A model as the catalog describes it: limits, modalities, reasoning and prices.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::usage::Prices;

/// A kind of input a model accepts.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Modality {
    /// Text.
    Text,
    /// Images.
    Image,
    /// Audio.
    Audio,
    /// Video.
    Video,
    /// PDF documents.
    Pdf,
}

/// One model of one provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Model {
    /// Provider id (a row of the capability table).
    pub provider: String,
    /// Model id as sent on the wire.
    pub id: String,
    /// Human-readable name.
    pub name: String,
    /// Context window in tokens (input + output).
    pub context_window: u64,
    /// Largest output the model produces, in tokens.
    pub max_output: u64,
    /// Accepted input kinds.
    pub input: Vec<Modality>,
    /// The model can reason (thinking levels apply).
    pub reasoning: bool,
    /// Prices in USD per million tokens.
    pub prices: Prices,
}

impl Model {
    /// `provider/id`, the unambiguous name used on the command line.
    pub fn qualified_id(&self) -> String {
        format!("{}/{}", self.provider, self.id)
    }

    /// Whether the model accepts image input.
    pub fn accepts_images(&self) -> bool {
        self.input.contains(&Modality::Image)
    }
}
