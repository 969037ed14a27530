//! Render: chapters, placement of patches, Pi's conversion, reports, the incremental renderer.

mod conversion;
mod dynamic_tools;
mod golden;
mod incremental;
mod properties;
mod support;
