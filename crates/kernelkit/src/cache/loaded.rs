//! Loaded modules, and where callers keep the functions resolved from them.
//!
//! A device keeps a bounded set of [`Loaded`] modules (see
//! `kernel_cache`). A caller that launches one of their functions often (a
//! variant) keeps it in a [`FunctionSlots`]: one slot per device ordinal,
//! read without a lock and without a cache lookup on every warm call. A
//! slot holds a [`Bound`] function, which holds its [`Loaded`] module, so
//! the code cannot go away under a launch that read the slot. When the
//! device unloads a module it *retires* it: every slot bound to it is
//! cleared (the next call there resolves again, and reloads), and the
//! module itself is freed when the last holder lets go — the device's
//! kernel cache, the slots, and the launches that read a slot just before
//! it was cleared (a slot read is a guard that keeps its value alive).
//!
//! The binding protocol: a slot is bound to a module, and a retire clears
//! the module's bound slots, both under the module's own `binds` lock; a
//! retired module is never bound. So no slot keeps a retired module after
//! its retire returned, and a module is freed (CPU: `dlclose`; CUDA:
//! unloaded once the work queued before it is done, see the backend's
//! `unload.rs`) only once no launch can still be reading it.

use std::sync::{Arc, Weak};

use crate::backend::{Function, Module};
use crate::cache::key::ModuleKey;
use crate::sync::{lock, AtomicBool, Mutex, SlotGuard, SwapSlot};

use std::sync::atomic::Ordering;

/// Slots per caller: device ordinals `0..SLOTS` have one each; a device of
/// a higher ordinal shares `ordinal % SLOTS` (correct, since a bound
/// function names its device instance, only slower when two such devices
/// alternate).
pub(crate) const SLOTS: usize = 8;

/// A module loaded on one device, with the bits its cache keeps.
pub(crate) struct Loaded {
    /// The backend's module.
    pub(crate) module: Module,
    /// Its key in the device's kernel cache.
    pub(crate) key: ModuleKey,
    /// Set by every use, cleared by the cache's clock hand.
    referenced: AtomicBool,
    /// Sticky: a pinned module is never unloaded (modules that work
    /// captured into a CUDA graph launches; a graph replays without asking
    /// kernelkit).
    pinned: AtomicBool,
    /// The slots bound to it, and whether it was retired.
    binds: Mutex<Binds>,
}

#[derive(Default)]
struct Binds {
    retired: bool,
    /// Each bound slot: its owner and index. A slot rebound to another
    /// module stays listed here until this module retires (the retire
    /// clears it only if it still holds this module).
    slots: Vec<(Weak<FunctionSlots>, usize)>,
}

impl std::fmt::Debug for Loaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loaded")
            .field("key", &self.key)
            .field("pinned", &self.pinned())
            .finish_non_exhaustive()
    }
}

impl Loaded {
    /// A newly loaded module, not marked used: the cache puts it where
    /// the clock hand reaches it last.
    pub(crate) fn new(module: Module, key: ModuleKey) -> Loaded {
        Loaded {
            module,
            key,
            referenced: AtomicBool::new(false),
            pinned: AtomicBool::new(false),
            binds: Mutex::new(Binds::default()),
        }
    }

    /// Marks the module never unloadable, for as long as its device lives
    /// (for instance because a captured CUDA graph launches it). False,
    /// and nothing done, when the module was unloaded already (the caller
    /// resolves it again: the new load is the one to pin). Pin and unload
    /// decide under one lock, so a pinned module is never retired.
    pub fn pin(&self) -> bool {
        let binds = lock(&self.binds);
        if binds.retired {
            return false;
        }
        self.pinned.store(true, Ordering::Release);
        true
    }

    /// Whether [`Loaded::pin`] was called.
    pub fn pinned(&self) -> bool {
        self.pinned.load(Ordering::Acquire)
    }

    /// Marks the module used since the clock hand last passed (no store
    /// when it is marked already: a hot module's line is not written by
    /// every call).
    #[inline]
    pub(crate) fn touch(&self) {
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the module was used since the hand last passed; clears it.
    pub(crate) fn take_reference(&self) -> bool {
        self.referenced.swap(false, Ordering::Relaxed)
    }

    /// Whether the module was retired (unloaded from its device's cache).
    #[cfg(test)]
    pub(crate) fn retired(&self) -> bool {
        lock(&self.binds).retired
    }

    /// Puts `bound` (a function of this module) in slot `index` of
    /// `slots`, unless this module was retired: then the caller uses
    /// `bound` for its one call and the slot stays as it was.
    pub(crate) fn bind(&self, slots: &Arc<FunctionSlots>, index: usize, bound: Arc<Bound>) {
        debug_assert!(std::ptr::eq(&*bound.loaded, self));
        let mut binds = lock(&self.binds);
        if binds.retired {
            return;
        }
        slots.slots[index].store(Some(bound));
        let listed = binds
            .slots
            .iter()
            .any(|(w, i)| *i == index && std::ptr::eq(w.as_ptr(), Arc::as_ptr(slots)));
        if !listed {
            // Owners that went away leave dead entries: drop them as the
            // list grows, so it stays as long as the live owners.
            if binds.slots.len() >= 8 && binds.slots.len().is_power_of_two() {
                binds.slots.retain(|(w, _)| w.strong_count() > 0);
            }
            binds.slots.push((Arc::downgrade(slots), index));
        }
    }

    /// Retires the module unless it is pinned (then false): no slot is
    /// bound to it from now on, and those that are, are cleared. The
    /// module is freed when its last holder lets go.
    pub(crate) fn retire(&self) -> bool {
        self.retire_unless_pinned(true)
    }

    /// [`Loaded::retire`]; `honour_pins` false retires a pinned module too.
    fn retire_unless_pinned(&self, honour_pins: bool) -> bool {
        let slots = {
            let mut binds = lock(&self.binds);
            if honour_pins && self.pinned.load(Ordering::Acquire) {
                return false;
            }
            // A module a captured graph launches (the backend's own pin,
            // set by the launch that was captured) is kept as well.
            if honour_pins && !crate::backend::retire_module(&self.module) {
                self.pinned.store(true, Ordering::Release);
                return false;
            }
            binds.retired = true;
            std::mem::take(&mut binds.slots)
        };
        // Cleared outside the lock: a slot never takes this lock, and a
        // bind after `retired` was set does nothing.
        for (owner, index) in slots {
            if let Some(owner) = owner.upgrade() {
                owner.slots[index].clear_if(|b| std::ptr::eq(&*b.loaded, self));
            }
        }
        true
    }

    /// Retires the module whether or not it is pinned: its device is gone.
    pub(crate) fn retire_for_good(&self) {
        self.pinned.store(false, Ordering::Release);
        self.retire_unless_pinned(false);
    }
}

/// A function resolved from a loaded module of one device instance: what
/// a slot holds, and what a launch borrows.
pub(crate) struct Bound {
    /// The device instance (see `DeviceId::instance`) that loaded it.
    pub(crate) instance: u32,
    /// Keeps the code alive while this function is held.
    pub(crate) loaded: Arc<Loaded>,
    /// The backend's function.
    pub(crate) function: Function,
}

/// One slot per device ordinal (see [`SLOTS`]), each holding the function
/// last resolved on that device; shared with the modules bound into it so
/// that a retire can clear them.
#[derive(Default)]
pub(crate) struct FunctionSlots {
    slots: [SwapSlot<Bound>; SLOTS],
}

impl FunctionSlots {
    /// The index of the slot for device `ordinal`.
    #[inline]
    pub(crate) fn index(ordinal: u32) -> usize {
        ordinal as usize % SLOTS
    }

    /// The function in slot `index` if it belongs to device `instance`,
    /// kept alive while the result lives; marks its module used.
    #[inline]
    pub(crate) fn get(&self, index: usize, instance: u32) -> Option<FunctionRef> {
        let guard = self.slots[index].load();
        let hit = match guard.as_deref() {
            Some(b) if b.instance == instance => {
                b.loaded.touch();
                true
            }
            _ => false,
        };
        hit.then(|| FunctionRef::Slot(guard))
    }
}

/// A function held for one call: read from a slot, or just resolved.
pub(crate) enum FunctionRef {
    /// A slot's read (its guard keeps the function and module alive).
    Slot(SlotGuard<Bound>),
    /// Resolved by this call.
    Owned(Arc<Bound>),
}

impl FunctionRef {
    /// The bound function.
    #[inline]
    pub(crate) fn bound(&self) -> &Bound {
        match self {
            // `FunctionSlots::get` made a `Slot` only of a read that holds one.
            FunctionRef::Slot(g) => g.as_deref().expect("a slot read holds a function"),
            FunctionRef::Owned(b) => b,
        }
    }
}

impl std::ops::Deref for FunctionRef {
    type Target = Function;
    #[inline]
    fn deref(&self) -> &Function {
        &self.bound().function
    }
}

/// Model-checked with `loom` (`RUSTFLAGS="--cfg loom" cargo test --lib loom_`):
/// the binding protocol above. The module's payload marks itself freed
/// when dropped.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use crate::backend::null::NullFunction;
    use crate::sync::model;
    use loom::sync::atomic::AtomicBool as LoomBool;
    use loom::thread;

    /// A module payload that says when it was freed.
    struct Payload(Arc<LoomBool>);
    impl Drop for Payload {
        fn drop(&mut self) {
            self.0.store(false, Ordering::SeqCst);
        }
    }

    fn setup() -> (Arc<LoomBool>, Arc<Loaded>, Arc<FunctionSlots>) {
        let alive = Arc::new(LoomBool::new(true));
        let module: Module = Arc::new(Payload(alive.clone()));
        let loaded = Arc::new(Loaded::new(module, ModuleKey::derive("t", "", "k", "")));
        (alive, loaded, Arc::new(FunctionSlots::default()))
    }

    fn bound(loaded: &Arc<Loaded>) -> Arc<Bound> {
        Arc::new(Bound {
            instance: 1,
            loaded: loaded.clone(),
            function: NullFunction::detached("f"),
        })
    }

    /// A reader of a bound slot races the module's unload (retire, then
    /// the cache lets go): whatever it read stays alive while it holds it;
    /// afterwards the slot is empty and the module freed.
    #[test]
    fn loom_an_unload_never_frees_a_module_under_a_reader() {
        model(None, || {
            let (alive, loaded, slots) = setup();
            loaded.bind(&slots, 0, bound(&loaded));
            let reader = {
                let (slots, alive) = (slots.clone(), alive.clone());
                thread::spawn(move || {
                    if let Some(f) = slots.get(0, 1) {
                        assert!(alive.load(Ordering::SeqCst), "read a freed module");
                        drop(f);
                    }
                })
            };
            let unloader = thread::spawn(move || {
                assert!(loaded.retire());
                drop(loaded);
            });
            reader.join().unwrap();
            unloader.join().unwrap();
            assert!(slots.get(0, 1).is_none(), "a retired module stays bound");
            assert!(
                !alive.load(Ordering::SeqCst),
                "the module outlived its holders"
            );
        });
    }

    /// A bind races the retire: either order, no slot keeps the retired
    /// module, and the module is freed once its holders let go.
    #[test]
    fn loom_a_bind_racing_an_unload_leaves_nothing_bound() {
        model(None, || {
            let (alive, loaded, slots) = setup();
            let binder = {
                let (slots, loaded) = (slots.clone(), loaded.clone());
                thread::spawn(move || {
                    let b = bound(&loaded);
                    loaded.bind(&slots, 0, b);
                })
            };
            let unloader = thread::spawn(move || {
                assert!(loaded.retire());
                drop(loaded);
            });
            binder.join().unwrap();
            unloader.join().unwrap();
            assert!(slots.get(0, 1).is_none(), "a retired module stays bound");
            assert!(
                !alive.load(Ordering::SeqCst),
                "the module outlived its holders"
            );
        });
    }

    /// A pin races the unload: the module is pinned (and stays loaded) or
    /// retired (and the pin says so), never both.
    #[test]
    fn loom_a_pin_and_an_unload_agree() {
        model(None, || {
            let (_alive, loaded, _slots) = setup();
            let pinner = {
                let loaded = loaded.clone();
                thread::spawn(move || loaded.pin())
            };
            let retired = loaded.retire();
            let pinned = pinner.join().unwrap();
            assert!(pinned != retired, "pinned {pinned}, retired {retired}");
        });
    }
}
