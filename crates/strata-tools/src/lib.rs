//! Built-in coding tools for strata: read, bash, edit, write, grep, find, ls.
