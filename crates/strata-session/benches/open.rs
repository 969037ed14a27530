//! Placeholder: the session-open benchmark lands in a later commit.
fn main() {}
