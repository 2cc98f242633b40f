//! The bench's table for people: rows of a figure, its value, its
//! baseline, the ratio and the target with a verdict, and the
//! units they are written in.

/// Whether a figure meets its target.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    Met,
    Missed,
    NoTarget,
}

impl Verdict {
    fn of(ok: bool) -> Verdict {
        if ok {
            Verdict::Met
        } else {
            Verdict::Missed
        }
    }
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Missed => "MISSED",
            Verdict::NoTarget => "",
        }
    }
}

/// One line of the table.
pub(super) struct Row {
    figure: String,
    value: String,
    baseline: String,
    baseline_value: String,
    ratio: String,
    target: String,
    verdict: Verdict,
}

impl Row {
    pub(super) fn new(figure: impl Into<String>, value: String) -> Row {
        Row {
            figure: figure.into(),
            value,
            baseline: String::new(),
            baseline_value: String::new(),
            ratio: String::new(),
            target: String::new(),
            verdict: Verdict::NoTarget,
        }
    }
    pub(super) fn baseline(mut self, name: impl Into<String>, value: String, ratio: String) -> Row {
        self.baseline = name.into();
        self.baseline_value = value;
        self.ratio = ratio;
        self
    }
    pub(super) fn target(mut self, target: impl Into<String>, ok: bool) -> Row {
        self.target = target.into();
        self.verdict = Verdict::of(ok);
        self
    }
}

/// A duration given in nanoseconds, in the unit that reads best.
pub(crate) fn ns(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else if v < 1e3 {
        format!("{v:.0} ns")
    } else if v < 1e6 {
        format!("{:.2} µs", v / 1e3)
    } else {
        format!("{:.2} ms", v / 1e6)
    }
}

/// A duration given in milliseconds.
pub(crate) fn ms(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else if v < 1.0 {
        format!("{:.0} µs", v * 1e3)
    } else {
        format!("{v:.1} ms")
    }
}

pub(super) fn per_s(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M/s", v / 1e6)
    } else {
        format!("{:.0} k/s", v / 1e3)
    }
}

pub(super) fn times(v: f64) -> String {
    if v.is_nan() {
        "n/a".into()
    } else if v >= 100.0 {
        format!("{v:.0}×")
    } else {
        format!("{v:.2}×")
    }
}

/// `title`, then the rows under a header, then which targets were missed.
pub(super) fn table(title: String, rows: &[Row]) -> String {
    let head = [
        "figure", "value", "baseline", "baseline", "ratio", "target", "",
    ];
    let cells: Vec<[&str; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.figure.as_str(),
                r.value.as_str(),
                r.baseline.as_str(),
                r.baseline_value.as_str(),
                r.ratio.as_str(),
                r.target.as_str(),
                r.verdict.as_str(),
            ]
        })
        .collect();
    let mut widths = head.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[&str; 7]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w - c.chars().count();
            // Numbers read best right-aligned, names left-aligned.
            if i == 1 || i == 3 || i == 4 {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            } else {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            }
            s.push_str("  ");
        }
        s.trim_end().to_string()
    };
    let mut out = title;
    out.push_str(&line(&head));
    out.push('\n');
    out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * 6));
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row));
        out.push('\n');
    }
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| r.verdict == Verdict::Missed)
        .map(|r| r.figure.as_str())
        .collect();
    if missed.is_empty() {
        out.push_str("every target with a verdict was met\n");
    } else {
        out.push_str(&format!("targets missed: {}\n", missed.join(", ")));
    }
    out
}
