//! MSL 6.9.2: every SIMD-group and quad function, per dtype, with all 32
//! lanes active and with only some (lanes 0-11, every other lane, five
//! scattered lanes): the lanes that reach a call are its active set. The
//! reference below models that definition directly.

use kernelkit::{DType, Device};

use super::*;

/// Which lanes of simdgroup `sg` are active (the body's `on`).
fn active(sg: usize, lane: usize) -> bool {
    match sg {
        0 => true,
        1 => lane < 12,
        2 => lane.is_multiple_of(2),
        _ => matches!(lane, 3 | 4 | 5 | 17 | 30),
    }
}

const ON: &str = "bool on = sg == 0 || (sg == 1 && lane < 12) || (sg == 2 && lane % 2 == 0) ||\n\
                  (sg == 3 && (lane == 3 || lane == 4 || lane == 5 || lane == 17 || lane == 30));";

/// The data-carrying operations: (Metal statement producing `r`, reference).
/// The reference gets the lane, the simdgroup's active lanes, x, y (for
/// products), f (filling) and the shuffle distance d.
struct Lanes<'a> {
    lane: usize,
    on: &'a [usize],
    x: &'a [f64],
    y: &'a [f64],
    f: &'a [f64],
    d: usize,
}

impl Lanes<'_> {
    fn has(&self, l: usize) -> bool {
        self.on.contains(&l)
    }
    /// x at `s` if active, else the caller's own value (kernelkit's rule
    /// for an inactive source; undefined on a GPU).
    fn from(&self, s: usize, fill: bool) -> f64 {
        let v = if fill { self.f } else { self.x };
        if self.has(s) {
            v[s]
        } else {
            v[self.lane]
        }
    }
    fn quad(&self) -> Vec<usize> {
        let q = self.lane & !3;
        self.on
            .iter()
            .copied()
            .filter(|&l| l >= q && l < q + 4)
            .collect()
    }
}

type Reference = fn(&Lanes) -> f64;

const DATA_OPS: &[(&str, Reference, bool)] = &[
    ("simd_sum(x)", |l| l.on.iter().map(|&k| l.x[k]).sum(), false),
    (
        "simd_product(y)",
        |l| l.on.iter().map(|&k| l.y[k]).product(),
        false,
    ),
    (
        "simd_min(x)",
        |l| l.on.iter().map(|&k| l.x[k]).fold(f64::INFINITY, f64::min),
        false,
    ),
    (
        "simd_max(x)",
        |l| {
            l.on.iter()
                .map(|&k| l.x[k])
                .fold(f64::NEG_INFINITY, f64::max)
        },
        false,
    ),
    (
        "simd_prefix_inclusive_sum(x)",
        |l| l.on.iter().filter(|&&k| k <= l.lane).map(|&k| l.x[k]).sum(),
        false,
    ),
    (
        "simd_prefix_exclusive_sum(x)",
        |l| l.on.iter().filter(|&&k| k < l.lane).map(|&k| l.x[k]).sum(),
        false,
    ),
    (
        "simd_prefix_inclusive_product(y)",
        |l| {
            l.on.iter()
                .filter(|&&k| k <= l.lane)
                .map(|&k| l.y[k])
                .product()
        },
        false,
    ),
    (
        "simd_prefix_exclusive_product(y)",
        |l| {
            l.on.iter()
                .filter(|&&k| k < l.lane)
                .map(|&k| l.y[k])
                .product()
        },
        false,
    ),
    (
        "simd_shuffle(x, src[i])",
        |l| {
            // src: the next active lane, cyclically.
            let p = l.on.iter().position(|&k| k == l.lane).unwrap();
            l.x[l.on[(p + 1) % l.on.len()]]
        },
        false,
    ),
    ("simd_broadcast(x, first[i])", |l| l.x[l.on[0]], false),
    ("simd_broadcast_first(x)", |l| l.x[l.on[0]], false),
    (
        "simd_shuffle_up(x, d)",
        |l| {
            if l.lane < l.d {
                l.x[l.lane]
            } else {
                l.from(l.lane - l.d, false)
            }
        },
        false,
    ),
    (
        "simd_shuffle_down(x, d)",
        |l| {
            if l.lane + l.d >= 32 {
                l.x[l.lane]
            } else {
                l.from(l.lane + l.d, false)
            }
        },
        false,
    ),
    (
        "simd_shuffle_xor(x, d)",
        |l| l.from(l.lane ^ l.d, false),
        false,
    ),
    (
        "simd_shuffle_rotate_up(x, d)",
        |l| l.from((l.lane + 32 - l.d) % 32, false),
        false,
    ),
    (
        "simd_shuffle_rotate_down(x, d)",
        |l| l.from((l.lane + l.d) % 32, false),
        false,
    ),
    (
        "simd_shuffle_and_fill_up(x, f, d)",
        |l| {
            if l.lane >= l.d {
                l.from(l.lane - l.d, false)
            } else {
                l.from(l.lane + 32 - l.d, true)
            }
        },
        false,
    ),
    (
        "simd_shuffle_and_fill_down(x, f, d)",
        |l| {
            if l.lane + l.d < 32 {
                l.from(l.lane + l.d, false)
            } else {
                l.from(l.lane + l.d - 32, true)
            }
        },
        false,
    ),
    (
        "simd_shuffle_and_fill_up(x, f, d, (ushort)8)",
        |l| {
            let j = l.lane % 8;
            if j >= l.d {
                l.from(l.lane - l.d, false)
            } else {
                l.from(l.lane + 8 - l.d, true)
            }
        },
        false,
    ),
    (
        "simd_shuffle_and_fill_down(x, f, d, (ushort)8)",
        |l| {
            let j = l.lane % 8;
            if j + l.d < 8 {
                l.from(l.lane + l.d, false)
            } else {
                l.from(l.lane + l.d - 8, true)
            }
        },
        false,
    ),
    (
        "quad_sum(x)",
        |l| l.quad().iter().map(|&k| l.x[k]).sum(),
        false,
    ),
    (
        "quad_max(x)",
        |l| {
            l.quad()
                .iter()
                .map(|&k| l.x[k])
                .fold(f64::NEG_INFINITY, f64::max)
        },
        false,
    ),
    (
        "quad_prefix_exclusive_sum(x)",
        |l| {
            l.quad()
                .iter()
                .filter(|&&k| k < l.lane)
                .map(|&k| l.x[k])
                .sum()
        },
        false,
    ),
    (
        "quad_prefix_inclusive_product(y)",
        |l| {
            l.quad()
                .iter()
                .filter(|&&k| k <= l.lane)
                .map(|&k| l.y[k])
                .product()
        },
        false,
    ),
    (
        "quad_shuffle(x, (ushort)(3 - lane % 4))",
        |l| l.from((l.lane & !3) + 3 - l.lane % 4, false),
        false,
    ),
    ("quad_broadcast_first(x)", |l| l.x[l.quad()[0]], false),
    (
        "quad_shuffle_down(x, (ushort)1)",
        |l| {
            if l.lane % 4 == 3 {
                l.x[l.lane]
            } else {
                l.from(l.lane + 1, false)
            }
        },
        false,
    ),
    (
        "quad_shuffle_xor(x, (ushort)2)",
        |l| l.from(l.lane ^ 2, false),
        false,
    ),
    (
        "quad_shuffle_rotate_up(x, (ushort)1)",
        |l| l.from((l.lane & !3) + (l.lane + 3) % 4, false),
        false,
    ),
    // Integers only.
    (
        "simd_and(x)",
        |l| l.on.iter().fold(-1i128, |a, &k| a & l.x[k] as i128) as f64,
        true,
    ),
    (
        "simd_or(x)",
        |l| l.on.iter().fold(0i128, |a, &k| a | l.x[k] as i128) as f64,
        true,
    ),
    (
        "simd_xor(x)",
        |l| l.on.iter().fold(0i128, |a, &k| a ^ l.x[k] as i128) as f64,
        true,
    ),
    (
        "quad_or(x)",
        |l| l.quad().iter().fold(0i128, |a, &k| a | l.x[k] as i128) as f64,
        true,
    ),
];

/// Votes, as uint: (Metal expression, reference from (lane, active lanes,
/// predicate per lane)).
type Vote = fn(usize, &[usize], &[bool]) -> u64;
const VOTES: &[(&str, Vote)] = &[
    ("(uint)(ulong)simd_ballot(p)", |_, on, p| {
        on.iter().filter(|&&k| p[k]).map(|&k| 1u64 << k).sum()
    }),
    ("(uint)simd_all(p)", |_, on, p| {
        on.iter().all(|&k| p[k]) as u64
    }),
    ("(uint)simd_any(p)", |_, on, p| {
        on.iter().any(|&k| p[k]) as u64
    }),
    ("(uint)simd_is_first()", |l, on, _| (on[0] == l) as u64),
    ("(uint)(ulong)simd_active_threads_mask()", |_, on, _| {
        on.iter().map(|&k| 1u64 << k).sum()
    }),
    (
        "(uint)simd_ballot(p).all() + 2 * (uint)simd_ballot(p).any()",
        |_, on, p| on.iter().all(|&k| p[k]) as u64 + 2 * on.iter().any(|&k| p[k]) as u64,
    ),
    ("(uint)(ushort)quad_ballot(p)", |l, on, p| {
        let q = l & !3;
        on.iter()
            .filter(|&&k| k >= q && k < q + 4 && p[k])
            .map(|&k| 1u64 << (k - q))
            .sum()
    }),
    ("(uint)quad_all(p)", |l, on, p| {
        on.iter().filter(|&&k| k >> 2 == l >> 2).all(|&k| p[k]) as u64
    }),
    ("(uint)quad_any(p)", |l, on, p| {
        on.iter().filter(|&&k| k >> 2 == l >> 2).any(|&k| p[k]) as u64
    }),
    ("(uint)quad_is_first()", |l, on, _| {
        (*on.iter().find(|&&k| k >> 2 == l >> 2).unwrap() == l) as u64
    }),
];

/// Every SIMD-group and quad function on float32, half, bfloat and
/// integers, over four active sets (4 simdgroups of one 128-thread group).
pub fn simd_and_quad_functions_with_full_and_partial_lanes(device: Device) {
    const N: usize = 128;
    const SENTINEL: f64 = 77.0;
    let types = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::I16,
    ];
    for dtype in types {
        let int = !matches!(dtype, DType::F32 | DType::F16 | DType::BF16);
        let ops: Vec<_> = DATA_OPS
            .iter()
            .filter(|(_, _, int_only)| int || !int_only)
            .collect();
        let nops = ops.len();
        let nvotes = VOTES.len();
        // Values: exact in every dtype, sums of 32 exact in float32/half.
        let x: Vec<f64> = (0..N)
            .map(|i| {
                let k = ((i % 32) * 7 + i / 32) % 13;
                if int {
                    k as f64 + 1.0
                } else {
                    1.0 + 0.25 * k as f64
                }
            })
            .collect();
        let y: Vec<f64> = (0..N)
            .map(|i| if (i % 32) % 5 == 0 { 2.0 } else { 1.0 })
            .collect();
        let f: Vec<f64> = x.iter().map(|v| v + 20.0).collect();
        let mut src = vec![0u32; N];
        let mut first = vec![0u32; N];
        for sg in 0..4 {
            let on: Vec<usize> = (0..32).filter(|&l| active(sg, l)).collect();
            for (p, &l) in on.iter().enumerate() {
                src[sg * 32 + l] = on[(p + 1) % on.len()] as u32;
                first[sg * 32 + l] = on[0] as u32;
            }
        }
        let stmts: Vec<String> = ops
            .iter()
            .enumerate()
            .map(|(k, (e, ..))| format!("  out[o + {k}] = {e};\n"))
            .collect();
        let votes: Vec<String> = VOTES
            .iter()
            .enumerate()
            .map(|(k, (e, _))| format!("  votes[v + {k}] = {e};\n"))
            .collect();
        let body = format!(
            "uint i = thread_position_in_grid.x;\n\
             uint lane = thread_index_in_simdgroup, sg = simdgroup_index_in_threadgroup;\n\
             {ON}\n\
             T x = xs[i], y = ys[i], f = fs[i];\n\
             ushort d = sg == 2 ? 2 : 1;\n\
             bool p = x > T(3);\n\
             uint o = i * {nops}, v = i * {nvotes};\n\
             if (on) {{\n{}{}}}",
            stmts.concat(),
            votes.concat()
        );
        let arr = |v: &[f64]| {
            if int {
                array_int(
                    &device,
                    &v.iter().map(|&e| e as i128).collect::<Vec<_>>(),
                    dtype,
                )
            } else {
                array_f64(&device, v, dtype)
            }
        };
        let out = Run::new("simd_table", body)
            .input("xs", arr(&x))
            .input("ys", arr(&y))
            .input("fs", arr(&f))
            .input("src", device.array_from_slice(&src, [N]).unwrap())
            .input("first", device.array_from_slice(&first, [N]).unwrap())
            .output("out", N * nops, dtype)
            .output("votes", N * nvotes, DType::U32)
            .template("T", dtype)
            .init(SENTINEL)
            .grid([N as u64, 1, 1], [N as u64, 1, 1])
            .run(&device);
        let got: Vec<f64> = if int {
            ints(&out[0]).into_iter().map(|v| v as f64).collect()
        } else {
            floats(&out[0])
        };
        let got_votes = ints(&out[1]);
        let (mut want, mut labels, mut want_votes, mut vote_labels) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for i in 0..N {
            let (sg, lane) = (i / 32, i % 32);
            let on: Vec<usize> = (0..32).filter(|&l| active(sg, l)).collect();
            let seg = |v: &[f64]| v[sg * 32..sg * 32 + 32].to_vec();
            let (xs, ys, fs) = (seg(&x), seg(&y), seg(&f));
            let pred: Vec<bool> = xs.iter().map(|&v| v > 3.0).collect();
            let lanes = Lanes {
                lane,
                on: &on,
                x: &xs,
                y: &ys,
                f: &fs,
                d: if sg == 2 { 2 } else { 1 },
            };
            for (e, r, _) in &ops {
                want.push(if active(sg, lane) {
                    round_to(r(&lanes), dtype)
                } else {
                    SENTINEL
                });
                labels.push(format!("{e} at lane {lane} of simdgroup {sg} [{dtype:?}]"));
            }
            for (e, r) in VOTES {
                want_votes.push(if active(sg, lane) {
                    r(lane, &on, &pred) as i128
                } else {
                    SENTINEL as i128
                });
                vote_labels.push(format!("{e} at lane {lane} of simdgroup {sg} [{dtype:?}]"));
            }
        }
        // Sums of up to 32 values: exact except in bfloat (8 bits), whose
        // reduction order is the backend's.
        let tol = if dtype == DType::BF16 {
            Tol::Close {
                rel: 1e-2,
                abs: 0.0,
            }
        } else {
            Tol::Exact
        };
        check(&format!("simd {dtype:?}"), &labels, &got, &want, |_| tol);
        check_ints(
            &format!("simd votes {dtype:?}"),
            &vote_labels,
            &got_votes,
            &want_votes,
        );
    }
}

/// SIMD-group functions on vectors (per component) and on 64-bit and bool
/// values, in a partial simdgroup (lanes 0-11).
pub fn simd_functions_on_vectors_and_wide_values(device: Device) {
    let body = "uint lane = thread_index_in_simdgroup;\n\
        if (lane < 12) {\n\
          float4 v = float4(lane, 2 * lane, 1.5f, -float(lane));\n\
          half4 h = half4(v);\n\
          float4 s = simd_sum(v);\n\
          float4 ps = simd_prefix_inclusive_sum(v);\n\
          half4 hs = simd_sum(h);\n\
          float4 dn = simd_shuffle_down(v, (ushort)3);\n\
          ulong w = simd_shuffle(((ulong)lane << 40) | lane, (ushort)(11 - lane));\n\
          bool b = simd_shuffle_xor(lane % 3 == 0, (ushort)1);\n\
          long m = simd_max((long)lane * -1000000000000l);\n\
          uint o = lane * 12;\n\
          out[o + 0] = s.y; out[o + 1] = s.w; out[o + 2] = ps.x; out[o + 3] = ps.z;\n\
          out[o + 4] = hs.x; out[o + 5] = dn.y; out[o + 6] = (float)(w >> 40); out[o + 7] = (float)(w & 0xff);\n\
          out[o + 8] = b; out[o + 9] = (float)(m / 1000000000000l); out[o + 10] = simd_min(v).w;\n\
          out[o + 11] = (float)simd_sum((uint)lane);\n\
        }";
    let out = Run::new("simd_vectors", body)
        .output("out", 32 * 12, DType::F32)
        .init(-1.0)
        .grid([32, 1, 1], [32, 1, 1])
        .run(&device);
    let (mut want, mut labels) = (Vec::new(), Vec::new());
    let s: f64 = (0..12).map(|l| l as f64).sum();
    for lane in 0..32usize {
        let l = lane as f64;
        let r: [f64; 12] = if lane < 12 {
            let dn = if lane + 3 < 12 {
                2.0 * (l + 3.0)
            } else {
                2.0 * l
            };
            let partner = lane ^ 1;
            [
                2.0 * s,
                -s,
                (0..=lane).map(|k| k as f64).sum(),
                1.5 * (lane + 1) as f64,
                s,
                dn,
                (11 - lane) as f64,
                (11 - lane) as f64,
                (partner < 12 && partner % 3 == 0) as u8 as f64
                    + if partner >= 12 {
                        (lane % 3 == 0) as u8 as f64
                    } else {
                        0.0
                    },
                0.0,
                -11.0,
                s,
            ]
        } else {
            [-1.0; 12]
        };
        for (k, v) in r.into_iter().enumerate() {
            want.push(v);
            labels.push(format!("row {k} at lane {lane}"));
        }
    }
    check("simd vectors", &labels, &floats(&out[0]), &want, |_| {
        Tol::Exact
    });
}

/// SIMD-group matrices (MSL 6.7): loads (strided, at an origin,
/// transposed), multiply-accumulate, changes through thread_elements()
/// seen by the next product, stores (plain and transposed).
pub fn simdgroup_matrices(device: Device) {
    for dtype in [DType::F32, DType::F16] {
        let t = metal_type(dtype);
        let body = format!(
            "simdgroup_{t}8x8 a, b, c, d, f;\n\
             simdgroup_load(a, A, 8);\n\
             simdgroup_load(b, B, 16, ulong2(8, 0));\n\
             simdgroup_load(c, C, 8, ulong2(0, 0), true);\n\
             simdgroup_multiply_accumulate(d, a, b, c);\n\
             d.thread_elements() *= {t}(2);\n\
             simdgroup_multiply(f, d, simdgroup_{t}8x8({t}(1)));\n\
             simdgroup_store(f, out, 8);\n\
             simdgroup_store(d, out2, 16, ulong2(8, 0), true);"
        );
        let a: Vec<f64> = (0..64).map(|i| ((i * 5) % 9) as f64 * 0.25 - 1.0).collect();
        let b: Vec<f64> = (0..128)
            .map(|i| ((i * 7) % 11) as f64 * 0.125 - 0.5)
            .collect();
        let c: Vec<f64> = (0..64).map(|i| (i % 5) as f64 * 0.5).collect();
        let out = Run::new("simdgroup_matrix", body)
            .input("A", array_f64(&device, &a, dtype))
            .input("B", array_f64(&device, &b, dtype))
            .input("C", array_f64(&device, &c, dtype))
            .output("out", 64, dtype)
            .output("out2", 128, dtype)
            .init(0.0)
            .grid([32, 1, 1], [32, 1, 1])
            .run(&device);
        // d = A * B[:, 8:16] + C^T, doubled.
        let d = |i: usize, j: usize| {
            let s: f64 = (0..8).map(|k| a[i * 8 + k] * b[k * 16 + 8 + j]).sum();
            2.0 * (s + c[j * 8 + i])
        };
        let want: Vec<f64> = (0..64).map(|p| round_to(d(p / 8, p % 8), dtype)).collect();
        let labels: Vec<String> = (0..64)
            .map(|p| format!("f[{}][{}] [{dtype:?}]", p / 8, p % 8))
            .collect();
        let tol = if dtype == DType::F32 {
            Tol::Close {
                rel: 1e-6,
                abs: 1e-6,
            }
        } else {
            Tol::Close {
                rel: 2e-2,
                abs: 2e-2,
            }
        };
        check(
            "simdgroup product",
            &labels,
            &floats(&out[0]),
            &want,
            |_| tol,
        );
        // out2[r][8 + c] = d[c][r] (stored transposed into the right half).
        let want2: Vec<f64> = (0..128)
            .map(|p| {
                if p % 16 < 8 {
                    0.0
                } else {
                    round_to(d(p % 16 - 8, p / 16), dtype)
                }
            })
            .collect();
        let labels2: Vec<String> = (0..128)
            .map(|p| format!("out2[{}][{}] [{dtype:?}]", p / 16, p % 16))
            .collect();
        check(
            "simdgroup store",
            &labels2,
            &floats(&out[1]),
            &want2,
            |_| tol,
        );
    }
}
