//! NVRTC's own compile cache, turned off.
//!
//! NVRTC 12.9 on, with a CUDA driver beside it, keeps what it compiles in
//! the driver's compute cache (`~/.nv/ComputeCache`): every compile hashes
//! its program, looks for it there twice (the PTX, then the cubin), and on
//! a miss writes both. kernelkit never asks NVRTC for the same program
//! twice (its memory, artifact store and fleet tier answer that), so all
//! of it is work without a hit, and it writes entries into a cache the
//! user's own JIT-compiled modules share (pushing theirs out), and which
//! every process of the machine writes to.
//!
//! So every compile is given `--no-cache` where NVRTC knows it. The option
//! changes no artifact, so it is not part of the store's identity.

/// The option that turns NVRTC's cache off.
const NO_CACHE: &str = "--no-cache";

/// Whether NVRTC `version` has the cache and knows [`NO_CACHE`]: an older
/// one refuses the option, which would fail every compile given it.
fn has_cache(version: (i32, i32)) -> bool {
    version >= (12, 9)
}

/// The option to add to a compile's `words` for NVRTC `version`: `None`
/// when NVRTC has no cache or the words already turn it off.
pub(super) fn option(version: (i32, i32), words: &[String]) -> Option<String> {
    let given = words.iter().any(|w| w == NO_CACHE || w == "-no-cache");
    (has_cache(version) && !given).then(|| NO_CACHE.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_from_nvrtc_12_9() {
        let words = vec!["--gpu-architecture=sm_90a".to_string()];
        assert_eq!(option((12, 9), &words).as_deref(), Some("--no-cache"));
        assert_eq!(option((13, 0), &words).as_deref(), Some("--no-cache"));
        // 12.8 and older have no cache and refuse the option.
        assert_eq!(option((12, 8), &words), None);
        assert_eq!(option((11, 8), &words), None);
    }

    #[test]
    fn a_users_own_no_cache_is_not_doubled() {
        for given in ["--no-cache", "-no-cache"] {
            let words = vec!["-lineinfo".to_string(), given.to_string()];
            assert_eq!(option((13, 0), &words), None, "{given}");
        }
    }
}
