//! `--mode rpc` driven by a client written from Pi's documented protocol (being built).
