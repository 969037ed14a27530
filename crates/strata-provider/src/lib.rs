//! Provider-neutral request, event and usage types, the Provider trait, and the provider capability table.
