//! Portable CPU targets: artifacts built for a named instruction-set level
//! (`x86-64-v2`, `x86-64-v3`, `x86-64-v4`) instead of the build host's
//! own CPU (`-march=native`), so that a bundle made in CI loads on every
//! node whose CPU runs that level.
//!
//! A portable artifact's identity ([`identity`]) names the architecture,
//! the level and the flags, and nothing of the machine that built it: no
//! compiler banner (the shared library's interface is plain C, whatever
//! compiler made it), no CPU model or feature list. A node finds such an
//! artifact by computing the same identity for each level its CPU runs
//! ([`runnable`], best first), which needs no compiler on the node.

use std::sync::OnceLock;

use super::compile::FLAGS;

/// The portable levels kernelkit builds for, best first.
pub(crate) const TARGETS: &[&str] = &["x86-64-v4", "x86-64-v3", "x86-64-v2", "x86-64"];

/// Whether `target` is a portable level kernelkit knows.
pub(crate) fn is_known(target: &str) -> bool {
    TARGETS.contains(&target)
}

/// The flags of a compile for `target` (`native` or a portable level).
pub(crate) fn flags(target: &str) -> Vec<String> {
    FLAGS
        .iter()
        .map(|f| {
            if *f == "-march=native" {
                format!("-march={target}")
            } else {
                f.to_string()
            }
        })
        .collect()
}

/// The artifact identity of a portable `target` (see the module
/// documentation).
pub(crate) fn identity(target: &str) -> String {
    format!(
        "portable cpu artifact\narch: {}\ntarget: {target}\nflags: {}",
        std::env::consts::ARCH,
        flags(target).join(" ")
    )
}

/// The portable levels this machine's CPU runs, best first, each with its
/// identity (found once).
pub(crate) fn runnable() -> &'static [(String, String)] {
    static RUNNABLE: OnceLock<Vec<(String, String)>> = OnceLock::new();
    RUNNABLE.get_or_init(|| {
        TARGETS
            .iter()
            .filter(|t| runs(t))
            .map(|t| (t.to_string(), identity(t)))
            .collect()
    })
}

/// Whether this CPU runs code built for `target`.
#[cfg(target_arch = "x86_64")]
fn runs(target: &str) -> bool {
    use std::arch::is_x86_feature_detected as has;
    let v2 = || {
        has!("sse3")
            && has!("ssse3")
            && has!("sse4.1")
            && has!("sse4.2")
            && has!("popcnt")
            && has!("cmpxchg16b")
    };
    let v3 = || {
        v2() && has!("avx")
            && has!("avx2")
            && has!("bmi1")
            && has!("bmi2")
            && has!("f16c")
            && has!("fma")
            && has!("lzcnt")
            && has!("movbe")
            && has!("xsave")
    };
    let v4 = || {
        v3() && has!("avx512f")
            && has!("avx512bw")
            && has!("avx512cd")
            && has!("avx512dq")
            && has!("avx512vl")
    };
    match target {
        "x86-64" => true,
        "x86-64-v2" => v2(),
        "x86-64-v3" => v3(),
        "x86-64-v4" => v4(),
        _ => false,
    }
}

/// Other architectures have no portable levels yet: native artifacts only.
#[cfg(not(target_arch = "x86_64"))]
fn runs(_target: &str) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_name_the_level_and_nothing_of_the_host() {
        let id = identity("x86-64-v2");
        assert!(id.contains("-march=x86-64-v2") && !id.contains("native"));
        assert_ne!(id, identity("x86-64-v3"));
        assert!(!id.contains("model name") && !id.contains("flags\t"));
        assert_eq!(
            flags("native"),
            FLAGS.iter().map(|f| f.to_string()).collect::<Vec<_>>()
        );
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_x86_64_cpu_runs_the_baseline_and_levels_are_nested() {
        let levels: Vec<&str> = runnable().iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(levels.last(), Some(&"x86-64"));
        // Best first, and a level implies those below it.
        let first = TARGETS.iter().position(|t| *t == levels[0]).unwrap();
        assert_eq!(levels, TARGETS[first..].to_vec());
    }
}
