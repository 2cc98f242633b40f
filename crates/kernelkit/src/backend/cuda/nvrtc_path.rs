//! Which NVRTC library file is loaded, and what to say when there is none.
//!
//! NVRTC is searched in this order, the first found wins:
//! 1. [`CudaConfig::nvrtc_path`] (`KERNELKIT_NVRTC_PATH`): a file that
//!    does not load is an error, not a reason to look further;
//! 2. NVIDIA's PyPI wheels in [`CudaConfig::python_site_dirs`]: CUDA 13's
//!    `nvidia-cuda-nvrtc` (`nvidia/cu13/lib/libnvrtc.so.13`), then CUDA
//!    12's `nvidia-cuda-nvrtc-cu12` (`nvidia/cuda_nvrtc/lib/libnvrtc.so.12`),
//!    site directory by site directory;
//! 3. the toolkits of [`CudaConfig::toolkit_dirs`] (`CUDA_HOME`,
//!    `CUDA_PATH`, `/usr/local/cuda`), `lib64` then `lib`;
//! 4. the dynamic loader's own search (`LD_LIBRARY_PATH`, the system's
//!    library directories), by the names cudarc tries.
//!
//! A file of steps 1–3 is loaded first (its builtins library beside it
//! before it) and kept loaded; cudarc, asking the loader by name later,
//! gets the loaded one through its soname. This module only decides the
//! file; `probe` loads it and checks that cudarc ended up with it.
//!
//! [`CudaConfig::nvrtc_path`]: crate::config::CudaConfig::nvrtc_path
//! [`CudaConfig::python_site_dirs`]: crate::config::CudaConfig::python_site_dirs
//! [`CudaConfig::toolkit_dirs`]: crate::config::CudaConfig::toolkit_dirs

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::config::CudaConfig;

/// NVRTC in NVIDIA's wheels, relative to a site directory, CUDA 13 first.
pub(super) const WHEEL_LIBRARIES: [&str; 2] = [
    "nvidia/cu13/lib/libnvrtc.so.13",
    "nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
];

/// Where a chosen file came from (what an error about it names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    /// `KERNELKIT_NVRTC_PATH`.
    Setting,
    /// An NVIDIA wheel in a Python site directory.
    Wheel,
    /// A CUDA toolkit's library directory.
    Toolkit,
}

/// A file to load before cudarc asks the loader by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Chosen {
    pub(super) path: PathBuf,
    pub(super) source: Source,
}

impl Chosen {
    /// What the file is, for messages: the setting's name or the place.
    pub(super) fn describe(&self) -> String {
        match self.source {
            Source::Setting => format!("KERNELKIT_NVRTC_PATH={}", self.path.display()),
            Source::Wheel => format!("NVIDIA's NVRTC wheel ({})", self.path.display()),
            Source::Toolkit => format!("the CUDA toolkit's {}", self.path.display()),
        }
    }
}

/// The file of steps 1–3, or `None`: leave it to the loader's search.
pub(super) fn choose(config: &CudaConfig) -> Option<Chosen> {
    if let Some(path) = &config.nvrtc_path {
        return Some(Chosen {
            path: path.clone(),
            source: Source::Setting,
        });
    }
    let wheel = config.python_site_dirs.iter().find_map(|site| {
        WHEEL_LIBRARIES
            .iter()
            .map(|rel| site.join(rel))
            .find(|p| p.is_file())
    });
    if let Some(path) = wheel {
        return Some(Chosen {
            path,
            source: Source::Wheel,
        });
    }
    config
        .toolkit_dirs
        .iter()
        .find_map(|home| toolkit_library(home))
        .map(|path| Chosen {
            path,
            source: Source::Toolkit,
        })
}

/// NVRTC in a toolkit: `lib64` then `lib`, the shortest `libnvrtc.so*`
/// name (the unversioned link where the toolkit has one).
fn toolkit_library(home: &Path) -> Option<PathBuf> {
    ["lib64", "lib"].iter().find_map(|sub| {
        let entries = std::fs::read_dir(home.join(sub)).ok()?;
        entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libnvrtc.so") && !n.contains(".alt."))
            })
            .min_by_key(|p| p.as_os_str().len())
    })
}

/// The `libnvrtc-builtins` files beside `library` (NVRTC opens them by
/// name when it compiles, so they are loaded before it).
pub(super) fn builtins_beside(library: &Path) -> Vec<PathBuf> {
    let Some(dir) = library.parent() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc-builtins") && n.contains(".so"))
        })
        .collect();
    out.sort_by_key(|p| p.as_os_str().len());
    out
}

/// What a process without NVRTC is told: where kernelkit looked and the
/// three ways to get it.
pub(super) fn not_found(config: &CudaConfig) -> String {
    let mut looked = String::new();
    for site in &config.python_site_dirs {
        for rel in WHEEL_LIBRARIES {
            let _ = write!(looked, "{}, ", site.join(rel).display());
        }
    }
    for home in &config.toolkit_dirs {
        let _ = write!(looked, "{}/lib64, {}/lib, ", home.display(), home.display());
    }
    looked.push_str("the loader's path (LD_LIBRARY_PATH, system libraries)");
    format!(
        "NVRTC, the CUDA compiler library (libnvrtc.so.13 or libnvrtc.so.12), was not found \
         (looked in: {looked}). Get it with `pip install nvidia-cuda-nvrtc` (CUDA 13, NVIDIA \
         driver 580 or newer) or `pip install 'nvidia-cuda-nvrtc-cu12>=12.8'` (CUDA 12, driver \
         525 or newer) in this Python environment (PyTorch's CUDA wheels install one), or install a \
         CUDA toolkit and set CUDA_HOME, or set KERNELKIT_NVRTC_PATH to a libnvrtc.so.* file"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> CudaConfig {
        CudaConfig {
            toolkit_dirs: Vec::new(),
            ..CudaConfig::default()
        }
    }

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }

    /// The setting first, whatever else is there; then the first site
    /// directory with a wheel (CUDA 13's before CUDA 12's); then a toolkit.
    #[test]
    fn the_search_order() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, cuda) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("cuda"),
        );
        touch(&b.join(WHEEL_LIBRARIES[1]));
        touch(&cuda.join("lib64/libnvrtc.so.12"));
        touch(&cuda.join("lib64/libnvrtc.so.12.8.93"));
        touch(&cuda.join("lib64/libnvrtc-builtins.so.12.8"));
        let mut c = config();
        assert_eq!(choose(&c), None);

        c.toolkit_dirs = vec![dir.path().join("none"), cuda.clone()];
        let got = choose(&c).unwrap();
        assert_eq!(got.source, Source::Toolkit);
        assert_eq!(got.path, cuda.join("lib64/libnvrtc.so.12"));
        assert_eq!(
            builtins_beside(&got.path),
            vec![cuda.join("lib64/libnvrtc-builtins.so.12.8")]
        );

        c.python_site_dirs = vec![a.clone(), b.clone()];
        let got = choose(&c).unwrap();
        assert_eq!(
            (got.source, got.path),
            (Source::Wheel, b.join(WHEEL_LIBRARIES[1]))
        );
        touch(&b.join(WHEEL_LIBRARIES[0]));
        assert_eq!(choose(&c).unwrap().path, b.join(WHEEL_LIBRARIES[0]));

        c.nvrtc_path = Some(PathBuf::from("/nonexistent/libnvrtc.so.12"));
        let got = choose(&c).unwrap();
        assert_eq!(got.source, Source::Setting);
        assert_eq!(
            got.describe(),
            "KERNELKIT_NVRTC_PATH=/nonexistent/libnvrtc.so.12"
        );
    }

    /// The message names every place looked in and every way to get NVRTC.
    #[test]
    fn the_missing_library_message_says_how_to_get_it() {
        let mut c = config();
        c.python_site_dirs = vec![PathBuf::from("/venv/site")];
        c.toolkit_dirs = vec![PathBuf::from("/usr/local/cuda")];
        let m = not_found(&c);
        for part in [
            "/venv/site/nvidia/cu13/lib/libnvrtc.so.13",
            "/venv/site/nvidia/cuda_nvrtc/lib/libnvrtc.so.12",
            "/usr/local/cuda/lib64",
            "pip install nvidia-cuda-nvrtc`",
            "pip install 'nvidia-cuda-nvrtc-cu12>=12.8'",
            "PyTorch",
            "CUDA_HOME",
            "KERNELKIT_NVRTC_PATH",
        ] {
            assert!(m.contains(part), "{part} missing from {m}");
        }
    }
}
