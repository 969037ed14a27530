//! The terminal UI driven through a real terminal (tmux), against strata-mock (being built).
