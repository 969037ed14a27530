//! Request assembly for strata: branch, project, flatten a session chain, then render cache-stable chapters.
