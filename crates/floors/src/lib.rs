//! # floors
//!
//! Checks the one rule of a layered crate: **floors only look down**. A
//! crate's modules are assigned to floors, bottom first; a module may name
//! items of its own floor and of the floors below it, never of one above.
//!
//! A grep for `crate::kernel` cannot enforce that: a path can reach a module
//! through `super::super::`, through a `use` alias, through a re-export at
//! the crate root (`crate::Array` is `crate::array::Array`), through a
//! group (`use crate::{dtype, kernel}`), or inside a macro's tokens. This
//! checker parses every file of the crate with `syn`, builds the module
//! tree from `mod` declarations (files, `mod.rs`, `#[path]`, inline
//! modules), records every `use` binding per module, and resolves every
//! path that names something in the crate to the module that *defines* it,
//! following `use` aliases and re-exports (glob ones too) until it reaches
//! a definition. The floor of that module is compared with the floor of the
//! module holding the path.
//!
//! Code under `#[cfg(test)]` is exempt by default, so that a crate can
//! adopt the rule for its library code first;
//! [`Floors::including_tests`] holds unit tests to the floors too (a test
//! that reaches up ties its floor to one above). Doc links are comments,
//! not imports.
//!
//! ```no_run
//! let floors = floors::Floors::new(&[
//!     ("base", &["dtype", "error"]),
//!     ("codegen", &["codegen"]),
//!     ("kernel", &["kernel"]),
//! ]);
//! let report = floors::check(std::path::Path::new("src"), &floors).unwrap();
//! assert!(report.violations.is_empty(), "{report}");
//! ```

#![warn(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// The floors of a crate, bottom first, each a list of module paths
/// relative to the crate root (`"backend"`, `"kernel::spec"`). A module
/// belongs to the floor of its longest listed prefix. The crate root itself
/// is above every floor: it only re-exports.
#[derive(Clone, Debug)]
pub struct Floors {
    floors: Vec<(String, Vec<Vec<String>>)>,
    /// Whether `#[cfg(test)]` code is held to the floors too.
    tests: bool,
}

impl Floors {
    /// Floors from `(name, module paths)`, bottom first.
    pub fn new(floors: &[(&str, &[&str])]) -> Floors {
        Floors {
            floors: floors
                .iter()
                .map(|(name, modules)| {
                    (name.to_string(), modules.iter().map(|m| split(m)).collect())
                })
                .collect(),
            tests: false,
        }
    }

    /// The same floors, with unit tests (`#[cfg(test)]` code) held to them
    /// too. A unit test that reaches up couples the floor it tests to one
    /// above: the floor can no longer be built, moved or reasoned about
    /// alone, which is what the floors are for. (The default exempts tests
    /// so that a crate can adopt the rule for its library code first.)
    pub fn including_tests(mut self) -> Floors {
        self.tests = true;
        self
    }

    /// The floor index and name of `module`, if any listed prefix covers it.
    /// The crate root is `usize::MAX` (above everything).
    fn floor_of(&self, module: &[String]) -> Option<(usize, &str)> {
        if module.is_empty() {
            return Some((usize::MAX, "crate root"));
        }
        let mut best: Option<(usize, usize, &str)> = None;
        for (i, (name, prefixes)) in self.floors.iter().enumerate() {
            for p in prefixes {
                if module.starts_with(p) && best.is_none_or(|(len, _, _)| p.len() > len) {
                    best = Some((p.len(), i, name));
                }
            }
        }
        best.map(|(_, i, name)| (i, name))
    }
}

fn split(path: &str) -> Vec<String> {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A path that looks up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The file holding the path.
    pub file: PathBuf,
    /// Its line.
    pub line: usize,
    /// The path as written.
    pub path: String,
    /// The module holding the path, and its floor.
    pub from: (String, String),
    /// The module that defines what the path names, and its floor.
    pub to: (String, String),
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}` in `{}` (floor {}) names `{}` (floor {}), a floor above",
            self.file.display(),
            self.line,
            self.path,
            self.from.0,
            self.from.1,
            self.to.0,
            self.to.1
        )
    }
}

/// What a check found.
#[derive(Debug, Default)]
pub struct Report {
    /// Paths that name something on a higher floor.
    pub violations: Vec<Violation>,
    /// Modules that no floor covers (each must be placed).
    pub unassigned: Vec<String>,
    /// How many modules were read.
    pub modules: usize,
    /// How many paths into the crate were resolved to a defining module.
    pub resolved: usize,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} modules, {} paths into the crate resolved, {} upward, {} modules on no floor",
            self.modules,
            self.resolved,
            self.violations.len(),
            self.unassigned.len()
        )?;
        for v in &self.violations {
            writeln!(f, "  {v}")?;
        }
        for m in &self.unassigned {
            writeln!(f, "  module `{m}` is on no floor")?;
        }
        Ok(())
    }
}

/// Why a crate could not be read.
#[derive(Debug)]
pub enum Error {
    /// A file could not be read.
    Io(PathBuf, std::io::Error),
    /// A file is not valid Rust.
    Parse(PathBuf, syn::Error),
    /// A `mod name;` whose file was not found.
    MissingModule(PathBuf, String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Error::Parse(p, e) => write!(f, "{}: {e}", p.display()),
            Error::MissingModule(p, m) => {
                write!(f, "{}: no file for `mod {m};`", p.display())
            }
        }
    }
}

impl std::error::Error for Error {}

/// Reads the crate whose root file is `src/lib.rs` under `src` and checks
/// every path against `floors`.
pub fn check(src: &Path, floors: &Floors) -> Result<Report, Error> {
    let tree = Tree::read(&src.join("lib.rs"), floors.tests)?;
    Ok(tree.check(floors))
}

/// One path as written, where it was written.
#[derive(Clone, Debug)]
struct Ref {
    segs: Vec<String>,
    file: PathBuf,
    line: usize,
}

/// What one module holds that resolution needs.
#[derive(Default, Debug)]
struct Module {
    /// Child modules.
    children: BTreeSet<String>,
    /// `use` bindings: name → path as written (resolved from this module).
    bindings: BTreeMap<String, Vec<Vec<String>>>,
    /// `use path::*` targets, as written.
    globs: Vec<Vec<String>>,
    /// Paths into the crate, outside test code.
    refs: Vec<Ref>,
}

/// The crate's modules by path.
struct Tree {
    modules: BTreeMap<Vec<String>, Module>,
    /// Whether test code's paths count.
    tests: bool,
}

impl Tree {
    fn read(root: &Path, tests: bool) -> Result<Tree, Error> {
        let mut tree = Tree {
            modules: BTreeMap::new(),
            tests,
        };
        let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
        tree.read_file(root, Vec::new(), &dir)?;
        Ok(tree)
    }

    /// Reads the file of module `path`; its `mod x;` children are in `dir`.
    fn read_file(&mut self, file: &Path, path: Vec<String>, dir: &Path) -> Result<(), Error> {
        let text = std::fs::read_to_string(file).map_err(|e| Error::Io(file.to_path_buf(), e))?;
        let parsed = syn::parse_file(&text).map_err(|e| Error::Parse(file.to_path_buf(), e))?;
        self.read_items(&parsed.items, path, file, dir, false, false)
    }

    fn read_items(
        &mut self,
        items: &[syn::Item],
        path: Vec<String>,
        file: &Path,
        dir: &Path,
        test_only: bool,
        inline: bool,
    ) -> Result<(), Error> {
        self.modules.entry(path.clone()).or_default();
        for item in items {
            let item_test = !self.tests && (test_only || is_test_only(item_attrs(item)));
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    self.modules
                        .get_mut(&path)
                        .expect("inserted above")
                        .children
                        .insert(name.clone());
                    let mut child = path.clone();
                    child.push(name.clone());
                    // `#[path]` is relative to the file's own directory at
                    // a file's top level, and to the module's inside an
                    // inline module (the Reference, "The path attribute").
                    let base = if inline {
                        dir
                    } else {
                        file.parent().unwrap_or(dir)
                    };
                    let explicit = path_attr(&m.attrs).map(|p| base.join(p));
                    match &m.content {
                        Some((_, inner)) => {
                            let inner_dir = explicit.unwrap_or_else(|| dir.join(&name));
                            self.read_items(inner, child, file, &inner_dir, item_test, true)?;
                        }
                        None => {
                            let (child_file, child_dir) = match explicit {
                                Some(f) => {
                                    let d = f.parent().unwrap_or(dir).join(&name);
                                    (f, d)
                                }
                                None => {
                                    let flat = dir.join(format!("{name}.rs"));
                                    let nested = dir.join(&name).join("mod.rs");
                                    if flat.is_file() {
                                        (flat, dir.join(&name))
                                    } else if nested.is_file() {
                                        (nested, dir.join(&name))
                                    } else {
                                        return Err(Error::MissingModule(file.to_path_buf(), name));
                                    }
                                }
                            };
                            if item_test {
                                // A test-only file: its modules exist, its
                                // paths do not count.
                                self.modules.entry(child.clone()).or_default();
                                let mut sub = Tree {
                                    modules: BTreeMap::new(),
                                    tests: false,
                                };
                                sub.read_file(&child_file, child.clone(), &child_dir)?;
                                for (p, mut m) in sub.modules {
                                    m.refs.clear();
                                    merge(self.modules.entry(p).or_default(), m);
                                }
                            } else {
                                self.read_file(&child_file, child, &child_dir)?;
                            }
                        }
                    }
                }
                other => {
                    let mut collector = Collector {
                        module: self.modules.get_mut(&path).expect("inserted above"),
                        file,
                        test_depth: usize::from(item_test),
                        tests: self.tests,
                    };
                    collector.visit_item(other);
                }
            }
        }
        Ok(())
    }

    /// Resolves `segs`, written in module `at`, to an absolute path, or
    /// `None` when it names nothing in the crate (std, a dependency, a
    /// local variable or generic).
    fn absolute(&self, at: &[String], segs: &[String], depth: usize) -> Option<Vec<String>> {
        let first = segs.first()?;
        if depth > 32 {
            return None;
        }
        match first.as_str() {
            "crate" => Some(segs[1..].to_vec()),
            "self" => Some(join(at, &segs[1..])),
            "super" => {
                let mut base = at.to_vec();
                let mut rest = segs;
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                Some(join(&base, rest))
            }
            _ => {
                let module = self.modules.get(at)?;
                if let Some(targets) = module.bindings.get(first) {
                    // A name may be bound twice under different cfgs; the
                    // first binding that resolves decides.
                    for target in targets {
                        if let Some(abs) = self.absolute(at, target, depth + 1) {
                            return Some(join(&abs, &segs[1..]));
                        }
                    }
                    return None;
                }
                if module.children.contains(first) {
                    return Some(join(at, segs));
                }
                None
            }
        }
    }

    /// The module that defines what `abs` names: follows child modules,
    /// then `use` bindings (re-exports) and globs, until an item is reached.
    fn defining_module(&self, abs: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > 32 {
            return None;
        }
        let mut current: Vec<String> = Vec::new();
        for (i, seg) in abs.iter().enumerate() {
            let module = self.modules.get(&current)?;
            if module.children.contains(seg) {
                current.push(seg.clone());
                continue;
            }
            if let Some(targets) = module.bindings.get(seg) {
                for target in targets {
                    if let Some(t) = self.absolute(&current, target, depth + 1) {
                        let next = join(&t, &abs[i + 1..]);
                        if let Some(m) = self.defining_module(&next, depth + 1) {
                            return Some(m);
                        }
                    }
                }
                return None;
            }
            for glob in &module.globs {
                if let Some(g) = self.absolute(&current, glob, depth + 1) {
                    let next = join(&g, &abs[i..]);
                    if let Some(m) = self.defining_module(&next, depth + 1) {
                        if self.defines(&m, seg) {
                            return Some(m);
                        }
                    }
                }
            }
            // An item of `current` (a type, a function, an enum's variant).
            return Some(current);
        }
        Some(current)
    }

    /// Whether module `m` is a plausible home of `name` through a glob: it
    /// is a child module, or not a known binding elsewhere. (Globs are rare;
    /// this keeps a glob from claiming names its target lacks when the
    /// target is itself a module with that child.)
    fn defines(&self, m: &[String], name: &str) -> bool {
        self.modules
            .get(m)
            .is_some_and(|module| !module.children.contains(name) || m.is_empty())
    }

    fn check(&self, floors: &Floors) -> Report {
        let mut report = Report {
            modules: self.modules.len(),
            ..Report::default()
        };
        for path in self.modules.keys() {
            if floors.floor_of(path).is_none() {
                report.unassigned.push(path.join("::"));
            }
        }
        for (path, module) in &self.modules {
            let Some((from_floor, from_name)) = floors.floor_of(path) else {
                continue;
            };
            for r in &module.refs {
                let Some(abs) = self.absolute(path, &r.segs, 0) else {
                    continue;
                };
                if abs.is_empty() {
                    continue; // The crate root itself, not an item of it.
                }
                let Some(target) = self.defining_module(&abs, 0) else {
                    continue;
                };
                report.resolved += 1;
                let Some((to_floor, to_name)) = floors.floor_of(&target) else {
                    continue;
                };
                if to_floor > from_floor {
                    report.violations.push(Violation {
                        file: r.file.clone(),
                        line: r.line,
                        path: r.segs.join("::"),
                        from: (path.join("::"), from_name.to_string()),
                        to: (target.join("::"), to_name.to_string()),
                    });
                }
            }
        }
        report
    }
}

fn merge(into: &mut Module, from: Module) {
    into.children.extend(from.children);
    for (k, v) in from.bindings {
        into.bindings.entry(k).or_default().extend(v);
    }
    into.globs.extend(from.globs);
    into.refs.extend(from.refs);
}

fn join(base: &[String], rest: &[String]) -> Vec<String> {
    let mut v = base.to_vec();
    v.extend_from_slice(rest);
    v
}

/// Collects the `use` bindings and the paths of the items of one module
/// (nested items and function bodies included; nested modules are read by
/// [`Tree::read_items`]).
struct Collector<'a> {
    module: &'a mut Module,
    file: &'a Path,
    /// Above zero inside `#[cfg(test)]` code.
    test_depth: usize,
    /// Whether test code's paths count (then `test_depth` stays zero).
    tests: bool,
}

impl Collector<'_> {
    fn record(&mut self, segs: Vec<String>, line: usize) {
        if self.test_depth > 0 || segs.is_empty() {
            return;
        }
        self.module.refs.push(Ref {
            segs,
            file: self.file.to_path_buf(),
            line,
        });
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let full = if name == "self" {
                    prefix.clone()
                } else {
                    join(prefix, std::slice::from_ref(&name))
                };
                let bound = if name == "self" {
                    prefix.last().cloned().unwrap_or_default()
                } else {
                    name
                };
                self.bind(bound, full.clone());
                self.record(full, line);
            }
            syn::UseTree::Rename(r) => {
                let name = r.ident.to_string();
                let full = if name == "self" {
                    prefix.clone()
                } else {
                    join(prefix, std::slice::from_ref(&name))
                };
                self.bind(r.rename.to_string(), full.clone());
                self.record(full, line);
            }
            syn::UseTree::Glob(_) => {
                // Test-only globs (`use super::*` in tests) bind nothing the
                // checked code can reach.
                if self.test_depth == 0 {
                    self.module.globs.push(prefix.clone());
                }
                self.record(prefix.clone(), line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }

    fn bind(&mut self, name: String, target: Vec<String>) {
        if name == "_" || self.test_depth > 0 {
            return;
        }
        let entry = self.module.bindings.entry(name).or_default();
        if !entry.contains(&target) {
            entry.push(target);
        }
    }

    /// Paths inside a macro's tokens: `a::b::c` runs of identifiers.
    fn tokens(&mut self, tokens: TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut line = 0;
        let mut colons = 0;
        let flush = |this: &mut Self, run: &mut Vec<String>, line: usize| {
            if run.len() >= 2 || run.first().is_some_and(|s| is_relative_root(s)) {
                this.record(std::mem::take(run), line);
            }
            run.clear();
        };
        for tt in tokens {
            match tt {
                TokenTree::Ident(i) => {
                    if run.is_empty() || colons == 2 {
                        if run.is_empty() {
                            line = i.span().start().line;
                        }
                        run.push(i.to_string());
                    } else {
                        flush(self, &mut run, line);
                        line = i.span().start().line;
                        run.push(i.to_string());
                    }
                    colons = 0;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() => {
                    colons += 1;
                    if colons > 2 {
                        flush(self, &mut run, line);
                        colons = 0;
                    }
                }
                TokenTree::Group(g) => {
                    flush(self, &mut run, line);
                    colons = 0;
                    self.tokens(g.stream());
                }
                _ => {
                    flush(self, &mut run, line);
                    colons = 0;
                }
            }
        }
        flush(self, &mut run, line);
    }
}

fn is_relative_root(s: &str) -> bool {
    matches!(s, "crate" | "self" | "super")
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let test = !self.tests && is_test_only(item_attrs(item));
        self.test_depth += usize::from(test);
        match item {
            // Modules nested in function bodies are not reached by paths
            // from outside; their paths still count.
            syn::Item::Use(u) => {
                let line = u.use_token.span.start().line;
                let mut prefix = Vec::new();
                if u.leading_colon.is_none() {
                    self.use_tree(&mut prefix, &u.tree, line);
                }
            }
            other => syn::visit::visit_item(self, other),
        }
        self.test_depth -= usize::from(test);
    }

    fn visit_impl_item(&mut self, item: &'ast syn::ImplItem) {
        let attrs: &[syn::Attribute] = match item {
            syn::ImplItem::Fn(f) => &f.attrs,
            syn::ImplItem::Const(c) => &c.attrs,
            syn::ImplItem::Type(t) => &t.attrs,
            _ => &[],
        };
        let test = !self.tests && is_test_only(attrs);
        self.test_depth += usize::from(test);
        syn::visit::visit_impl_item(self, item);
        self.test_depth -= usize::from(test);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            if segs.len() >= 2 || segs.first().is_some_and(|s| is_relative_root(s)) {
                let line = path
                    .segments
                    .first()
                    .map(|s| s.ident.span().start().line)
                    .unwrap_or(0);
                self.record(segs, line);
            }
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(crate)`, `pub(super)`, `pub(in path)` restrict who may see
        // an item; they do not use anything.
    }

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {
        // Attributes name derive macros and lints, not crate items; doc
        // comments are attributes too and hold only prose.
    }
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// True for `#[cfg(test)]` and `#[cfg(all(test, ...))]`: code that exists
/// only in the crate's own unit tests.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        if !a.path().is_ident("cfg") {
            return false;
        }
        let Ok(meta) = a.parse_args::<syn::Meta>() else {
            return false;
        };
        requires_test(&meta)
    })
}

fn requires_test(meta: &syn::Meta) -> bool {
    match meta {
        syn::Meta::Path(p) => p.is_ident("test"),
        syn::Meta::List(l) if l.path.is_ident("all") => l
            .parse_args_with(
                syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|items| items.iter().any(requires_test)),
        _ => false,
    }
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| {
        if !a.path().is_ident("path") {
            return None;
        }
        match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        }
    })
}
