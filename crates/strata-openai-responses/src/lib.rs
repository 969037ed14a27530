//! strata adapter for the OpenAI Responses API.
