// ---- 6.9 Threadgroup and SIMD-group execution on the CPU.
//
// A body that synchronises (barriers, SIMD-group or quad functions) runs
// each thread of a threadgroup as a fiber: a stack of its own, switched by
// hand-written code (below) at each barrier and SIMD-group call, so the
// threads of a group cooperate on one OS thread, in order, with no system
// call per switch. A switch parks the current fiber and runs the next
// runnable one; when none is runnable, the scheduler resolves what the
// parked fibers wait for:
//   1. SIMD-group calls: per simdgroup (32 consecutive threads), the
//      fibers parked at one call site (numbered in the source by the
//      lowering pass: machine code may duplicate a call) with one
//      operation form the active set (GPU semantics: the lanes that
//      reached the call; the others finished, or wait at a barrier or at
//      another call). The operation runs once over that set and every
//      member resumes with its result.
//   2. else simdgroup_barrier: those fibers resume.
//   3. else threadgroup_barrier: every fiber not finished is there; all
//      resume.
// Threadgroup memory is `static thread_local` (lowering), shared by the
// fibers of the group, which all run on one OS thread. Bodies that need
// none of this run their threads one after another, without fibers.
//
// Stacks come from the launch (`kk_launch::stacks`, owned by the CPU
// backend and reused across launches), one per thread of the group, with
// a guard page below each.

namespace kk {
namespace rt {
// Where a fiber stands.
enum : unsigned char { RUN = 0, AT_SIMD = 1, AT_SIMD_BARRIER = 2, AT_BARRIER = 3, DONE = 4 };
struct lane;
// A SIMD-group operation over an active set: `L[i]` is the lane of SIMD
// lane i (null when not active), `mask` the active lanes.
typedef void (*simd_fn)(lane* const* L, unsigned mask);
struct lane {
  void* sp;
  int site;
  simd_fn op;
  const void* in;
  const void* in2;
  void* out;
  unsigned arg;
  unsigned arg2;
  unsigned lid;
  unsigned char state;
};
struct group {
  lane* lanes;      // the threads of the group that exist, by linear index
  unsigned n;
  unsigned cur;     // the lane running now
  void* sched_sp;   // the scheduler's saved stack
  void (*body)(void* ctx, unsigned lid);
  void* ctx;
};
// The group running on this OS thread (null outside a fiber launch).
static thread_local group* tl_group = nullptr;
// Where a launch reports misuse (see kk_launch::status).
static thread_local unsigned* tl_status = nullptr;
inline void report(unsigned code) {
  if (tl_status) __atomic_fetch_or(tl_status, code, __ATOMIC_RELAXED);
}
}  // namespace rt
}  // namespace kk

// The context switch: saves the callee-saved registers on the current
// stack, stores the stack pointer in *save, loads `to` and restores the
// registers found there. A new fiber's stack is prepared so that the first
// switch to it "returns" into kk_fiber_boot, which calls fn(arg).
#if defined(__APPLE__)
#define KK_ASM_FN(n) ".globl _" #n "\n.private_extern _" #n "\n.p2align 4\n_" #n ":\n"
#elif defined(__aarch64__)
#define KK_ASM_FN(n) ".globl " #n "\n.hidden " #n "\n.type " #n ", %function\n.p2align 4\n" #n ":\n"
#else
#define KK_ASM_FN(n) ".globl " #n "\n.hidden " #n "\n.type " #n ", @function\n.p2align 4\n" #n ":\n"
#endif
#if defined(__x86_64__) && !defined(KK_FIBER_UCONTEXT)
#define KK_FIBER_ASM 1
__asm__(".text\n" KK_ASM_FN(kk_fiber_switch)
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n" KK_ASM_FN(kk_fiber_boot)
        "  movq %r12, %rdi\n"
        "  callq *%r13\n"
        "  ud2\n");
#elif defined(__aarch64__) && !defined(KK_FIBER_UCONTEXT)
#define KK_FIBER_ASM 1
__asm__(".text\n" KK_ASM_FN(kk_fiber_switch)
        "  sub sp, sp, #160\n"
        "  stp x19, x20, [sp, #0]\n"
        "  stp x21, x22, [sp, #16]\n"
        "  stp x23, x24, [sp, #32]\n"
        "  stp x25, x26, [sp, #48]\n"
        "  stp x27, x28, [sp, #64]\n"
        "  stp x29, x30, [sp, #80]\n"
        "  stp d8, d9, [sp, #96]\n"
        "  stp d10, d11, [sp, #112]\n"
        "  stp d12, d13, [sp, #128]\n"
        "  stp d14, d15, [sp, #144]\n"
        "  mov x2, sp\n"
        "  str x2, [x0]\n"
        "  mov sp, x1\n"
        "  ldp x19, x20, [sp, #0]\n"
        "  ldp x21, x22, [sp, #16]\n"
        "  ldp x23, x24, [sp, #32]\n"
        "  ldp x25, x26, [sp, #48]\n"
        "  ldp x27, x28, [sp, #64]\n"
        "  ldp x29, x30, [sp, #80]\n"
        "  ldp d8, d9, [sp, #96]\n"
        "  ldp d10, d11, [sp, #112]\n"
        "  ldp d12, d13, [sp, #128]\n"
        "  ldp d14, d15, [sp, #144]\n"
        "  add sp, sp, #160\n"
        "  ret\n" KK_ASM_FN(kk_fiber_boot)
        "  mov x0, x19\n"
        "  blr x20\n"
        "  brk #0\n");
#else
#include <ucontext.h>
#endif
#undef KK_ASM_FN

#ifdef KK_FIBER_ASM
extern "C" void kk_fiber_switch(void** save, void* to);
extern "C" void kk_fiber_boot();
#endif

namespace kk {
namespace rt {
#ifdef KK_FIBER_ASM
// A new fiber's first frame: kk_fiber_switch's saved registers, with fn and
// arg where kk_fiber_boot reads them and kk_fiber_boot as the return address.
inline void* prepare(unsigned, char*, char* top, void (*fn)(void*), void* arg) {
  unsigned long t = (unsigned long)top & ~15ul;
#if defined(__x86_64__)
  unsigned long* sp = (unsigned long*)(t - 72);
  for (int i = 0; i < 9; ++i) sp[i] = 0;
  sp[2] = (unsigned long)fn;           // r13
  sp[3] = (unsigned long)arg;          // r12
  sp[6] = (unsigned long)&kk_fiber_boot;
#else
  unsigned long* sp = (unsigned long*)(t - 160);
  for (int i = 0; i < 20; ++i) sp[i] = 0;
  sp[0] = (unsigned long)arg;          // x19
  sp[1] = (unsigned long)fn;           // x20
  sp[11] = (unsigned long)&kk_fiber_boot;  // x30
#endif
  return sp;
}
inline void jump(void** save, void* to) { kk_fiber_switch(save, to); }
#else
// Portable fallback: ucontext (a system call per switch; correct, slower).
static thread_local ucontext_t tl_ctx[1024];
inline void jump(void** save, void* to) { swapcontext((ucontext_t*)*save, (ucontext_t*)to); }
#endif

// Switches from lane `me` to the next runnable lane after it, else to the
// scheduler.
inline void leave(group* g, lane* me) {
  unsigned nx = g->cur + 1;
  while (nx < g->n && g->lanes[nx].state != RUN) ++nx;
  if (nx < g->n) {
    g->cur = nx;
    jump(&me->sp, g->lanes[nx].sp);
  } else {
    jump(&me->sp, g->sched_sp);
  }
}
__attribute__((noinline)) inline void park(unsigned char state) {
  group* g = tl_group;
  lane* me = g->lanes + g->cur;
  me->state = state;
  leave(g, me);
}
inline void fiber_main(void* p) {
  group* g = (group*)p;
  lane* me = g->lanes + g->cur;
  g->body(g->ctx, me->lid);
  me->state = DONE;
  leave(g, me);
  __builtin_trap();
}
#ifndef KK_FIBER_ASM
inline void fiber_entry_uc(unsigned hi, unsigned lo) {
  fiber_main((void*)(((unsigned long)hi << 32) | lo));
}
inline void* prepare(unsigned i, char* bottom, char* top, void (*)(void*), void* arg) {
  ucontext_t* c = &tl_ctx[i];
  getcontext(c);
  c->uc_stack.ss_sp = bottom;
  c->uc_stack.ss_size = (unsigned long)(top - bottom);
  c->uc_link = nullptr;
  unsigned long a = (unsigned long)arg;
  makecontext(c, (void (*)())fiber_entry_uc, 2, (unsigned)(a >> 32), (unsigned)a);
  return c;
}
#endif

// Runs a SIMD-group operation over every active set of one simdgroup
// (lanes [first, end) of the group, those parked at a SIMD call).
inline void resolve_simdgroup(group* g, unsigned first, unsigned end) {
  unsigned todo = 0;
  for (unsigned i = first; i < end; ++i)
    if (g->lanes[i].state == AT_SIMD) todo |= 1u << (g->lanes[i].lid & 31u);
  while (todo) {
    lane* head = nullptr;
    for (unsigned i = first; i < end && !head; ++i)
      if (g->lanes[i].state == AT_SIMD && (todo >> (g->lanes[i].lid & 31u) & 1u)) head = &g->lanes[i];
    lane* L[32] = {};
    unsigned mask = 0;
    for (unsigned i = first; i < end; ++i) {
      lane* l = &g->lanes[i];
      if (l->state == AT_SIMD && l->site == head->site && l->op == head->op && (todo >> (l->lid & 31u) & 1u)) {
        L[l->lid & 31u] = l;
        mask |= 1u << (l->lid & 31u);
      }
    }
    head->op(L, mask);
    todo &= ~mask;
    for (unsigned i = 0; i < 32; ++i)
      if (L[i]) L[i]->state = RUN;
  }
}
// Resolves what the parked lanes wait for; false when all are done.
inline bool resolve(group* g) {
  bool simd = false, simd_bar = false, bar = false;
  for (unsigned i = 0; i < g->n; ++i) {
    unsigned char s = g->lanes[i].state;
    simd |= s == AT_SIMD;
    simd_bar |= s == AT_SIMD_BARRIER;
    bar |= s == AT_BARRIER;
  }
  if (simd) {
    for (unsigned a = 0; a < g->n;) {
      unsigned b = a;
      while (b < g->n && (g->lanes[b].lid >> 5) == (g->lanes[a].lid >> 5)) ++b;
      resolve_simdgroup(g, a, b);
      a = b;
    }
    return true;
  }
  const unsigned char wake = simd_bar ? AT_SIMD_BARRIER : AT_BARRIER;
  if (!simd_bar && !bar) return false;
  for (unsigned i = 0; i < g->n; ++i)
    if (g->lanes[i].state == wake) g->lanes[i].state = RUN;
  return true;
}
// Runs one threadgroup: `f(lid)` for every linear index in `lids` (the
// threads of the group that exist), each on a fiber of its own; fiber i
// uses the stack [stacks + i * stride + guard, stacks + (i + 1) * stride).
template <class F>
inline void run_group(F& f, const unsigned* lids, unsigned n, char* stacks, unsigned long stride,
                      unsigned long guard) {
  static thread_local lane lanes[1024];
  group g;
  g.lanes = lanes;
  g.n = n;
  g.cur = 0;
  g.sched_sp = nullptr;
  g.body = [](void* ctx, unsigned lid) { (*(F*)ctx)(lid); };
  g.ctx = &f;
#ifndef KK_FIBER_ASM
  static thread_local ucontext_t sched;
  g.sched_sp = &sched;
#endif
  for (unsigned i = 0; i < n; ++i) {
    lanes[i].state = RUN;
    lanes[i].lid = lids[i];
    char* bottom = stacks + (unsigned long)i * stride + guard;
    lanes[i].sp = prepare(i, bottom, stacks + (unsigned long)(i + 1) * stride, &fiber_main, &g);
  }
  group* outer = tl_group;
  tl_group = &g;
  for (;;) {
    unsigned first = 0;
    while (first < n && lanes[first].state != RUN) ++first;
    if (first == n) {
      if (!resolve(&g)) break;
      continue;
    }
    g.cur = first;
    jump(&g.sched_sp, lanes[first].sp);
  }
  tl_group = outer;
}

// A SIMD-group call from the current fiber: parks it with its operation
// and call site until the scheduler runs the operation over the active set.
__attribute__((noinline)) inline void collective(simd_fn op, const void* in, const void* in2, void* out,
                                                 unsigned arg, unsigned arg2, int site) {
  group* g = tl_group;
  if (!g) {
    // Not in a fiber launch: the body's scan missed this call. Run it as
    // a simdgroup of one lane and report it.
    report(1u);
    lane self{};
    self.in = in;
    self.in2 = in2;
    self.out = out;
    self.arg = arg;
    self.arg2 = arg2;
    lane* L[32] = {&self};
    op(L, 1u);
    return;
  }
  lane* me = g->lanes + g->cur;
  me->site = site;
  me->op = op;
  me->in = in;
  me->in2 = in2;
  me->out = out;
  me->arg = arg;
  me->arg2 = arg2;
  park(AT_SIMD);
}
inline void barrier(unsigned char kind) {
  if (tl_group) {
    park(kind);
  } else {
    report(1u);
  }
}
}  // namespace rt

// The SIMD-group primitives of the API (metal/simd.h) on the CPU: each
// defines the operation over an active set, per segment of W lanes (32 for
// simd_*, 4 for quad_*).
namespace simd {
template <class T, class Op, int W> void reduce_op(rt::lane* const* L, unsigned mask) {
  for (int b = 0; b < 32; b += W) {
    unsigned m = (mask >> b) & seg_bits<W>();
    if (!m) continue;
    T acc = T();
    bool first = true;
    for (int i = 0; i < W; ++i)
      if (m >> i & 1u) {
        const T& v = *(const T*)L[b + i]->in;
        acc = first ? v : Op::f(acc, v);
        first = false;
      }
    for (int i = 0; i < W; ++i)
      if (m >> i & 1u) *(T*)L[b + i]->out = acc;
  }
}
template <class T, class Op, int W, bool Inclusive> void scan_op(rt::lane* const* L, unsigned mask) {
  for (int b = 0; b < 32; b += W) {
    unsigned m = (mask >> b) & seg_bits<W>();
    T acc = T();
    bool first = true;
    for (int i = 0; i < W; ++i)
      if (m >> i & 1u) {
        const T v = *(const T*)L[b + i]->in;
        if (!Inclusive) *(T*)L[b + i]->out = first ? Op::template identity<T>() : acc;
        acc = first ? v : Op::f(acc, v);
        first = false;
        if (Inclusive) *(T*)L[b + i]->out = acc;
      }
  }
}
template <class T, int W, int Kind> void shuffle_op(rt::lane* const* L, unsigned mask) {
  for (int l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    int s;
    bool fill = false;
    if (Kind == FIRST) {
      const unsigned m = mask & (seg_bits<W>() << (l & ~(W - 1)));
      s = __builtin_ctz(m);
    } else {
      s = source<W>(Kind, l, L[l]->arg, L[l]->arg2, &fill);
    }
    // A source lane outside the active set is undefined on a GPU: here,
    // the caller's own value.
    const rt::lane* from = (s >= 0 && s < 32 && (mask >> s & 1u)) ? L[s] : L[l];
    *(T*)L[l]->out = *(const T*)(fill ? from->in2 : from->in);
  }
}
// Votes: ballot (bits of the lanes whose value is true, relative to the
// segment), all, any, the active mask, is_first.
template <int W, int Kind> void vote_op(rt::lane* const* L, unsigned mask) {
  for (int b = 0; b < 32; b += W) {
    const unsigned m = (mask >> b) & seg_bits<W>();
    if (!m) continue;
    unsigned yes = 0;
    for (int i = 0; i < W; ++i)
      if ((m >> i & 1u) && L[b + i]->in && *(const bool*)L[b + i]->in) yes |= 1u << i;
    for (int i = 0; i < W; ++i) {
      if (!(m >> i & 1u)) continue;
      unsigned long long* out = (unsigned long long*)L[b + i]->out;
      switch (Kind) {
        case BALLOT: out[0] = yes; out[1] = m; break;
        case ACTIVE: out[0] = m; out[1] = m; break;
        case ALL: *(bool*)out = yes == m; break;
        case ANY: *(bool*)out = yes != 0; break;
        default: *(bool*)out = i == __builtin_ctz(m); break;
      }
    }
  }
}

// The lane of the calling thread in its simdgroup.
inline unsigned lane_id_of_thread() {
  rt::group* g = rt::tl_group;
  return g ? (g->lanes[g->cur].lid & 31u) : 0u;
}
// Every active lane's own pair of an 8x8 matrix, into every lane's copy.
template <class T> void gather_op(rt::lane* const* L, unsigned mask) {
  T pairs[64];
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    const int p = sm_row(l) * 8 + sm_col(l);
    pairs[p] = ((const T*)L[l]->in)[p];
    pairs[p + 1] = ((const T*)L[l]->in)[p + 1];
  }
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    for (unsigned s = 0; s < 32; ++s) {
      if (!(mask >> s & 1u)) continue;
      const int p = sm_row(s) * 8 + sm_col(s);
      ((T*)L[l]->out)[p] = pairs[p];
      ((T*)L[l]->out)[p + 1] = pairs[p + 1];
    }
  }
}
template <class T> KK_FORCE void gather_pairs(T* m) {
  rt::collective(&gather_op<T>, m, nullptr, m, 0, 0, 0);
}
template <class Op, int W, class S, class T> KK_FORCE T reduce(const T& x) {
  T r;
  rt::collective(&reduce_op<T, Op, W>, &x, nullptr, &r, 0, 0, S::value);
  return r;
}
template <class Op, int W, bool Inclusive, class S, class T> KK_FORCE T scan(const T& x) {
  T r;
  rt::collective(&scan_op<T, Op, W, Inclusive>, &x, nullptr, &r, 0, 0, S::value);
  return r;
}
template <int Kind, int W, class S, class T> KK_FORCE T shuffle(const T& x, unsigned arg) {
  T r;
  rt::collective(&shuffle_op<T, W, Kind>, &x, &x, &r, arg, 0, S::value);
  return r;
}
template <int Kind, int W, class S, class T> KK_FORCE T fill(const T& x, const T& filling, unsigned delta, unsigned modulo) {
  T r;
  rt::collective(&shuffle_op<T, W, Kind>, &x, &filling, &r, delta, modulo, S::value);
  return r;
}
template <int Kind, int W, class S> KK_FORCE vote_bits vote_mask(bool b) {
  vote_bits r;
  rt::collective(&vote_op<W, Kind>, &b, nullptr, &r, 0, 0, S::value);
  return r;
}
template <int Kind, int W, class S> KK_FORCE bool vote(bool b) {
  bool r;
  rt::collective(&vote_op<W, Kind>, &b, nullptr, &r, 0, 0, S::value);
  return r;
}
}  // namespace simd
}  // namespace kk

namespace metal {
KK_FN void threadgroup_barrier(int = 0) { kk::rt::barrier(kk::rt::AT_BARRIER); }
KK_FN void simdgroup_barrier(int = 0) { kk::rt::barrier(kk::rt::AT_SIMD_BARRIER); }
KK_FN void atomic_thread_fence(int = 0, memory_order = memory_order_seq_cst, thread_scope = thread_scope_device) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
}  // namespace metal
