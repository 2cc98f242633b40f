//! [`SpecError`]: a spec file that cannot be used, in one line naming the
//! field (and the input, output or template argument) at fault.

use super::message::short;

/// A spec file that cannot be used. Each message is one line and names the
/// field (and the input, output or template argument) at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// The file could not be read.
    #[error("cannot read spec {path}: {source}")]
    Read {
        /// The spec's path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("spec is not valid JSON: {0}")]
    Json(serde_json::Error),
    /// The spec cannot be written as JSON (a `.npy` path that is not UTF-8).
    #[error("cannot write the spec as JSON: {0}")]
    Write(serde_json::Error),
    /// A field this format does not have (most likely a typo).
    #[error("spec: unknown field `{field}`{hint}")]
    UnknownField {
        /// Where the field is, e.g. `ensure_row_contigous` or `views.a.tranpose`.
        field: String,
        /// " (did you mean `...`?)" or the list of known fields.
        hint: String,
    },
    /// A required field is absent.
    #[error("spec: missing field `{field}`{why}")]
    Missing {
        /// The field.
        field: &'static str,
        /// Why it is needed, when only one use needs it (e.g. " (required
        /// by `kernelkit run`)"); empty otherwise.
        why: &'static str,
    },
    /// A field has the wrong type or value.
    #[error("spec: `{field}`{}: {reason}", named(.name.as_deref()))]
    Field {
        /// Where, e.g. `inputs[1]`, `grid` or `views.a.slice`.
        field: String,
        /// The name of the input, output or template argument at `field`,
        /// when the entry has one (already cut short for the message).
        name: Option<String>,
        /// What is wrong and what was expected.
        reason: String,
    },
}

impl SpecError {
    /// The field at fault, unquoted: `template[0]`, `views.a.tranpose`,
    /// `grid`; `None` for a file that cannot be read or is not JSON.
    pub fn field(&self) -> Option<&str> {
        match self {
            SpecError::Read { .. } | SpecError::Json(_) | SpecError::Write(_) => None,
            SpecError::UnknownField { field, .. } => Some(field),
            SpecError::Missing { field, .. } => Some(field),
            SpecError::Field { field, .. } => Some(field),
        }
    }
}

/// " (`b`)" after the field of an entry named `b`.
fn named(name: Option<&str>) -> String {
    name.map(|n| format!(" (`{n}`)")).unwrap_or_default()
}

/// A field with the wrong type or value: "`grid`: reason".
pub(crate) fn bad(field: impl std::fmt::Display, reason: impl Into<String>) -> SpecError {
    SpecError::Field {
        field: field.to_string(),
        name: None,
        reason: reason.into(),
    }
}

/// As [`bad`], for an entry that has a name (an input, output or template
/// argument): "`inputs[1]` (`b`)".
pub(crate) fn bad_named(field: &str, name: &str, reason: impl Into<String>) -> SpecError {
    SpecError::Field {
        field: field.to_string(),
        name: Some(short(name)),
        reason: reason.into(),
    }
}

/// `key` is not among `known`; `prefix` locates the object it is in
/// (`""` at the top level, `"views.a."` in a view). The hint names the
/// closest known field, or lists them all.
pub(crate) fn unknown_field(key: &str, known: &[&str], prefix: &str) -> SpecError {
    let hint = match closest(key, known) {
        Some(k) => format!(" (did you mean `{k}`?)"),
        None => format!(" (expected one of: {})", known.join(", ")),
    };
    SpecError::UnknownField {
        field: format!("{prefix}{}", short(key)),
        hint,
    }
}

/// The known name within edit distance 2 of `key`, if any.
fn closest<'k>(key: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        // The distance is at least the difference in length: skip the
        // quadratic count for keys that cannot be close (a huge key).
        .filter(|k| key.len() <= k.len() + 2)
        .map(|k| (edit_distance(key, k), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("grid", "grid"), 0);
        assert_eq!(edit_distance("gird", "grid"), 2);
        assert_eq!(edit_distance("input", "inputs"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn the_field_at_fault_is_named() {
        let e = bad_named("template[0]", "N", "no");
        assert_eq!(e.to_string(), "spec: `template[0]` (`N`): no");
        assert_eq!(e.field(), Some("template[0]"));
        assert_eq!(bad("grid", "no").to_string(), "spec: `grid`: no");
        assert_eq!(bad("grid", "no").field(), Some("grid"));
        let e = unknown_field("tranpose", &["transpose", "slice"], "views.a.");
        assert_eq!(e.field(), Some("views.a.tranpose"));
        assert!(e.to_string().ends_with("(did you mean `transpose`?)"));
    }
}
