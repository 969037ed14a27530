//! strata adapter for OpenAI Chat Completions and every OpenAI-compatible provider.
