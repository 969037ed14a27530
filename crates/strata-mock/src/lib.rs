//! A local LLM provider server speaking the major wire protocols, with a prefix-cache simulator and scripted model.
