//! Timing: batches calibrated to a target duration, figure and baseline
//! sampled in alternation, medians.
//!
//! On a machine shared with other work, the speed of the machine drifts
//! during a run. Sampling a figure and its baseline in alternation (one batch
//! of each, again and again) exposes both to the same drift, so their ratio
//! holds even when the absolute numbers move; the median drops the batches a
//! context switch or a neighbour's compile landed in.

use std::time::{Duration, Instant};

use super::BenchError;

/// How long and how often to sample.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    /// Samples (batches) per figure; the median of these is reported.
    pub(crate) samples: usize,
    /// The time one batch should take; sets the iterations per batch.
    pub(crate) batch: Duration,
}

/// One operation to time; returns an error that aborts the benchmark.
pub(crate) type Op<'a> = dyn FnMut() -> Result<(), BenchError> + 'a;

/// The median of `values` (the mean of the middle two for an even count);
/// `NaN` for none.
pub(crate) fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// Runs `op` `iters` times; the wall time per iteration in nanoseconds.
fn batch(op: &mut Op<'_>, iters: u64) -> Result<f64, BenchError> {
    let started = Instant::now();
    for _ in 0..iters {
        op()?;
    }
    Ok(started.elapsed().as_nanos() as f64 / iters as f64)
}

/// How many iterations of `op` fill `target` (at least one). Runs `op` a
/// few times to warm it up, doubling the count until one batch is long
/// enough to time reliably.
fn calibrate(op: &mut Op<'_>, target: Duration) -> Result<u64, BenchError> {
    let mut iters = 1u64;
    loop {
        let started = Instant::now();
        for _ in 0..iters {
            op()?;
        }
        let took = started.elapsed();
        if took >= target / 4 || iters >= 1 << 30 {
            let per = took.as_secs_f64() / iters as f64;
            return Ok(((target.as_secs_f64() / per.max(1e-12)) as u64).max(1));
        }
        iters *= 2;
    }
}

/// Medians, in nanoseconds per operation, of `figure` and `baseline`,
/// sampled in alternation (see the module documentation).
pub(crate) fn paired(
    plan: Plan,
    figure: &mut Op<'_>,
    baseline: &mut Op<'_>,
) -> Result<(f64, f64), BenchError> {
    let n_figure = calibrate(figure, plan.batch)?;
    let n_baseline = calibrate(baseline, plan.batch)?;
    let mut a = Vec::with_capacity(plan.samples);
    let mut b = Vec::with_capacity(plan.samples);
    for _ in 0..plan.samples {
        a.push(batch(figure, n_figure)?);
        b.push(batch(baseline, n_baseline)?);
    }
    Ok((median(&a), median(&b)))
}

/// [`paired`] for a small difference between two nearly equal figures:
/// each sample is a batch of each, back to back, in an order that
/// alternates, with `settle` run untimed before every batch (a device's
/// queue drained, so that no batch waits for the one before it). Returns
/// the medians of `figure` and `baseline` and the median of the samples'
/// differences (`figure` minus `baseline`), which cancels the drift that a
/// difference of two medians keeps. A batch is at most `max_iters`
/// operations (a GPU's launch queue holds about a thousand).
pub(crate) fn paired_diff(
    plan: Plan,
    max_iters: u64,
    figure: &mut Op<'_>,
    baseline: &mut Op<'_>,
    settle: &mut Op<'_>,
) -> Result<(f64, f64, f64), BenchError> {
    let n = calibrate(figure, plan.batch)?
        .min(calibrate(baseline, plan.batch)?)
        .clamp(1, max_iters.max(1));
    let mut a = Vec::with_capacity(plan.samples);
    let mut b = Vec::with_capacity(plan.samples);
    let mut d = Vec::with_capacity(plan.samples);
    for sample in 0..plan.samples {
        let (x, y) = if sample % 2 == 0 {
            settle()?;
            let x = batch(figure, n)?;
            settle()?;
            (x, batch(baseline, n)?)
        } else {
            settle()?;
            let y = batch(baseline, n)?;
            settle()?;
            (batch(figure, n)?, y)
        };
        a.push(x);
        b.push(y);
        d.push(x - y);
    }
    Ok((median(&a), median(&b), median(&d)))
}

/// The median, in nanoseconds per operation, of `op` alone (a figure with
/// no baseline of its own).
pub(crate) fn single(plan: Plan, op: &mut Op<'_>) -> Result<f64, BenchError> {
    let n = calibrate(op, plan.batch)?;
    let mut v = Vec::with_capacity(plan.samples);
    for _ in 0..plan.samples {
        v.push(batch(op, n)?);
    }
    Ok(median(&v))
}

/// The median of `samples` results of `sample`, each a measurement of its
/// own (a wall time, a ratio).
pub(crate) fn repeated(
    samples: usize,
    mut sample: impl FnMut() -> Result<f64, BenchError>,
) -> Result<f64, BenchError> {
    let mut values = Vec::with_capacity(samples);
    for _ in 0..samples.max(1) {
        values.push(sample()?);
    }
    Ok(median(&values))
}

/// The wall time of work spread over threads, each reporting its own
/// (start, end) or an error: from the first start to the last finish.
pub(crate) fn wall_of(
    spans: Vec<Result<(Instant, Instant), BenchError>>,
) -> Result<Duration, BenchError> {
    let mut first: Option<Instant> = None;
    let mut last: Option<Instant> = None;
    for span in spans {
        let (start, end) = span?;
        first = Some(first.map_or(start, |f| f.min(start)));
        last = Some(last.map_or(end, |l| l.max(end)));
    }
    Ok(match (first, last) {
        (Some(f), Some(l)) => l.duration_since(f),
        _ => Duration::ZERO,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }

    #[test]
    fn calibration_fills_the_target() {
        let mut spins = 0u64;
        let mut op = || {
            spins += 1;
            std::thread::sleep(Duration::from_micros(200));
            Ok(())
        };
        let n = calibrate(&mut op, Duration::from_millis(4)).unwrap();
        // Sleeps of a twentieth of the budget: at most 20 iterations, and at least one.
        assert!((1..=20).contains(&n), "{n}");
        assert!(spins > 0);
    }
}
