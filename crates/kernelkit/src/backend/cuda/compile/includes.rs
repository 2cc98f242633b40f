//! kernelkit's own `#include` search, so that the artifact store knows
//! every file an NVRTC compile reads.
//!
//! NVRTC has no dependency output: its documented options (through CUDA
//! 13) have no `-M`/`-MD`/`-MF`/`--dependency-output`, and it has no
//! include callback. So before a compile, this module follows the source's
//! `#include` directives itself, recursively, the way NVRTC searches:
//!
//! - `"name"`: the including file's directory (none for the program
//!   itself), then the working directory (NVRTC adds it for quoted
//!   includes), then the `-I` directories in order;
//! - `<name>`: the `-I` directories in order;
//! - an absolute name: itself.
//!
//! Each file found is read once and handed to `nvrtcCreateProgram` in its
//! header arrays, under the name the directive wrote, so NVRTC compiles
//! exactly the bytes that were hashed into the dependency list. Files found
//! in the CUDA toolkit's include directories (system headers) are left to
//! NVRTC, as are names found nowhere (NVRTC's built-in headers, or an error
//! NVRTC reports); the paths tried in front of them are recorded as absent,
//! so a file that appears there later is noticed. An `#include` whose file
//! is named by a macro cannot be followed: such a compile is not stored.
//!
//! Directives are found by lines, whatever `#if` or comment surrounds them,
//! so a file may be followed that the compile skips: that costs a
//! needless check on load, never a stale result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::backend::deps::{self, Dependencies, FileDigest};

/// The most files one program may include (a runaway search is an error).
const MAX_FILES: usize = 4096;
/// The most bytes they may hold together.
const MAX_BYTES: usize = 64 << 20;

/// Where includes are searched.
#[derive(Clone, Debug, Default)]
pub(super) struct SearchPath {
    /// The `-I` directories in order, each marked `true` when it is the
    /// CUDA toolkit's (a system directory: its headers are left to NVRTC).
    dirs: Vec<(PathBuf, bool)>,
    /// `--pre-include` names: NVRTC reads them before the program.
    pre_includes: Vec<String>,
}

impl SearchPath {
    /// Whether the options name files NVRTC reads before the program
    /// (`--pre-include`).
    pub(super) fn pre_includes_any(&self) -> bool {
        !self.pre_includes.is_empty()
    }

    /// The search of a compile with these NVRTC option words; directories
    /// among `system` are the toolkit's.
    pub(super) fn from_options(words: &[String], system: &[PathBuf]) -> SearchPath {
        let mut search = SearchPath::default();
        let mut words = words.iter();
        while let Some(w) = words.next() {
            let value = |prefixes: &[&str], w: &str| {
                prefixes
                    .iter()
                    .find_map(|p| w.strip_prefix(p).map(str::to_string))
            };
            let dir = match w.as_str() {
                "-I" | "--include-path" => words.next().cloned(),
                _ => value(&["--include-path=", "-I"], w),
            };
            if let Some(dir) = dir.filter(|d| !d.is_empty()) {
                let dir = PathBuf::from(dir);
                let is_system = system.contains(&dir);
                search.dirs.push((dir, is_system));
                continue;
            }
            let pre = match w.as_str() {
                "-include" | "--pre-include" => words.next().cloned(),
                _ => value(&["--pre-include="], w),
            };
            if let Some(pre) = pre.filter(|p| !p.is_empty()) {
                search.pre_includes.push(pre);
            }
        }
        search
    }
}

/// What the search found for one program.
#[derive(Debug)]
pub(super) struct Includes {
    /// `(name as the directive wrote it, contents)` of every file found,
    /// for NVRTC's header arrays.
    pub(super) headers: Vec<(String, Vec<u8>)>,
    /// The dependency list, or why the compile cannot be stored.
    pub(super) dependencies: Result<Dependencies, String>,
}

/// One `#include` line.
#[derive(Debug, PartialEq, Eq)]
enum Directive<'a> {
    /// `#include "name"` (quoted) or `#include <name>`.
    File { name: &'a str, quoted: bool },
    /// `#include MACRO`: the file is named by a macro.
    Computed(&'a str),
}

/// The `#include` directives of `text`, in order.
fn directives(text: &str) -> impl Iterator<Item = Directive<'_>> {
    text.lines().filter_map(|line| {
        let rest = line.trim_start().strip_prefix('#')?.trim_start();
        let rest = rest.strip_prefix("include")?;
        // `#include_next`, `#includes`: other directives.
        if rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let rest = rest.trim();
        if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"')?;
            return Some(Directive::File {
                name: &r[..end],
                quoted: true,
            });
        }
        if let Some(r) = rest.strip_prefix('<') {
            let end = r.find('>')?;
            return Some(Directive::File {
                name: &r[..end],
                quoted: false,
            });
        }
        (!rest.is_empty()).then(|| Directive::Computed(line.trim()))
    })
}

/// The search in progress.
struct Search<'a> {
    path: &'a SearchPath,
    /// The working directory; `None` when it cannot be read.
    cwd: Option<&'a Path>,
    cwd_used: bool,
    /// Include name -> the file it was resolved to.
    names: HashMap<String, PathBuf>,
    /// File -> its contents, for every file read.
    contents: HashMap<PathBuf, Vec<u8>>,
    files: Vec<FileDigest>,
    absent: Vec<PathBuf>,
    headers: Vec<(String, Vec<u8>)>,
    /// Files read but not yet searched for directives.
    queue: Vec<PathBuf>,
    bytes: usize,
    untracked: Option<String>,
}

/// Follows the `#include`s of `source` (the program; `cwd` is the working
/// directory NVRTC will search, `None` when it cannot be read). `Err` for
/// what makes the compile impossible to do faithfully: a file that cannot
/// be read or holds a NUL byte, two files under one include name (NVRTC's
/// header arrays hold one per name), more than [`MAX_FILES`] files or
/// [`MAX_BYTES`] bytes.
pub(super) fn resolve(
    source: &str,
    search: &SearchPath,
    cwd: Option<&Path>,
) -> Result<Includes, String> {
    let mut s = Search {
        path: search,
        cwd,
        cwd_used: false,
        names: HashMap::new(),
        contents: HashMap::new(),
        files: Vec::new(),
        absent: Vec::new(),
        headers: Vec::new(),
        queue: Vec::new(),
        bytes: 0,
        untracked: None,
    };
    if cwd.is_none() {
        s.untracked = Some("the working directory cannot be read".into());
    }
    for name in &search.pre_includes {
        s.visit(name, true, None)?;
    }
    s.scan(source, None)?;
    while let Some(file) = s.queue.pop() {
        let text = String::from_utf8_lossy(&s.contents[&file]).into_owned();
        s.scan(&text, file.parent())?;
    }
    let dependencies = match s.untracked {
        Some(why) => Err(why),
        None => Ok(Dependencies {
            include_dirs: search.dirs.iter().map(|(d, _)| d.clone()).collect(),
            cwd: s.cwd_used.then(|| cwd.map(Path::to_path_buf)).flatten(),
            files: s.files,
            absent: s.absent,
        }),
    };
    Ok(Includes {
        headers: s.headers,
        dependencies,
    })
}

impl Search<'_> {
    fn scan(&mut self, text: &str, dir: Option<&Path>) -> Result<(), String> {
        for d in directives(text) {
            match d {
                Directive::File { name, quoted } => self.visit(name, quoted, dir)?,
                Directive::Computed(line) => {
                    self.untracked.get_or_insert_with(|| {
                        format!("`{line}` names its file through a macro, which kernelkit cannot follow")
                    });
                }
            }
        }
        Ok(())
    }

    /// Resolves one include name written in a file of directory `from`.
    fn visit(&mut self, name: &str, quoted: bool, from: Option<&Path>) -> Result<(), String> {
        if name.is_empty() {
            return Ok(());
        }
        // (candidate, searched from the working directory, system).
        let mut candidates: Vec<(PathBuf, bool, bool)> = Vec::new();
        if Path::new(name).is_absolute() {
            candidates.push((PathBuf::from(name), false, false));
        } else {
            if quoted {
                if let Some(dir) = from {
                    candidates.push((dir.join(name), false, false));
                }
                if let Some(cwd) = self.cwd {
                    candidates.push((cwd.join(name), true, false));
                }
            }
            for (dir, system) in &self.path.dirs {
                match (dir.is_absolute(), self.cwd) {
                    (true, _) => candidates.push((dir.join(name), false, *system)),
                    (false, Some(cwd)) => {
                        candidates.push((cwd.join(dir).join(name), true, *system))
                    }
                    (false, None) => {}
                }
            }
        }
        for (candidate, from_cwd, system) in candidates {
            let candidate = deps::normalize(&candidate);
            if !system {
                self.cwd_used |= from_cwd;
            }
            if candidate.is_file() {
                if !system {
                    self.found(name, candidate)?;
                }
                return Ok(());
            }
            if !system && !self.absent.contains(&candidate) {
                self.absent.push(candidate);
            }
        }
        Ok(())
    }

    fn found(&mut self, name: &str, file: PathBuf) -> Result<(), String> {
        match self.names.get(name) {
            Some(known) if *known == file => return Ok(()),
            Some(known) => {
                return Err(format!(
                    "`#include \"{name}\"` names two files, {} and {}; NVRTC takes one file per \
                     include name, so give them distinct names or paths",
                    known.display(),
                    file.display()
                ))
            }
            None => {}
        }
        self.names.insert(name.to_string(), file.clone());
        if !self.contents.contains_key(&file) {
            let bytes =
                std::fs::read(&file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            if bytes.contains(&0) {
                return Err(format!("{} contains a NUL byte", file.display()));
            }
            self.bytes += bytes.len();
            if self.contents.len() >= MAX_FILES || self.bytes > MAX_BYTES {
                return Err(format!(
                    "the included files are over {MAX_FILES} files or {} MiB",
                    MAX_BYTES >> 20
                ));
            }
            self.files.push(deps::digest_contents(&file, &bytes));
            self.contents.insert(file.clone(), bytes);
            self.queue.push(file.clone());
        }
        self.headers
            .push((name.to_string(), self.contents[&file].clone()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file tree under a temporary directory: `(relative path, text)`.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = root.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        root
    }

    fn search(root: &Path, dirs: &[(&str, bool)]) -> SearchPath {
        SearchPath {
            dirs: dirs.iter().map(|(d, s)| (root.join(d), *s)).collect(),
            pre_includes: Vec::new(),
        }
    }

    fn names(inc: &Includes) -> Vec<&str> {
        inc.headers.iter().map(|(n, _)| n.as_str()).collect()
    }

    #[test]
    fn directives_are_found_by_line() {
        let text = "#include \"a.h\"\n  #  include <b/c.h> // note\n#include_next <d.h>\n\
                    // #include \"commented.h\"\n#include CONFIG_H\n#define X 1\n#include\n";
        let got: Vec<Directive<'_>> = directives(text).collect();
        assert_eq!(
            got,
            vec![
                Directive::File {
                    name: "a.h",
                    quoted: true
                },
                Directive::File {
                    name: "b/c.h",
                    quoted: false
                },
                Directive::Computed("#include CONFIG_H"),
            ]
        );
    }

    #[test]
    fn includes_are_followed_recursively_with_their_contents() {
        let root = tree(&[
            (
                "proj/params.h",
                "#include \"sub/more.h\"\n#define VAL 1.0f\n",
            ),
            (
                "proj/sub/more.h",
                "#include <lib.h>\n#include \"../params.h\"\n",
            ),
            ("inc/lib.h", "#pragma once\n#include <cuda_fp16.h>\n"),
            ("toolkit/cuda_fp16.h", "// the toolkit's\n"),
        ]);
        let r = root.path();
        let s = search(r, &[("toolkit", true), ("inc", false)]);
        let params = r.join("proj/params.h");
        let source = format!(
            "#include \"{}\"\n#include <cuda_bf16.h>\n",
            params.display()
        );
        let inc = resolve(&source, &s, Some(r)).unwrap();
        assert_eq!(
            names(&inc),
            vec![
                params.to_str().unwrap(),
                "sub/more.h",
                "lib.h",
                "../params.h"
            ]
        );
        let params_text = std::fs::read(&params).unwrap();
        assert_eq!(inc.headers[0].1, params_text);
        assert_eq!(inc.headers[3].1, params_text, "one file, two names");
        let deps = inc.dependencies.unwrap();
        let mut files: Vec<PathBuf> = deps.files.iter().map(|f| f.path.clone()).collect();
        files.sort();
        assert_eq!(
            files,
            vec![
                r.join("inc/lib.h"),
                r.join("proj/params.h"),
                r.join("proj/sub/more.h")
            ],
            "each file once; the toolkit's header is NVRTC's"
        );
        // `<cuda_bf16.h>` is nowhere: left to NVRTC (a built-in header),
        // with the user directory tried recorded as absent (the toolkit's
        // is not: a system directory).
        assert_eq!(deps.absent, vec![r.join("inc/cuda_bf16.h")]);
        assert_eq!(
            deps.cwd, None,
            "every quoted name was found beside its includer"
        );
        assert_eq!(deps.check(), Ok(()));
        std::fs::write(r.join("proj/sub/more.h"), "// changed\n").unwrap();
        assert!(deps.check().is_err());
    }

    #[test]
    fn one_name_for_two_files_is_refused() {
        let root = tree(&[
            ("a/x.h", "#include \"config.h\"\n"),
            ("a/config.h", "#define C 1\n"),
            ("b/y.h", "#include \"config.h\"\n"),
            ("b/config.h", "#define C 2\n"),
        ]);
        let r = root.path();
        let source = format!(
            "#include \"{}\"\n#include \"{}\"\n",
            r.join("a/x.h").display(),
            r.join("b/y.h").display()
        );
        let err = resolve(&source, &SearchPath::default(), Some(r)).unwrap_err();
        assert!(
            err.contains("config.h") && err.contains("two files"),
            "{err}"
        );
    }

    #[test]
    fn a_macro_include_is_not_stored() {
        let root = tree(&[("h.h", "#define H\n")]);
        let inc = resolve(
            "#include \"h.h\"\n#include KK_HEADER\n",
            &SearchPath::default(),
            Some(root.path()),
        )
        .unwrap();
        assert_eq!(names(&inc), vec!["h.h"]);
        let why = inc.dependencies.unwrap_err();
        assert!(why.contains("KK_HEADER"), "{why}");
    }

    #[test]
    fn the_working_directory_counts_only_when_searched() {
        let root = tree(&[("inc/v.h", "#define V 1\n")]);
        let r = root.path();
        let s = search(r, &[("inc", false)]);
        let angle = resolve("#include <v.h>\n", &s, Some(r)).unwrap();
        assert_eq!(angle.dependencies.unwrap().cwd, None);
        let quoted = resolve("#include \"v.h\"\n", &s, Some(r)).unwrap();
        let deps = quoted.dependencies.unwrap();
        assert_eq!(deps.cwd.as_deref(), Some(r));
        assert_eq!(deps.absent, vec![r.join("v.h")]);
        let none = resolve("int x;\n", &s, None).unwrap();
        assert!(none.dependencies.is_err());
    }

    #[test]
    fn a_file_found_later_in_the_search_is_noticed() {
        let root = tree(&[("b/v.h", "#define V 1\n")]);
        let r = root.path();
        let s = search(r, &[("a", false), ("b", false)]);
        let deps = resolve("#include <v.h>\n", &s, Some(r))
            .unwrap()
            .dependencies
            .unwrap();
        assert_eq!(deps.check(), Ok(()));
        std::fs::create_dir(r.join("a")).unwrap();
        std::fs::write(r.join("a/v.h"), "#define V 2\n").unwrap();
        assert!(
            matches!(deps.check(), Err(crate::backend::deps::Stale::Appeared(p)) if p == r.join("a/v.h"))
        );
    }

    #[test]
    fn options_give_the_search_path() {
        let words: Vec<String> = [
            "--gpu-architecture=sm_90a",
            "-I/usr/local/cuda/include",
            "-I",
            "/opt/a",
            "--include-path=rel",
            "--include-path",
            "/opt/b",
            "--pre-include=pre.h",
            "-include",
            "pre2.h",
            "-DX=1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let s = SearchPath::from_options(&words, &[PathBuf::from("/usr/local/cuda/include")]);
        assert_eq!(
            s.dirs,
            vec![
                (PathBuf::from("/usr/local/cuda/include"), true),
                (PathBuf::from("/opt/a"), false),
                (PathBuf::from("rel"), false),
                (PathBuf::from("/opt/b"), false),
            ]
        );
        assert_eq!(s.pre_includes, vec!["pre.h", "pre2.h"]);
        assert!(s.pre_includes_any());
        assert!(!SearchPath::from_options(&[], &[]).pre_includes_any());
    }
}
