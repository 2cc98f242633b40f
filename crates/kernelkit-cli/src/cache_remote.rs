//! `kernelkit cache stats|list|verify|clear --remote`: the same actions on
//! the fleet tier (the Redis server or cluster of `KERNELKIT_REMOTE_CACHE`;
//! `verify` needs `KERNELKIT_REMOTE_KEY_FILE` to check signatures).
//!
//! Exit status as for the disk store: 0 when all went well, 1 when
//! `verify` found bad entries, 2 when the tier cannot be reached or is not
//! configured.

use std::process::ExitCode;

use kernelkit::cache::remote::{RemoteCache, RemoteError};
use kernelkit::config::RemoteConfig;

use crate::cache_cmd::human_bytes;

/// What to do.
pub(crate) enum RemoteAction {
    Stats,
    List,
    Verify,
    Clear,
}

/// Runs `action` on the fleet tier `config` names.
pub(crate) fn main(config: &RemoteConfig, action: RemoteAction) -> ExitCode {
    let cache = match RemoteCache::open(config) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let result = match action {
        RemoteAction::Stats => stats(&cache),
        RemoteAction::List => list(&cache),
        RemoteAction::Verify => verify(&cache),
        RemoteAction::Clear => clear(&cache),
    };
    result.unwrap_or_else(fail)
}

fn fail(e: RemoteError) -> ExitCode {
    eprintln!("kernelkit cache --remote: {e}");
    ExitCode::from(2)
}

fn stats(cache: &RemoteCache) -> Result<ExitCode, RemoteError> {
    let s = cache.stats()?;
    let (entries, bytes) = s
        .servers
        .iter()
        .fold((0, 0), |(e, b), x| (e + x.entries, b + x.bytes));
    println!(
        "fleet tier: {} server(s), {entries} entries ({})",
        s.servers.len(),
        human_bytes(bytes)
    );
    for x in &s.servers {
        let budget = if x.maxmemory == 0 {
            "no maxmemory".to_string()
        } else {
            format!("maxmemory {}", human_bytes(x.maxmemory))
        };
        println!(
            "  {}: {} entries ({}); server memory {} of {budget}, policy {}",
            x.server,
            x.entries,
            human_bytes(x.bytes),
            human_bytes(x.used_memory),
            x.policy
        );
    }
    match s.ttl {
        Some(t) => println!("new entries expire after {} s", t.as_secs()),
        None => println!("new entries do not expire (the server's policy evicts them)"),
    }
    if !s.key_ids.is_empty() {
        let ids: Vec<String> = s.key_ids.iter().map(ToString::to_string).collect();
        println!("keys: {} (the first signs)", ids.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}

fn list(cache: &RemoteCache) -> Result<ExitCode, RemoteError> {
    let entries = cache.list()?;
    println!(
        "{:<10}  {:>10}  {:<7}  {:<32}  {:<16}  {:<24}  FUNCTION",
        "TTL", "SIZE", "BACKEND", "KEY", "SIGNED BY", "KERNEL"
    );
    for e in &entries {
        let (backend, kernel, function) = match &e.header {
            Ok(h) => (h.backend.as_str(), h.kernel.as_str(), h.function.clone()),
            Err(fault) => ("?", "?", format!("(bad header: {fault})")),
        };
        let ttl = e
            .ttl
            .map_or("none".to_string(), |t| format!("{} s", t.as_secs()));
        let signer = e
            .signer
            .map_or("(unsigned)".to_string(), |id| id.to_string());
        println!(
            "{ttl:<10}  {:>10}  {backend:<7}  {}  {signer:<16}  {kernel:<24}  {function}",
            human_bytes(e.bytes),
            e.key,
        );
    }
    println!("{} entries", entries.len());
    Ok(ExitCode::SUCCESS)
}

fn verify(cache: &RemoteCache) -> Result<ExitCode, RemoteError> {
    let report = cache.verify()?;
    for (key, why) in &report.bad {
        println!("bad: {key}: {why}");
    }
    print!("{} good, {} bad", report.good, report.bad.len());
    if report.other_format > 0 {
        print!(", {} of another format version", report.other_format);
    }
    println!();
    Ok(if report.bad.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn clear(cache: &RemoteCache) -> Result<ExitCode, RemoteError> {
    let n = cache.clear()?;
    println!("removed {n} entries from the fleet tier");
    Ok(ExitCode::SUCCESS)
}
