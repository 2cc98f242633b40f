//! The Metal dialect against MLX 0.32.4's own output.
//!
//! Every case in `tests/golden/metal/` (and `quirks/`) is a spec in the
//! `kernelkit source SPEC.json` format plus what MLX produced for it (see
//! `tests/golden/metal/RULES.md`, section 0). Each spec is read by the
//! library's spec file reader, called with CPU stand-ins of its inputs
//! (`SpecFile::placeholder_inputs`: their shapes and dtypes, no data) and
//! generated with `Call::generate(Dialect::Metal)`; the name and source must
//! equal MLX's byte for byte, except:
//!
//! * `NAME.mlx_malformed.metal`: MLX's signature is broken (RULES.md
//!   section 7). Ours must be MLX's with every early `) {` that closes a
//!   parameter line turned into `,`, and well formed.
//! * `NAME.mlx_error`: MLX raised. kernelkit must refuse too: in the call
//!   (`float64` inputs and outputs, no outputs) or, for template values that
//!   `TemplateArg` cannot hold (`2.5`, `2147483648`), already in the spec
//!   file reader (`kernelkit::spec_file`, the one `kernelkit source` uses).
//! * `quirks/`: MLX validates no names; kernelkit refuses invalid, duplicate
//!   and reserved names. A quirk kernelkit accepts must match MLX.

use std::fs;
use std::path::{Path, PathBuf};

use kernelkit::spec_file::{SpecError, SpecFile};
use kernelkit::{BuildError, CallError, DType, Device, Dialect, Error, Generated};

/// Builds the kernel of a spec and generates the Metal source of its call
/// through the public inspection API, on CPU stand-ins of its inputs.
fn generate(spec: &SpecFile) -> Result<Generated, Error> {
    let kernel = spec.kernel()?;
    let inputs = spec.placeholder_inputs(&Device::cpu())?;
    let generated = spec.call(&kernel, &inputs).generate(Dialect::Metal);
    generated
}

/// What went wrong, or was skipped, for one case.
enum Outcome {
    Identical,
    MalformedFixed,
    Refused,
    QuirkRejected,
}

fn read(path: &Path) -> Option<String> {
    let bytes = fs::read(path).ok()?;
    Some(String::from_utf8(bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// Where two strings first differ, with some context, for failure messages.
fn first_difference(ours: &str, theirs: &str) -> String {
    let at = ours
        .bytes()
        .zip(theirs.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(theirs.len()));
    let window = |s: &str| {
        let mut from = at.saturating_sub(40).min(s.len());
        while !s.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = (at + 40).min(s.len());
        while !s.is_char_boundary(to) {
            to += 1;
        }
        format!("{:?}", &s[from..to])
    };
    format!(
        "first difference at byte {at} (lengths {} vs {}):\n  ours: {}\n  mlx:  {}",
        ours.len(),
        theirs.len(),
        window(ours),
        window(theirs)
    )
}

/// MLX's malformed source with its signature repaired as RULES.md section 7
/// says: every parameter line ends with `,` except the last, which ends with
/// `) {`. Also returns how many parameter lines MLX closed with `) {`.
fn repair_mlx_signature(mlx: &str, kernel_name: &str) -> (String, usize) {
    let open = format!("[[kernel]] void {kernel_name}(\n");
    let start = mlx.find(&open).expect("MLX source has a signature") + open.len();
    let mut params: Vec<&str> = Vec::new();
    let mut rest = &mlx[start..];
    while let Some(end) = rest.find('\n') {
        let line = &rest[..end];
        if !(line.starts_with("  ") && (line.ends_with("]],") || line.ends_with("]]) {"))) {
            break;
        }
        params.push(line);
        rest = &rest[end + 1..];
    }
    let closed = params.iter().filter(|l| l.ends_with(") {")).count();
    let mut fixed = String::from(&mlx[..start]);
    for (i, line) in params.iter().enumerate() {
        let bare = line
            .strip_suffix(",")
            .or_else(|| line.strip_suffix(") {"))
            .expect("matched above");
        fixed.push_str(bare);
        fixed.push_str(if i + 1 == params.len() {
            ") {\n"
        } else {
            ",\n"
        });
    }
    fixed.push_str(rest);
    (fixed, closed)
}

/// The signature is closed exactly once, its parentheses balance, and the
/// body follows the `) {` line directly.
fn assert_well_formed(g: &Generated, body: &str, case: &str) {
    let open = format!("[[kernel]] void {}(", g.name);
    let start = g.source.find(&open).expect("signature") + open.len() - 1;
    let close = g.source[start..].find(") {\n").expect("a `) {`") + start;
    let mut depth = 0i32;
    for c in g.source[start..=close].chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        assert!(depth >= 0, "{case}: `)` before its `(`");
    }
    assert_eq!(depth, 0, "{case}: unbalanced signature");
    assert!(
        g.source[close + 4..].starts_with(body),
        "{case}: the body must follow the only `) {{`"
    );
    assert_eq!(
        g.source[..close + 4].matches(") {").count(),
        1,
        "{case}: more than one `) {{` before the body"
    );
}

fn check_case(dir: &Path, stem: &str, quirk: bool) -> Result<Outcome, String> {
    let at = |ext: &str| dir.join(format!("{stem}.{ext}"));
    let json = read(&at("json")).ok_or("no JSON")?;
    let metal = read(&at("metal"));
    let malformed = read(&at("mlx_malformed.metal"));
    let mlx_error = read(&at("mlx_error"));
    let kernel_name = read(&at("kernel_name"));

    let spec = match SpecFile::from_json(&json, dir) {
        Ok(spec) => spec,
        Err(e @ SpecError::Field { .. }) if mlx_error.is_some() => {
            // `TemplateArg` cannot hold these values: the reader refuses
            // them, for `kernelkit source` as here.
            return if e.field().is_some_and(|f| f.starts_with("template[")) {
                Ok(Outcome::Refused)
            } else {
                Err(format!("the reader refused it for another reason: {e}"))
            };
        }
        Err(e) => return Err(format!("the reader refused a spec MLX accepted: {e}")),
    };
    let result = generate(&spec);
    if let Some(mlx_error) = mlx_error {
        return match result {
            Err(Error::Call(CallError::UnsupportedDType { dtype, .. }))
                if dtype == DType::F64 && mlx_error.contains("float64") =>
            {
                Ok(Outcome::Refused)
            }
            Err(Error::Build(BuildError::NoOutputs { .. }))
                if mlx_error.contains("at least one output") =>
            {
                Ok(Outcome::Refused)
            }
            Err(e) => Err(format!(
                "MLX said {:?}, kernelkit said something else: {e}",
                mlx_error.trim_end()
            )),
            Ok(_) => Err(format!(
                "MLX raised {:?} but kernelkit generated a source",
                mlx_error.trim_end()
            )),
        };
    }
    let g = match result {
        Ok(g) => g,
        Err(
            Error::Build(BuildError::InvalidName { .. } | BuildError::DuplicateName { .. })
            | Error::Call(CallError::TemplateName { .. }),
        ) if quirk => {
            // kernelkit validates names; MLX does not (RULES.md section 9).
            return Ok(Outcome::QuirkRejected);
        }
        Err(e) => return Err(format!("kernelkit refused a call MLX accepted: {e}")),
    };
    let kernel_name = kernel_name.ok_or("no .kernel_name")?;
    if g.name != kernel_name {
        return Err(format!("kernel name {:?}, MLX has {kernel_name:?}", g.name));
    }
    match (metal, malformed) {
        (Some(mlx), None) => {
            if g.source == mlx {
                Ok(Outcome::Identical)
            } else {
                Err(first_difference(&g.source, &mlx))
            }
        }
        (None, Some(mlx)) => {
            let (repaired, closed) = repair_mlx_signature(&mlx, &kernel_name);
            if closed < 2 {
                return Err(format!(
                    "stored as malformed, but MLX closed the signature {closed} time(s)"
                ));
            }
            if g.source != repaired {
                return Err(format!(
                    "differs from MLX's beyond the repaired signature: {}",
                    first_difference(&g.source, &repaired)
                ));
            }
            assert_well_formed(&g, &spec.source, stem);
            Ok(Outcome::MalformedFixed)
        }
        _ => Err("needs exactly one of .metal and .mlx_malformed.metal".into()),
    }
}

fn stems(dir: &Path) -> Vec<String> {
    let mut stems: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    stems.sort();
    stems
}

#[test]
fn metal_sources_match_mlx_byte_for_byte() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/metal");
    let mut failures: Vec<String> = Vec::new();
    let (mut identical, mut fixed, mut refused, mut rejected) = (0, 0, 0, 0);
    let mut checked = 0;
    for (dir, quirk) in [(root.clone(), false), (root.join("quirks"), true)] {
        let found = stems(&dir);
        assert!(!found.is_empty(), "no golden cases in {}", dir.display());
        for stem in found {
            checked += 1;
            match check_case(&dir, &stem, quirk) {
                Ok(Outcome::Identical) => identical += 1,
                Ok(Outcome::MalformedFixed) => fixed += 1,
                Ok(Outcome::Refused) => refused += 1,
                Ok(Outcome::QuirkRejected) => rejected += 1,
                Err(e) => {
                    failures.push(format!("{}{stem}: {e}", if quirk { "quirks/" } else { "" }))
                }
            }
        }
    }
    println!(
        "golden Metal: {checked} cases checked: {identical} byte-identical, {fixed} malformed in \
         MLX and repaired, {refused} refused like MLX, {rejected} quirks rejected by validation"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The main folder holds 113 cases (RULES.md section 0): no case may be
    // skipped silently.
    assert!(identical + fixed >= 100, "too few cases compared");
}
