//! The `edgerag` command-line tool.

fn main() {}
