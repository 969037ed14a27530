//! strata adapter for the Bedrock Converse stream API (SigV4, AWS event-stream framing).
