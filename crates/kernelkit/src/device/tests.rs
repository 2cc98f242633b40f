//! The device's unit tests.

use super::*;
use crate::cache::entry::EntryKind;
use crate::cache::key::ModuleKey;
use crate::cache::tuning::{RecordKey, TuningRecord};

/// Resident memory of this process, in bytes (Linux).
#[cfg(target_os = "linux")]
fn resident() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf only reads a system constant.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize
}

/// A tuning record kept through one device is found by another on the
/// same store; one measured on another target (another GPU model or
/// driver), or whose payload is not a record, is never used.
#[test]
fn tuning_records_of_another_target_are_not_used() {
    use crate::cache::tuning::{ConfigResult, RECORD_FORMAT_VERSION};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let one = Device::builder().cache_dir(&dir).cpu().unwrap();
    let record = |target: &str| TuningRecord {
        format: RECORD_FORMAT_VERSION,
        key: "k".into(),
        target: target.into(),
        version: "v".into(),
        choice: "a".into(),
        configs: vec![ConfigResult {
            config: "a".into(),
            time_ns: Some(5),
            error: None,
            round: 0,
        }],
    };
    let ours = RecordKey::of("ours", one.tuning_target());
    one.keep_tuning_record(&ours, "k", record(one.tuning_target()));
    let theirs = RecordKey::of("theirs", one.tuning_target());
    let other = record("NVIDIA B200 sm_100 driver 13.0");
    one.put_tuning_record(
        &ModuleKey::from_bytes(theirs.0),
        "k",
        "tuned_k",
        &other.target,
        &other.encode(),
    );
    let junk = RecordKey::of("junk", one.tuning_target());
    one.put_tuning_record(
        &ModuleKey::from_bytes(junk.0),
        "k",
        "tuned_k",
        one.tuning_target(),
        b"not a record",
    );
    let two = Device::builder().cache_dir(&dir).cpu().unwrap();
    assert_eq!(two.find_tuning_record(&ours).unwrap().choice, "a");
    assert!(two.find_tuning_record(&theirs).is_none());
    assert!(two.find_tuning_record(&junk).is_none());
}

/// A tuning record goes into a device's disk store and comes back to
/// another device on the same store; a module key finds no record and
/// a record key no module.
#[test]
fn tuning_records_round_trip_through_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("store");
    let key = ModuleKey::from_bytes([3; 16]);
    let one = Device::builder().cache_dir(&dir).cpu().unwrap();
    assert!(one.tuning_record(&key).is_none());
    one.put_tuning_record(
        &key,
        "gemm",
        "custom_kernel_gemm",
        "cpu model x",
        b"BLOCK=64",
    );
    let two = Device::builder().cache_dir(&dir).cpu().unwrap();
    assert_eq!(
        two.tuning_record(&key),
        Some(("cpu model x".to_string(), b"BLOCK=64".to_vec()))
    );
    let store = ArtifactStore::open(&dir).unwrap();
    let bytes = store.entry_bytes(&key).unwrap().unwrap();
    let entry = crate::cache::entry::parse(&bytes).unwrap();
    assert_eq!(entry.header.kind, EntryKind::TuningRecord);
    assert_eq!(entry.header.kernel, "gemm");
    assert_eq!(two.cache_stats().compiles, 0);
}

/// Opens, uses and drops one CPU device: arrays on its default stream
/// (an upload, which is ready, and zeros, queued there), a stream of
/// its own, a clone of the default stream. Returns a weak reference.
fn use_and_drop_a_device(i: usize) -> WeakDevice {
    let device = Device::new_cpu();
    let stream = device.new_stream().unwrap();
    let default = device.default_stream().clone();
    assert_eq!(default.device(), &device);
    assert!(&default == device.default_stream());
    assert!(default != stream);
    let x = device.array_from_slice(&[i as f32; 256], [256]).unwrap();
    let z = Array::zeros(&device, [256], DType::F32).unwrap();
    assert_eq!(z.to_vec::<f32>().unwrap(), vec![0.0; 256]);
    assert_eq!(x.to_vec::<f32>().unwrap()[255], i as f32);
    let weak = device.downgrade();
    assert!(weak.upgrade().is_some());
    drop((x, z, default, stream, device));
    weak
}

/// Devices are freed when their last handle goes (the default stream
/// once held the device, so none ever was): 1000 CPU devices opened,
/// used and dropped one after another. Each one's weak reference stops
/// upgrading as soon as it is dropped, and the process does not grow
/// with the count (a device's kernel cache alone holds ~46 KB of
/// counters: 1000 leaked devices would add ~46 MB).
#[test]
fn dropped_devices_are_freed() {
    // Warm up whatever is made once per process (the thread pool).
    for i in 0..20 {
        assert!(use_and_drop_a_device(i).upgrade().is_none());
    }
    #[cfg(target_os = "linux")]
    let before = resident();
    for i in 0..1000 {
        let weak = use_and_drop_a_device(i);
        assert!(weak.upgrade().is_none(), "device {i} is still alive");
    }
    #[cfg(target_os = "linux")]
    {
        let grown = resident().saturating_sub(before);
        assert!(
            grown < 16 << 20,
            "1000 opened and dropped devices grew the process by {grown} bytes"
        );
    }
}

/// CPU streams have no raw handle and nothing to order (launches
/// finish before they return); streams of two devices cannot be
/// ordered.
#[test]
fn cpu_streams_order_trivially_and_refuse_other_devices() {
    let (a, b) = (Device::new_cpu(), Device::new_cpu());
    let s = a.new_stream().unwrap();
    assert_eq!(s.raw_cuda(), None);
    s.wait_for(a.default_stream()).unwrap();
    let e = s.wait_for(b.default_stream()).unwrap_err().to_string();
    assert!(e.contains("cannot wait for a stream of"), "{e}");
}

/// The default stream is lent from the device and compares, prints
/// and clones as one stream; a clone keeps the device alive.
#[test]
fn a_clone_of_the_default_stream_keeps_its_device() {
    let device = Device::new_cpu();
    let weak = device.downgrade();
    let default = device.default_stream().clone();
    let label = format!("{:?}", device.default_stream());
    assert!(label.starts_with("Stream(cpu #"), "{label}");
    assert_eq!(format!("{default:?}"), label);
    drop(device);
    let device = weak.upgrade().expect("the stream's clone holds the device");
    assert!(&default == device.default_stream());
    drop(device);
    drop(default);
    assert!(weak.upgrade().is_none());
}
