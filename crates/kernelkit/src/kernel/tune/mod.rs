//! Autotuning: a call names launch configurations ([`Tuning`]); the first
//! call of a tuning key times them and keeps the fastest in every cache
//! tier; later calls launch the choice with no timing.
//!
//! The tuning key is the kernel (its spec's fingerprint), the dialect,
//! the outputs' dtypes and the call's own template values, and either the
//! inputs' and outputs' shapes and the inputs' dtypes or the user's key ([`Tuning::key_fn`]); the record of
//! a key is named together with the device's tuning target (model,
//! architecture, driver), so a record made on another GPU or driver is
//! never used. Records are per configuration: a tuning whose
//! configurations the record does not all cover times the new ones and
//! the recorded choice again, side by side, and nothing else.
//!
//! The warm path is a hash of the call's signature and a look at the few
//! choices this thread launched last (`recent`: no atomic operation); the cold path
//! (`Tuning::choose_cold`) asks the device's records (memory, then its
//! tiers) and times only when none answers, one thread per key at a time.
//! Under a CUDA graph capture only a recorded choice runs (an untuned key
//! is [`CallError::Capturing`]); when the JIT is forbidden
//! (`KERNELKIT_JIT=forbid`), an untuned key runs the first configuration,
//! logged once, and times nothing.
//!
//! Files: `config` (configurations, options, the [`Tuning`] and its
//! remembered choices), `recent` (each thread's last choices launched),
//! `signature` (the bytes a call's signature is written into), `measure`
//! (timing with scratch arrays).

mod config;
mod measure;
mod recent;
mod signature;

use std::sync::Arc;
use std::time::Duration;

use xxhash_rust::xxh3::xxh3_64;

pub use config::{GridFn, KeyFn, TuneConfig, TuneOptions, Tuning};
pub use signature::SignatureBytes;

use crate::array::outputs::Outputs;
use crate::cache::tuning::{ConfigResult, RecordKey, TuningRecord, RECORD_FORMAT_VERSION};
use crate::device::Device;
use crate::error::{CallError, Result, TuneError};
use crate::kernel::call::{Call, Launch, SigBytes};

/// Whether this process may not compile kernels (`KERNELKIT_JIT=forbid`,
/// `kernel::jit`), so that tuning must not time (each configuration would
/// be compiled).
fn jit_forbids_tuning(_device: &Device) -> bool {
    matches!(
        crate::kernel::jit::policy(),
        crate::config::JitPolicy::Forbid
    )
}

impl Tuning {
    /// Runs `call` with the configuration chosen for it.
    ///
    /// Warm, this is the signature's hash and a look at this thread's
    /// recent choices; the call is then checked with the configuration's grid
    /// and threadgroup and dispatched as an untuned one.
    #[inline]
    pub(crate) fn launch(&self, call: &Call<'_>) -> Result<Outputs> {
        let sig = self.signature(call)?;
        if !call.is_verbose() {
            let warm = recent::with(self.inner.id, sig, |chosen| {
                let config = &self.inner.configs[chosen.index];
                call.launch_chosen(
                    &chosen.variant,
                    self.grid_of(config, call),
                    config.threadgroup(),
                )
            });
            if let Some(launched) = warm {
                return launched;
            }
        }
        self.launch_cold(call, sig)
    }

    /// A tuned call whose signature is not the last one launched: another
    /// signature launched before, a remembered choice, a record in a tier,
    /// or a tuning run; then the chosen variant is kept for the warm path.
    #[cold]
    #[inline(never)]
    fn launch_cold(&self, call: &Call<'_>, sig: u64) -> Result<Outputs> {
        let (index, variant) = match self.launched_slow(sig) {
            Some(chosen) => (chosen.index, chosen.variant.clone()),
            None => {
                let index = match self.remembered(sig) {
                    Some(index) => index,
                    None => self.choose_cold(call, sig)?,
                };
                let config = &self.inner.configs[index];
                let variant = call
                    .configured(config, self.grid_of(config, call), None)
                    .chosen_variant()?;
                self.keep_launched(sig, index, variant.clone());
                (index, variant)
            }
        };
        let config = &self.inner.configs[index];
        let grid = self.grid_of(config, call);
        if call.is_verbose() {
            // The plain route logs the variant it runs.
            return call.configured(config, grid, None).launch();
        }
        call.launch_chosen(&variant, grid, config.threadgroup())
    }

    /// Prepares `call` with the configuration chosen for it.
    pub(crate) fn prepare(&self, call: &Call<'_>) -> Result<Launch> {
        let index = self.choose(call)?;
        let config = &self.inner.configs[index];
        call.configured(config, self.grid_of(config, call), None)
            .prepare()
    }

    /// The configuration chosen for `call` (whose tuning is ignored: this
    /// one is asked), tuning its key first if no tier has a record. Runs
    /// nothing but timing launches, which write scratch arrays only.
    pub fn best(&self, call: &Call<'_>) -> Result<&TuneConfig> {
        let index = self.choose(call)?;
        Ok(&self.inner.configs[index])
    }

    /// The record of `call`'s tuning key on its device (each
    /// configuration's time, the choice), tuning it first if needed: what
    /// `kernelkit tune` prints.
    pub fn record(&self, call: &Call<'_>) -> Result<Arc<TuningRecord>> {
        self.choose(call)?;
        let (device, _) = call.device_and_stream()?;
        let text = self.key_text(call, &device);
        let key = RecordKey::of(&text, device.tuning_target());
        device.find_tuning_record(&key).ok_or_else(|| {
            TuneError::NoRecord {
                kernel: call.kernel().name().to_string(),
                key: text,
            }
            .into()
        })
    }

    /// The grid of `config` for `call`: its own, the grid function's, or
    /// (`None`) the call's.
    pub(super) fn grid_of(&self, config: &TuneConfig, call: &Call<'_>) -> Option<[u64; 3]> {
        config.fixed_grid().or_else(|| {
            self.inner
                .grid
                .as_ref()
                .map(|f| f(config, call.input_arrays()))
        })
    }

    /// The index of the configuration for `call`.
    #[inline]
    fn choose(&self, call: &Call<'_>) -> Result<usize> {
        let sig = self.signature(call)?;
        match self.remembered(sig) {
            Some(index) => Ok(index),
            None => self.choose_cold(call, sig),
        }
    }

    /// What tells `call`'s tuning key from another's in this process: a
    /// hash of the device and the key's parts.
    #[inline]
    fn signature(&self, call: &Call<'_>) -> Result<u64> {
        let mut bytes = SigBytes::new();
        let id = call.device_id()?;
        bytes.extend_from_slice(&id.instance.to_le_bytes());
        // One tuning may serve several kernels: the choice and the
        // variant kept for the warm path are each kernel's own.
        bytes.extend_from_slice(&call.kernel().fingerprint().to_le_bytes());
        match &self.inner.key {
            Some(key) => {
                let key = key(call.input_arrays());
                bytes.extend_from_slice(&(key.len() as u64).to_le_bytes());
                bytes.extend_from_slice(key.as_bytes());
                call.hash_outputs_and_template(&mut bytes, false);
                call.hash_input_modes(&mut bytes);
            }
            None => call.hash_signature(&mut bytes),
        }
        Ok(xxh3_64(&bytes))
    }

    /// The tuning key's text: what a record is kept under (with the
    /// device's tuning target).
    fn key_text(&self, call: &Call<'_>, device: &Device) -> String {
        let kernel = call.kernel();
        let mut text = format!(
            "{}#{:016x} {}",
            kernel.name(),
            kernel.fingerprint(),
            device.dialect().name()
        );
        match &self.inner.key {
            Some(key) => {
                text.push_str(" key=");
                text.push_str(&key(call.input_arrays()));
            }
            None => {
                text.push_str(" in=");
                for a in call.input_arrays() {
                    text.push_str(&format!("{}{:?};", a.dtype().name(), a.shape()));
                }
            }
        }
        text.push_str(" out=");
        for (shape, dtype) in call.output_specs() {
            text.push_str(dtype.name());
            if self.inner.key.is_none() {
                text.push_str(&format!("{shape:?}"));
            }
            text.push(';');
        }
        for t in call.own_template() {
            text.push_str(&format!(" {}={:?}", t.name, t.value));
        }
        text
    }

    /// Checks the configurations against `call`.
    fn check_configs(&self, call: &Call<'_>) -> Result<()> {
        let kernel = || call.kernel().name().to_string();
        if self.inner.configs.is_empty() {
            return Err(TuneError::NoConfigs { kernel: kernel() }.into());
        }
        for config in &self.inner.configs {
            for (name, _) in config.template_values() {
                if call.own_template().iter().any(|t| t.name == name) {
                    return Err(TuneError::BadConfig {
                        kernel: kernel(),
                        config: config.id().to_string(),
                        reason: format!(
                            "the call gives template `{name}` itself (a tuned value is the \
                             configuration's)"
                        ),
                    }
                    .into());
                }
            }
        }
        Ok(())
    }

    /// The index of the configuration `record` chose, if it covers every
    /// configuration of this tuning and was measured on `target`.
    fn usable(&self, record: &TuningRecord, target: &str) -> Option<usize> {
        if record.target != target {
            return None;
        }
        let configs = &self.inner.configs;
        if !configs.iter().all(|c| record.result(c.id()).is_some()) {
            return None;
        }
        configs.iter().position(|c| c.id() == record.choice)
    }

    /// The recorded choice if it is one of this tuning's configurations
    /// (whether or not the record covers them all).
    fn recorded_choice(&self, record: &TuningRecord, target: &str) -> Option<usize> {
        (record.target == target)
            .then(|| {
                self.inner
                    .configs
                    .iter()
                    .position(|c| c.id() == record.choice)
            })
            .flatten()
    }

    /// The cold path: a record in a tier, or a tuning run.
    #[cold]
    #[inline(never)]
    fn choose_cold(&self, call: &Call<'_>, sig: u64) -> Result<usize> {
        self.check_configs(call)?;
        let (device, stream) = call.device_and_stream()?;
        let target = device.tuning_target().to_string();
        let key_text = self.key_text(call, &device);
        let key = RecordKey::of(&key_text, &target);
        let records = device.records();

        let found = device.find_tuning_record(&key);
        if let Some(index) = found.as_deref().and_then(|r| self.usable(r, &target)) {
            records.count_hit();
            self.remember(sig, index);
            return Ok(index);
        }
        if stream.capturing()? {
            if let Some(index) = found
                .as_deref()
                .and_then(|r| self.recorded_choice(r, &target))
            {
                records.count_hit();
                self.remember(sig, index);
                return Ok(index);
            }
            return Err(CallError::Capturing {
                kernel: call.kernel().name().to_string(),
                what: format!("its tuning key `{key_text}` has no recorded choice (a tuning run)"),
                advice: "tune it before capture (run the tuned call once, or `Tuning::best`, \
                         with the same inputs' shapes and dtypes before the capture begins)",
            }
            .into());
        }
        if jit_forbids_tuning(&device) {
            let index = found
                .as_deref()
                .and_then(|r| self.recorded_choice(r, &target))
                .unwrap_or(0);
            if !self
                .inner
                .logged_fallback
                .swap(true, std::sync::atomic::Ordering::Relaxed)
            {
                tracing::warn!(
                    kernel = %call.kernel().name(),
                    "compiling is forbidden: tuning key `{key_text}` has no record, running \
                     configuration `{}` untimed",
                    self.inner.configs[index]
                );
            }
            self.remember(sig, index);
            return Ok(index);
        }

        // One thread of this process tunes a key; the others wait for it
        // and then find its record.
        let lock = records.tuning_lock(&key);
        let _tuning = lock.lock().unwrap_or_else(|p| p.into_inner());
        // Another thread of this tuning may have chosen for `sig` while
        // this one waited: its choice stands (the record may name another
        // tuning's choice by now, which would send this thread timing
        // again, and a second round may rank near-equal configurations the
        // other way).
        if let Some(index) = self.remembered(sig) {
            return Ok(index);
        }
        let mut previous = device.find_tuning_record(&key);
        if let Some(index) = previous.as_deref().and_then(|r| self.usable(r, &target)) {
            records.count_hit();
            self.remember(sig, index);
            return Ok(index);
        }
        // One process of a machine (the disk store's lock) and one node
        // of a fleet (the lease) tunes a key; the others wait for its
        // record.
        let (_claims, published, timed_out) = device.claim_tuning(&key);
        if let Some(record) = published {
            if let Some(index) = self.usable(&record, &target) {
                records.count_hit();
                self.remember(sig, index);
                return Ok(index);
            }
            previous = Some(record);
        }
        if timed_out {
            // Another node holds the lease past the wait (or the fleet is
            // away): run the recorded choice or the first configuration,
            // untimed, rather than stall.
            let index = previous
                .as_deref()
                .and_then(|r| self.recorded_choice(r, &target))
                .unwrap_or(0);
            tracing::warn!(
                kernel = %call.kernel().name(),
                "tuning key `{key_text}`: no record and no lease from the fleet tier; running \
                 configuration `{}` untimed in this process",
                self.inner.configs[index]
            );
            self.remember(sig, index);
            return Ok(index);
        }
        let previous = previous.filter(|r| r.target == target);
        let to_time: Vec<usize> = match previous
            .as_deref()
            .and_then(|r| self.recorded_choice(r, &target))
        {
            // The new configurations and the recorded best, side by side.
            Some(best) => (0..self.inner.configs.len())
                .filter(|&i| {
                    i == best
                        || previous
                            .as_deref()
                            .is_some_and(|r| r.result(self.inner.configs[i].id()).is_none())
                })
                .collect(),
            None => (0..self.inner.configs.len()).collect(),
        };
        records.count_tune();
        let timed = measure::time_configs(self, call, &to_time, &device, &stream, records)?;
        let record = self.merge(previous.as_deref(), key_text, target, &timed, call)?;
        let index = self
            .inner
            .configs
            .iter()
            .position(|c| c.id() == record.choice)
            .unwrap_or(0);
        if tracing::enabled!(tracing::Level::DEBUG) {
            let times: Vec<String> = record
                .configs
                .iter()
                .map(|r| match (r.time_ns, &r.error) {
                    (Some(ns), _) => format!("`{}` {:.2} us", r.config, ns as f64 / 1e3),
                    (None, Some(e)) => format!("`{}` failed: {e}", r.config),
                    (None, None) => format!("`{}` not timed", r.config),
                })
                .collect();
            tracing::debug!(
                kernel = %call.kernel().name(),
                "tuned `{}`: chose `{}` among {} configurations ({})",
                record.key,
                record.choice,
                timed.len(),
                times.join(", ")
            );
        }
        device.keep_tuning_record(&key, call.kernel().name(), record);
        self.remember(sig, index);
        Ok(index)
    }

    /// The record after a timing round: `previous`'s results for the
    /// configurations not timed now, the new round's for the rest, and the
    /// fastest of the new round as the choice.
    fn merge(
        &self,
        previous: Option<&TuningRecord>,
        key: String,
        target: String,
        timed: &[(usize, measure::Outcome)],
        call: &Call<'_>,
    ) -> Result<TuningRecord> {
        let round = previous.map_or(0, |r| r.last_round() + 1);
        let best = timed
            .iter()
            .filter_map(|(i, o)| o.as_ref().ok().map(|t| (*i, *t)))
            .min_by_key(|(_, t)| *t);
        let Some((best, _)) = best else {
            let errors = timed
                .iter()
                .map(|(i, o)| {
                    format!(
                        "`{}`: {}",
                        self.inner.configs[*i],
                        o.as_ref().err().map_or("", String::as_str)
                    )
                })
                .collect::<Vec<_>>()
                .join("; ");
            return Err(TuneError::AllFailed {
                kernel: call.kernel().name().to_string(),
                errors,
            }
            .into());
        };
        let mut configs: Vec<ConfigResult> = previous.map_or_else(Vec::new, |r| {
            r.configs
                .iter()
                .filter(|c| {
                    !timed
                        .iter()
                        .any(|(i, _)| self.inner.configs[*i].id() == c.config)
                })
                .cloned()
                .collect()
        });
        for (i, outcome) in timed {
            configs.push(ConfigResult {
                config: self.inner.configs[*i].id().to_string(),
                time_ns: outcome.as_ref().ok().map(|t| nanos(*t)),
                error: outcome.as_ref().err().cloned(),
                round,
            });
        }
        Ok(TuningRecord {
            format: RECORD_FORMAT_VERSION,
            key,
            target,
            version: env!("CARGO_PKG_VERSION").to_string(),
            choice: self.inner.configs[best].id().to_string(),
            configs,
        })
    }
}

fn nanos(t: Duration) -> u64 {
    u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
}
