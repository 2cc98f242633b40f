//! The compiler's dependency output: which files a CPU compile read, for
//! the artifact store's dependency list (see `backend::deps`).
//!
//! The compile runs with `-MMD -MF FILE -MT kernel` (GCC and Clang both
//! understand them): as it compiles, the compiler writes a Make rule
//! listing every file it opened that is not a system header. System headers
//! (the C++ standard library's, found in the compiler's own directories)
//! are left out on purpose: they come with the compiler, whose full
//! identity is part of the store key, and hashing them on every load would
//! cost more than the load. `-MMD` rather than `-MD`: the list then holds
//! exactly the files a user can change, such as the headers a kernel's
//! header includes by path.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::backend::deps::{self, Dependencies};

/// The rule's target name (any fixed word: it is skipped when reading).
const TARGET: &str = "kernel";

/// The arguments that make the compiler write its list to `path`.
pub(super) fn args(path: &Path) -> [OsString; 5] {
    [
        "-MMD".into(),
        "-MF".into(),
        path.into(),
        "-MT".into(),
        TARGET.into(),
    ]
}

/// The dependency list of a compile that ran in `dir` and wrote its rule
/// to `path`: the files the rule lists, except those in `dir` (the
/// generated source) and those `ours` says kernelkit itself provides (the
/// precompiled prelude header), each digested now. `Err` (why) when there
/// is no rule or a file cannot be digested (see [`deps::digest_files`]).
pub(super) fn read(
    path: &Path,
    dir: &Path,
    started: SystemTime,
    ours: impl Fn(&Path) -> bool,
) -> Result<Dependencies, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("the compiler wrote no dependency list (-MMD): {e}"))?;
    let dir = deps::normalize(dir);
    let mut files: Vec<PathBuf> = Vec::new();
    for listed in prerequisites(&text) {
        let file = deps::normalize(&dir.join(listed));
        if file.starts_with(&dir) || ours(&file) || files.contains(&file) {
            continue;
        }
        files.push(file);
    }
    Ok(Dependencies {
        files: deps::digest_files(&files, started)?,
        ..Dependencies::default()
    })
}

/// The prerequisites of the Make rule(s) in `text`, unescaped: GCC writes
/// a space in a name as `\ `, `#` as `\#` and `$` as `$$`, and continues a
/// line with a backslash before the newline.
fn prerequisites(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some(' ') | Some('#') => word.push(chars.next().unwrap_or(' ')),
                Some('\n') | Some('\r') => {
                    chars.next();
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    words.push(std::mem::take(&mut word));
                }
                _ => word.push('\\'),
            },
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                word.push('$');
            }
            ' ' | '\t' | '\n' | '\r' => words.push(std::mem::take(&mut word)),
            c => word.push(c),
        }
    }
    words.push(word);
    let mut out = Vec::new();
    let mut in_prerequisites = false;
    for w in words.into_iter().filter(|w| !w.is_empty()) {
        match w.strip_suffix(':') {
            // A target (`kernel:`); another rule would start the same way.
            Some(_) if !in_prerequisites || w == format!("{TARGET}:") => {
                in_prerequisites = true;
            }
            _ if in_prerequisites => out.push(w),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rules_are_unescaped_and_continued() {
        let text = "kernel: /tmp/kk/kernel.cpp /abs/params.h \\\n  /abs/with\\ space.h /abs/h\\#ash.h \\\r\n /abs/dollar$$.h\n";
        assert_eq!(
            prerequisites(text),
            vec![
                "/tmp/kk/kernel.cpp",
                "/abs/params.h",
                "/abs/with space.h",
                "/abs/h#ash.h",
                "/abs/dollar$.h"
            ]
        );
        assert_eq!(prerequisites("kernel:\n"), Vec::<String>::new());
        assert_eq!(prerequisites(""), Vec::<String>::new());
    }

    #[test]
    fn the_source_and_kernelkits_own_files_are_left_out() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("cc");
        std::fs::create_dir(&dir).unwrap();
        let user = tmp.path().join("params.h");
        let pch = tmp.path().join("prelude.hpp");
        for f in [&user, &pch] {
            std::fs::write(f, "x").unwrap();
            std::fs::File::options()
                .write(true)
                .open(f)
                .unwrap()
                .set_modified(SystemTime::now() - Duration::from_secs(60))
                .unwrap();
        }
        let rule = dir.join("kernel.d");
        std::fs::write(
            &rule,
            format!(
                "kernel: kernel.cpp {} ../params.h \\\n {}\n",
                user.display(),
                pch.display()
            ),
        )
        .unwrap();
        let deps = read(&rule, &dir, SystemTime::now(), |p| p == pch).unwrap();
        let files: Vec<&Path> = deps.files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(files, vec![user.as_path()], "listed twice, once relatively");
        assert!(read(&dir.join("none.d"), &dir, SystemTime::now(), |_| false).is_err());
    }
}
