//! strata adapter for the Anthropic Messages API: request building, SSE streaming, usage.
