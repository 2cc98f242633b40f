//! `kernelkit cache stats|list|verify|clear`: inspects and maintains the
//! artifact store that devices share between processes (with `--remote`,
//! the fleet tier on Redis instead: `cache_remote`);
//! `kernelkit cache keygen|export|import`: signed bundles of compiled
//! kernels (see `kernelkit::cache::bundle`).
//!
//! Exit status: 0 when all went well, 1 when `verify` found bad entries or
//! a bundle was refused, 2 when the store cannot be read (not trusted, I/O
//! error) or a key cannot be used.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use std::path::Path;

use kernelkit::cache::bundle::{self, ExportFilter, SecretKey, Skipped, TrustedKeys};
use kernelkit::cache::store::{ArtifactStore, StoreError};
use kernelkit::{Config, Device};

use crate::cache_remote::RemoteAction;

/// Arguments of `kernelkit cache`.
#[derive(clap::Args)]
pub struct Args {
    /// The store directory (default: $KERNELKIT_CACHE_DIR, else
    /// $XDG_CACHE_HOME/kernelkit or ~/.cache/kernelkit).
    #[arg(long, global = true)]
    dir: Option<PathBuf>,
    /// Act on the fleet tier (the Redis of $KERNELKIT_REMOTE_CACHE; `verify`
    /// checks signatures with $KERNELKIT_REMOTE_KEY_FILE) instead of the
    /// disk store.
    #[arg(long, global = true)]
    remote: bool,
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Size, entry count and lifetime hits, misses, writes and errors.
    Stats {
        /// Count the entries from the files (and keep the count as the
        /// store's running total) instead of reading the running total.
        #[arg(long)]
        recount: bool,
    },
    /// Every entry: last use, size, backend, key, kernel, function.
    List,
    /// Checks every entry's checksum, key and ownership; exits 1 if any is bad.
    Verify,
    /// Removes every entry (and the store's lock and temporary files).
    Clear,
    /// Makes an Ed25519 key pair for signing bundles: FILE (private, mode
    /// 0600: keep it on the build machine) and FILE.pub (for the nodes'
    /// KERNELKIT_TRUSTED_KEYS file).
    Keygen {
        /// The private key file to create (never replaced).
        #[arg(long)]
        out: PathBuf,
        /// A comment for the public key's line (e.g. the build machine).
        #[arg(long, default_value = "")]
        comment: String,
    },
    /// Writes the store's entries (selected by the filters) into one signed
    /// bundle file.
    Export {
        /// The bundle file to write.
        #[arg(long)]
        out: PathBuf,
        /// The private key to sign with (made by `kernelkit cache keygen`).
        #[arg(long)]
        signing_key: PathBuf,
        /// Only entries of this kernel (repeatable).
        #[arg(long = "kernel")]
        kernels: Vec<String>,
        /// Only entries of this backend: cpu, cuda (repeatable).
        #[arg(long = "backend")]
        backends: Vec<String>,
    },
    /// Lists a bundle's entries (kernel, function, backend, target, kind:
    /// code, PTX or tuning record) and its producer, without importing
    /// anything; with --trusted-keys, also checks its signature.
    Inspect {
        /// The bundle file.
        file: PathBuf,
        /// Check the signature against these public keys.
        #[arg(long)]
        trusted_keys: Option<PathBuf>,
    },
    /// Verifies a signed bundle and adds its entries for this machine's
    /// compilers to the store.
    Import {
        /// The bundle file.
        file: PathBuf,
        /// The trusted public keys (default: $KERNELKIT_TRUSTED_KEYS).
        #[arg(long)]
        trusted_keys: Option<PathBuf>,
        /// Only verify the bundle and say what an import would do.
        #[arg(long)]
        dry_run: bool,
    },
}

/// Runs `kernelkit cache`.
pub fn main(args: Args) -> ExitCode {
    let config = Config::from_env().cache;
    if args.remote {
        let action = match args.action {
            Action::Stats { .. } => RemoteAction::Stats,
            Action::List => RemoteAction::List,
            Action::Verify => RemoteAction::Verify,
            Action::Clear => RemoteAction::Clear,
            Action::Keygen { .. }
            | Action::Export { .. }
            | Action::Import { .. }
            | Action::Inspect { .. } => {
                eprintln!(
                    "kernelkit cache: keygen, export and import work on bundles and the disk store, not on the fleet tier; drop --remote"
                );
                return ExitCode::from(2);
            }
        };
        return crate::cache_remote::main(&config.remote, action);
    }
    let Some(dir) = args.dir.or(config.dir) else {
        eprintln!("kernelkit cache: no home directory; pass --dir or set KERNELKIT_CACHE_DIR");
        return ExitCode::from(2);
    };
    if let Action::Inspect { file, trusted_keys } = &args.action {
        return inspect(file, trusted_keys.as_deref(), config.bundle_max_bytes);
    }
    let action = match args.action {
        Action::Keygen { out, comment } => return keygen(&out, &comment),
        Action::Import {
            file,
            trusted_keys,
            dry_run,
        } => {
            let keys = trusted_keys.or(config.trusted_keys.clone());
            return import(
                &dir,
                config.max_bytes,
                config.bundle_max_bytes,
                &file,
                keys.as_deref(),
                dry_run,
            );
        }
        other => other,
    };
    let store = match ArtifactStore::open(&dir) {
        Ok(s) => s.with_max_bytes(config.max_bytes),
        Err(StoreError::Missing { dir }) => {
            println!("store: {} (does not exist: nothing cached)", dir.display());
            return ExitCode::SUCCESS;
        }
        Err(e) => return fail(e),
    };
    let result = match action {
        Action::Stats { recount } => stats(&store, recount),
        Action::List => list(&store),
        Action::Verify => verify(&store),
        Action::Clear => clear(&store),
        Action::Export {
            out,
            signing_key,
            kernels,
            backends,
        } => {
            let filter = ExportFilter {
                kernels,
                backends,
                kinds: Vec::new(),
            };
            return export(&store, &filter, config.home.as_deref(), &signing_key, &out);
        }
        Action::Keygen { .. } | Action::Import { .. } | Action::Inspect { .. } => {
            unreachable!("handled above")
        }
    };
    result.unwrap_or_else(fail)
}

fn fail(e: StoreError) -> ExitCode {
    eprintln!("kernelkit cache: {e}");
    ExitCode::from(2)
}

fn stats(store: &ArtifactStore, recount: bool) -> Result<ExitCode, StoreError> {
    let s = if recount {
        store.recount()?
    } else {
        store.stats()?
    };
    println!("store: {}", s.dir.display());
    println!(
        "entries: {} ({} of {} limit)",
        s.entries,
        human_bytes(s.bytes),
        human_bytes(s.max_bytes)
    );
    println!(
        "{}",
        match (recount, s.counted) {
            (true, _) => "counted from the files (now the running total)",
            (false, true) => "counted from the files (the store has no usable running total)",
            (false, false) => "from the running total (--recount counts the files)",
        }
    );
    let t = s.lifetime;
    println!(
        "since last clear: hits={} misses={} writes={} errors={}",
        t.hits, t.misses, t.writes, t.errors
    );
    Ok(ExitCode::SUCCESS)
}

fn list(store: &ArtifactStore) -> Result<ExitCode, StoreError> {
    let entries = store.list()?;
    println!(
        "{:<19}  {:>10}  {:<7}  {:<32}  {:<24}  FUNCTION",
        "LAST USE (UTC)", "SIZE", "BACKEND", "KEY", "KERNEL"
    );
    for e in &entries {
        let (backend, kernel, function) = match &e.header {
            Ok(h) => (h.backend.as_str(), h.kernel.as_str(), h.function.clone()),
            Err(fault) => ("?", "?", format!("(bad header: {fault})")),
        };
        println!(
            "{:<19}  {:>10}  {:<7}  {}  {:<24}  {}",
            utc(e.last_use),
            human_bytes(e.bytes),
            backend,
            e.key,
            kernel,
            function
        );
    }
    println!("{} entries", entries.len());
    Ok(ExitCode::SUCCESS)
}

fn verify(store: &ArtifactStore) -> Result<ExitCode, StoreError> {
    let report = store.verify()?;
    for bad in &report.bad {
        println!("bad: {} ({}): {}", bad.key, bad.path.display(), bad.fault);
    }
    print!("{} good, {} bad", report.good, report.bad.len());
    if report.other_format > 0 {
        print!(
            ", {} of another format version (not used by this kernelkit; they age out)",
            report.other_format
        );
    }
    println!();
    Ok(if report.bad.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn clear(store: &ArtifactStore) -> Result<ExitCode, StoreError> {
    let r = store.clear()?;
    println!(
        "removed {} entries ({}) from {}",
        r.entries,
        human_bytes(r.bytes),
        store.dir().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `512 B`, `73.2 KiB`, `1.0 GiB`.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// `YYYY-MM-DD hh:mm:ss` in UTC (days to civil date after Howard Hinnant's
/// published algorithm).
fn utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn keygen(out: &Path, comment: &str) -> ExitCode {
    let public = public_path(out);
    let made = SecretKey::generate().and_then(|key| {
        key.write(out, &public, comment)?;
        Ok(key.public())
    });
    match made {
        Ok(key) => {
            println!(
                "private key: {} (keep it on the build machine)",
                out.display()
            );
            println!(
                "public key:  {} (add its line to the nodes' KERNELKIT_TRUSTED_KEYS file)",
                public.display()
            );
            println!("{}", key.to_line());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("kernelkit cache keygen: {e}");
            ExitCode::from(2)
        }
    }
}

/// `FILE.pub` beside `FILE`.
fn public_path(secret: &Path) -> PathBuf {
    let mut name = secret.as_os_str().to_owned();
    name.push(".pub");
    PathBuf::from(name)
}

fn export(
    store: &ArtifactStore,
    filter: &ExportFilter,
    home: Option<&Path>,
    signing_key: &Path,
    out: &Path,
) -> ExitCode {
    let key = match SecretKey::read(signing_key) {
        Ok(k) => k,
        Err(e) => {
            eprintln!("kernelkit cache export: {e}");
            return ExitCode::from(2);
        }
    };
    let report = match bundle::export(store, filter, home, &key)
        .and_then(|r| bundle::write(out, &r.bundle).map(|_| r))
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("kernelkit cache export: {e}");
            return ExitCode::from(2);
        }
    };
    print_skipped("not exported (local to this machine)", &report.local);
    print_skipped("not exported (unusable)", &report.unusable);
    println!(
        "exported {} entries to {} ({}), signed by {}; {} left out as local to this machine, {} unusable",
        report.entries,
        out.display(),
        human_bytes(report.bundle.len() as u64),
        key.public(),
        report.local.len(),
        report.unusable.len()
    );
    ExitCode::SUCCESS
}

/// `kernelkit cache inspect`: one line per entry, then a summary.
fn inspect(file: &Path, trusted_keys: Option<&Path>, max_bytes: u64) -> ExitCode {
    let fail = |why: String| {
        eprintln!("kernelkit cache inspect: {}: {why}", file.display());
        ExitCode::from(2)
    };
    let bytes = match bundle::read(file, max_bytes) {
        Ok(b) => b,
        Err(e) => return fail(e.to_string()),
    };
    let signature = match trusted_keys {
        None => "signature not checked (pass --trusted-keys)".to_string(),
        Some(path) => match TrustedKeys::read(path)
            .map_err(|e| e.to_string())
            .and_then(|k| {
                bundle::verify(&bytes, &k)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }) {
            Ok(()) => "signature good".to_string(),
            Err(e) => {
                eprintln!("kernelkit cache inspect: {}: {e}", file.display());
                return ExitCode::from(1);
            }
        },
    };
    let b = match bundle::inspect(&bytes) {
        Ok(b) => b,
        Err(e) => return fail(e.to_string()),
    };
    println!("kind\tbackend\ttarget\tkernel\tfunction\tkey\tbytes");
    let mut counts = std::collections::BTreeMap::new();
    for e in &b.entries {
        let h = &e.header;
        *counts.entry(h.kind.as_str()).or_insert(0usize) += 1;
        println!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}",
            h.kind, h.backend, h.target, h.kernel, h.function, h.key, h.payload_len
        );
    }
    let counts: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
    println!(
        "{}: {} entries ({}), made by {:?}, signed by {}; {signature}",
        file.display(),
        b.entries.len(),
        counts.join(", "),
        b.producer,
        b.signer
    );
    ExitCode::SUCCESS
}

fn import(
    dir: &Path,
    max_bytes: u64,
    bundle_max_bytes: u64,
    file: &Path,
    trusted_keys: Option<&Path>,
    dry_run: bool,
) -> ExitCode {
    let refuse = |why: String, code: u8| {
        eprintln!(
            "kernelkit cache import: {}: refused, nothing imported: {why}",
            file.display()
        );
        ExitCode::from(code)
    };
    let trusted = match trusted_keys {
        Some(path) => match TrustedKeys::read(path) {
            Ok(k) => k,
            Err(e) => return refuse(e.to_string(), 2),
        },
        None => TrustedKeys::default(),
    };
    let bytes = match bundle::read(file, bundle_max_bytes) {
        Ok(b) => b,
        Err(e) => return refuse(e.to_string(), 2),
    };
    if dry_run {
        return match bundle::verify(&bytes, &trusted) {
            Ok(v) => {
                println!(
                    "{}: signed by {}, {} entries (not imported: --dry-run)",
                    file.display(),
                    v.signer,
                    v.entries.len()
                );
                ExitCode::SUCCESS
            }
            Err(e) => refuse(e.to_string(), 1),
        };
    }
    let store = match ArtifactStore::create(dir) {
        Ok(s) => s.with_max_bytes(max_bytes),
        Err(e) => return refuse(e.to_string(), 2),
    };
    let identities = local_identities();
    match bundle::import(&bytes, &trusted, &identities, &store) {
        Ok(r) => {
            print_skipped("skipped (another compiler)", &r.other_compiler);
            print_skipped("skipped (dependencies differ here)", &r.stale);
            println!(
                "imported {} entries into {} from a bundle signed by {}; {} already present, {} \
                 skipped for another compiler, {} skipped for dependencies that differ here",
                r.imported,
                store.dir().display(),
                r.signer.map_or_else(|| "?".into(), |k| k.to_string()),
                r.present,
                r.other_compiler.len(),
                r.stale.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => refuse(e.to_string(), 1),
    }
}

/// The compiler identities of this machine's devices: the CPU's, and each
/// CUDA device's that opens, each with those it falls back to (portable
/// CPU levels, PTX).
pub(crate) fn local_identities() -> Vec<kernelkit::cache::key::IdentityDigest> {
    let mut out = Device::cpu().artifact_identities();
    for ordinal in 0..64 {
        match Device::cuda(ordinal) {
            Ok(d) => {
                for id in d.artifact_identities() {
                    if !out.contains(&id) {
                        out.push(id);
                    }
                }
            }
            Err(_) => break,
        }
    }
    out
}

fn print_skipped(what: &str, skipped: &[Skipped]) {
    for s in skipped {
        println!("{what}: {} (kernel {}): {}", s.key, s.kernel, s.reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn dates_and_sizes() {
        assert_eq!(utc(UNIX_EPOCH), "1970-01-01 00:00:00");
        // 2000-02-29 12:34:56 UTC, a leap day in a century leap year.
        assert_eq!(
            utc(UNIX_EPOCH + Duration::from_secs(951_827_696)),
            "2000-02-29 12:34:56"
        );
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(1 << 30), "1.0 GiB");
    }
}
