//! "Compiles" a source by keeping its bytes as the artifact. The one thing
//! it checks: an `#error` line outside any conditional block rejects the
//! source, with a log in a compiler's form whose lines are mapped into the
//! body as the real backends map theirs.

use crate::backend::deps::Dependencies;
use crate::backend::{CompileJob, Compiled};
use crate::codegen::{self, map_log_lines, Dialect};
use crate::error::CompileError;

/// The file name the log's lines refer to.
const FILE: &str = "kernel.null:";

pub(super) fn compile(dialect: Dialect, job: &CompileJob<'_>) -> Result<Compiled, CompileError> {
    if let Some(log) = errors(job.source) {
        return Err(CompileError::Rejected {
            kernel: job.kernel.to_string(),
            function: job.function.to_string(),
            compiler: "null (keeps the source; rejects #error)".to_string(),
            log: map_log_lines(&log, job.source, body_of(dialect, job.source), FILE),
            generated: job.shared_source.clone(),
        });
    }
    Ok(Compiled {
        artifact: job.source.as_bytes().to_vec(),
        // Nothing besides the source was read: the artifact can be stored,
        // and stays good for as long as its key names it.
        dependencies: Ok(Dependencies::default()),
    })
}

/// The log of the `#error` lines at conditional depth 0, if there are any.
/// Lines inside `#if`/`#ifdef`/`#ifndef` blocks are not evaluated (that
/// would take a preprocessor), so they never reject.
fn errors(source: &str) -> Option<String> {
    let mut depth = 0usize;
    let mut log = String::new();
    for (n, line) in source.lines().enumerate() {
        let Some(directive) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let directive = directive.trim_start();
        let word = directive
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .next()
            .unwrap_or("");
        match word {
            "if" | "ifdef" | "ifndef" => depth += 1,
            "endif" => depth = depth.saturating_sub(1),
            "error" if depth == 0 => {
                log.push_str(&format!("{FILE}{}: error: #{directive}\n", n + 1));
            }
            _ => {}
        }
    }
    (!log.is_empty()).then_some(log)
}

/// The user's body inside a generated source, for the log's line numbers
/// (empty where the dialect's sources carry no markers: Metal's).
fn body_of(dialect: Dialect, source: &str) -> &str {
    match dialect {
        Dialect::Cpu => codegen::cpu::body_of(source),
        Dialect::Cuda => codegen::cuda::body_of(source),
        Dialect::Metal => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unconditional_error_lines_reject() {
        assert_eq!(errors("int x;\n"), None);
        assert_eq!(
            errors("a\n  #  error nope\n").as_deref(),
            Some("kernel.null:2: error: #error nope\n")
        );
        let guarded =
            "#ifndef X\n#error inside\n#endif\n#if 0\n#  if 1\n#error deep\n#endif\n#endif\n";
        assert_eq!(errors(guarded), None);
        assert_eq!(
            errors("#ifdef Y\n#endif\n#error after\n").as_deref(),
            Some("kernel.null:3: error: #error after\n")
        );
        // A word that starts like a directive is not one.
        assert_eq!(
            errors("#errors\n#iffy\n#error x\n").map(|l| l.lines().count()),
            Some(1)
        );
    }
}
