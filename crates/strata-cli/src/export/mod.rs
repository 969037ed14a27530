//! A session tree as one self-contained HTML file (`strata export`, `/export`).
