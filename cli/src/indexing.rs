//! A bundle build's indexing steps, run with a progress bar per step (`edgerag build`,
//! `edgerag eval`, and the builds `edgerag-bench` times).

use std::time::Instant;

use anyhow::Result;
use edgerag_core::bundle::{Progress, Stage};
use edgerag_core::{Bundle, BundleBuilder};
use indicatif::ProgressBar;

use crate::output;

/// Runs the build's indexing steps with a progress bar per step.
pub fn finish(builder: BundleBuilder, quiet: bool) -> Result<Bundle> {
    Ok(finish_timed(builder, quiet)?.0)
}

/// [`finish`], also returning each step's name and seconds, in order.
pub fn finish_timed(
    builder: BundleBuilder,
    quiet: bool,
) -> Result<(Bundle, Vec<(&'static str, f64)>)> {
    let mut bar: Option<(Stage, ProgressBar)> = None;
    let mut steps: Vec<(&'static str, Instant)> = Vec::new();
    let bundle = builder.finish(&mut |p: Progress| {
        if bar.as_ref().is_none_or(|(stage, _)| *stage != p.stage) {
            if let Some((_, old)) = bar.take() {
                old.finish_and_clear();
            }
            let name = p.stage.label();
            steps.push((name, Instant::now()));
            bar = Some((p.stage, output::progress(p.total as u64, name, quiet)));
        }
        if let Some((_, b)) = &bar {
            b.set_position(p.done as u64);
        }
    });
    if let Some((_, b)) = bar {
        b.finish_and_clear();
    }
    let end = Instant::now();
    let ends = steps.iter().skip(1).map(|s| s.1).chain(std::iter::once(end));
    let seconds = steps.iter().zip(ends).map(|(s, e)| (s.0, (e - s.1).as_secs_f64())).collect();
    Ok((bundle?, seconds))
}
