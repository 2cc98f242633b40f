//! MSL 6.2 - 6.6, 6.8: common, integer, relational, math, matrix and
//! geometric functions, per dtype, against Rust's f64 / i128 arithmetic.

use std::f64::consts::PI;

use kernelkit::{DType, Device};

use super::*;

type F1 = fn(f64) -> f64;

/// Unary float functions: (name, reference, lowest input, highest input).
const UNARY: &[(&str, F1, f64, f64)] = &[
    ("exp", f64::exp, -3.0, 3.0),
    ("exp2", f64::exp2, -3.0, 3.0),
    ("exp10", |x| 10f64.powf(x), -2.0, 2.0),
    ("expm1", f64::exp_m1, -1.0, 1.0),
    ("log", f64::ln, 0.1, 9.0),
    ("log2", f64::log2, 0.1, 9.0),
    ("log10", f64::log10, 0.1, 9.0),
    ("log1p", f64::ln_1p, -0.5, 5.0),
    ("sqrt", f64::sqrt, 0.0, 9.0),
    ("rsqrt", |x| 1.0 / x.sqrt(), 0.25, 9.0),
    ("cbrt", f64::cbrt, -8.0, 8.0),
    ("sin", f64::sin, -3.0, 3.0),
    ("cos", f64::cos, -3.0, 3.0),
    ("tan", f64::tan, -1.2, 1.2),
    ("sinpi", |x| (PI * x).sin(), -0.9, 0.9),
    ("cospi", |x| (PI * x).cos(), -0.4, 0.4),
    ("asin", f64::asin, -0.95, 0.95),
    ("acos", f64::acos, -0.95, 0.95),
    ("atan", f64::atan, -4.0, 4.0),
    ("sinh", f64::sinh, -2.0, 2.0),
    ("cosh", f64::cosh, -2.0, 2.0),
    ("tanh", f64::tanh, -2.0, 2.0),
    ("asinh", f64::asinh, -3.0, 3.0),
    ("acosh", f64::acosh, 1.1, 5.0),
    ("atanh", f64::atanh, -0.9, 0.9),
    ("floor", f64::floor, -3.3, 3.3),
    ("ceil", f64::ceil, -3.3, 3.3),
    ("trunc", f64::trunc, -3.3, 3.3),
    ("round", f64::round, -3.5, 3.5),
    ("rint", f64::round_ties_even, -3.5, 3.5),
    ("fract", |x| x - x.floor(), -3.3, 3.3),
    ("fabs", f64::abs, -3.0, 3.0),
    ("abs", f64::abs, -3.0, 3.0),
    (
        "sign",
        |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        },
        -2.0,
        2.0,
    ),
    ("saturate", |x| x.clamp(0.0, 1.0), -0.5, 1.5),
];

/// 16 inputs per row, spread over its domain; the rounding functions also
/// get exact halves.
fn unary_inputs(lo: f64, hi: f64, name: &str) -> Vec<f64> {
    let mut v: Vec<f64> = (0..16)
        .map(|k| lo + (hi - lo) * (k as f64 + 0.5) / 16.0)
        .collect();
    if matches!(name, "round" | "rint") {
        v[..6].copy_from_slice(&[-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]);
    }
    v
}

/// Every unary math function in metal::, metal::fast:: and
/// metal::precise::, for float32, float16, bfloat16 and float64.
pub fn unary_math_functions_per_dtype(device: Device) {
    const PER: usize = 16;
    for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
        for ns in ["metal", "metal::fast", "metal::precise"] {
            let cases: Vec<String> = UNARY
                .iter()
                .map(|(n, ..)| format!("r = {ns}::{n}(x);"))
                .collect();
            let body = format!(
                "uint i = thread_position_in_grid.x;\nT x = inp[i];\nT r = T(0);\n{}out[i] = r;",
                switch("i / 16", &cases)
            );
            let mut xs = Vec::new();
            let mut labels = Vec::new();
            for (name, _, lo, hi) in UNARY {
                for x in unary_inputs(*lo, *hi, name) {
                    xs.push(round_to(x, dtype));
                    labels.push(format!("{ns}::{name}({x}) [{dtype:?}]"));
                }
            }
            let n = xs.len();
            let out = Run::new("unary_math", body)
                .input("inp", array_f64(&device, &xs, dtype))
                .output("out", n, dtype)
                .template("T", dtype)
                .grid([n as u64, 1, 1], [64, 1, 1])
                .run(&device);
            let want: Vec<f64> = (0..n)
                .map(|i| round_to(UNARY[i / PER].1(xs[i]), dtype))
                .collect();
            let fast = ns == "metal::fast" && dtype == DType::F32;
            check(
                &format!("unary {ns} {dtype:?}"),
                &labels,
                &floats(&out[0]),
                &want,
                |i| {
                    let name = UNARY[i / PER].0;
                    match dtype {
                        // Approximations: CUDA's fast intrinsics, and the C
                        // library's float functions (a few ulp).
                        DType::F32 if fast => Tol::Close {
                            rel: 3e-5,
                            abs: 3e-6,
                        },
                        DType::F32 => Tol::Close {
                            rel: 1e-6,
                            abs: if matches!(
                                name,
                                "sinpi" | "cospi" | "sin" | "cos" | "tan" | "expm1" | "log1p"
                            ) {
                                1e-7
                            } else {
                                1e-30
                            },
                        },
                        DType::F64 => Tol::Close {
                            rel: 1e-13,
                            abs: 1e-15,
                        },
                        d => Tol::of(d),
                    }
                },
            );
        }
    }
}

type F2 = fn(f64, f64) -> f64;

/// Binary float functions: (Metal call with x, y; reference).
const BINARY: &[(&str, F2)] = &[
    ("pow(x, y)", f64::powf),
    ("powr(x, y)", f64::powf),
    ("atan2(x, y)", f64::atan2),
    ("fmod(x, y)", |x, y| x % y),
    ("fmax(x, y)", f64::max),
    ("fmin(x, y)", f64::min),
    ("max(x, y)", f64::max),
    ("min(x, y)", f64::min),
    ("copysign(x, y)", f64::copysign),
    ("fdim(x, y)", |x, y| if x > y { x - y } else { 0.0 }),
    ("hypot(x, y)", f64::hypot),
    ("step(y, x)", |x, y| if x < y { 0.0 } else { 1.0 }),
    ("divide(x, y)", |x, y| x / y),
    ("fma(x, y, x)", |x, y| x.mul_add(y, x)),
    ("clamp(x, T(0.25), T(1.5))", |x, _| x.clamp(0.25, 1.5)),
    ("mix(x, y, T(0.25))", |x, y| x + (y - x) * 0.25),
    ("smoothstep(T(0.5), T(2.5), x)", |x, _| {
        let t = ((x - 0.5) / 2.0).clamp(0.0, 1.0);
        t * t * (3.0 - 2.0 * t)
    }),
    ("select(x, y, x < y)", |x, y| if x < y { y } else { x }),
    ("fmax3(x, y, T(1))", |x, y| x.max(y).max(1.0)),
    ("fmin3(x, y, T(1))", |x, y| x.min(y).min(1.0)),
    ("fmedian3(x, y, T(1))", |x, y| {
        let mut v = [x, y, 1.0];
        v.sort_by(f64::total_cmp);
        v[1]
    }),
];

/// Binary and ternary float functions (common and math chapters), per dtype.
pub fn binary_and_ternary_functions_per_dtype(device: Device) {
    const PER: usize = 12;
    // Positive x (pow, powr), y away from zero (fmod, divide).
    let pairs: Vec<(f64, f64)> = (0..PER)
        .map(|k| {
            (
                0.25 + 0.375 * k as f64,
                if k % 2 == 0 {
                    0.75 + 0.25 * k as f64
                } else {
                    -1.25 - 0.125 * k as f64
                },
            )
        })
        .collect();
    for dtype in [DType::F32, DType::F16, DType::BF16, DType::F64] {
        let cases: Vec<String> = BINARY
            .iter()
            .map(|(c, _)| format!("r = metal::{c};"))
            .collect();
        let body = format!(
            "uint i = thread_position_in_grid.x;\nT x = a[i];\nT y = b[i];\nT r = T(0);\n{}out[i] = r;",
            switch("i / 12", &cases)
        );
        let (mut xs, mut ys, mut labels) = (Vec::new(), Vec::new(), Vec::new());
        for (call, _) in BINARY {
            for &(x, y) in &pairs {
                let y = if call.starts_with("pow") { y.abs() } else { y };
                xs.push(round_to(x, dtype));
                ys.push(round_to(y, dtype));
                labels.push(format!("{call} x={x} y={y} [{dtype:?}]"));
            }
        }
        let n = xs.len();
        let out = Run::new("binary_math", body)
            .input("a", array_f64(&device, &xs, dtype))
            .input("b", array_f64(&device, &ys, dtype))
            .output("out", n, dtype)
            .template("T", dtype)
            .grid([n as u64, 1, 1], [64, 1, 1])
            .run(&device);
        let want: Vec<f64> = (0..n)
            .map(|i| round_to(BINARY[i / PER].1(xs[i], ys[i]), dtype))
            .collect();
        check(
            &format!("binary {dtype:?}"),
            &labels,
            &floats(&out[0]),
            &want,
            |i| match dtype {
                DType::F32 if BINARY[i / PER].0.starts_with("pow") => Tol::Close {
                    rel: 2e-6,
                    abs: 1e-30,
                },
                DType::F32 => Tol::Close {
                    rel: 5e-7,
                    abs: 1e-30,
                },
                DType::F64 => Tol::Close {
                    rel: 1e-14,
                    abs: 1e-300,
                },
                d => Tol::of(d),
            },
        );
    }
}

type I2 = fn(i128, i128, u32, bool) -> i128;

/// Integer functions: (Metal call with x, y; reference on (x, y, bits,
/// signed)). Results wrap into the type.
const INTEGER: &[(&str, I2)] = &[
    ("clz(x)", |x, _, b, _| {
        (x & mask(b)).leading_zeros() as i128 - (128 - b as i128)
    }),
    ("ctz(x)", |x, _, b, _| {
        if x & mask(b) == 0 {
            b as i128
        } else {
            (x & mask(b)).trailing_zeros() as i128
        }
    }),
    ("popcount(x)", |x, _, b, _| {
        (x & mask(b)).count_ones() as i128
    }),
    ("reverse_bits(x)", |x, _, b, _| {
        let u = x & mask(b);
        (0..b).fold(0i128, |r, i| r | (((u >> i) & 1) << (b - 1 - i)))
    }),
    ("abs(x)", |x, _, _, _| x.abs()),
    ("absdiff(x, y)", |x, y, _, _| (x - y).abs()),
    ("addsat(x, y)", |x, y, b, s| saturate(x + y, b, s)),
    ("subsat(x, y)", |x, y, b, s| saturate(x - y, b, s)),
    ("hadd(x, y)", |x, y, _, _| (x + y) >> 1),
    ("rhadd(x, y)", |x, y, _, _| (x + y + 1) >> 1),
    ("mulhi(x, y)", |x, y, b, s| {
        if s {
            (x * y) >> b
        } else {
            ((x as u128 * y as u128) >> b) as i128
        }
    }),
    ("rotate(x, y)", |x, y, b, _| {
        let u = x & mask(b);
        let s = ((y & mask(b)) % b as i128) as u32;
        ((u << s) | (u >> ((b - s) % b))) & mask(b)
    }),
    ("min(x, y)", |x, y, _, _| x.min(y)),
    ("max(x, y)", |x, y, _, _| x.max(y)),
    // T(-3) wraps for unsigned types: lo > hi, and min(max(x, lo), hi) = hi.
    ("clamp(x, T(-3), T(100))", |x, _, b, s| {
        x.max(wrap(-3, b, s)).min(100)
    }),
    ("extract_bits(x, 2u, 5u)", |x, _, _, s| {
        let f = ((x & mask(64)) >> 2) & 31;
        if s && (f >> 4) & 1 == 1 {
            f - 32
        } else {
            f
        }
    }),
    ("insert_bits(x, y, 3u, 4u)", |x, y, _, _| {
        (x & !(15 << 3)) | ((y & 15) << 3)
    }),
    ("madsat(x, y, T(1))", |x, y, b, s| {
        if s {
            saturate(x * y + 1, b, s)
        } else {
            (x as u128 * y as u128 + 1).min(mask(b) as u128) as i128
        }
    }),
];

fn mask(bits: u32) -> i128 {
    (1i128 << bits) - 1
}

fn saturate(v: i128, bits: u32, signed: bool) -> i128 {
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, mask(bits))
    };
    v.clamp(lo, hi)
}

/// Wraps `v` into the integer dtype.
fn wrap(v: i128, bits: u32, signed: bool) -> i128 {
    let u = v & mask(bits);
    if signed && (u >> (bits - 1)) & 1 == 1 {
        u - (1i128 << bits)
    } else {
        u
    }
}

/// Every integer function (MSL 6.3) for every integer dtype.
pub fn integer_functions_per_dtype(device: Device) {
    const PER: usize = 10;
    let types = [
        (DType::I8, 8, true),
        (DType::U8, 8, false),
        (DType::I16, 16, true),
        (DType::U16, 16, false),
        (DType::I32, 32, true),
        (DType::U32, 32, false),
        (DType::I64, 64, true),
        (DType::U64, 64, false),
    ];
    for (dtype, bits, signed) in types {
        let max = if signed {
            (1i128 << (bits - 1)) - 1
        } else {
            mask(bits)
        };
        let min = if signed { -(1i128 << (bits - 1)) } else { 0 };
        // Edge values (saturation, high halves) and ordinary ones.
        let xs0: [i128; PER] = [
            0,
            1,
            5,
            max,
            min,
            max - 3,
            100,
            if signed { -7 } else { 77 },
            12,
            3,
        ];
        let ys0: [i128; PER] = [
            0,
            3,
            2,
            1,
            if signed { -1 } else { 9 },
            max,
            27,
            4,
            if signed { -100 } else { 200 },
            7,
        ];
        let cases: Vec<String> = INTEGER
            .iter()
            .map(|(c, _)| format!("r = metal::{c};"))
            .collect();
        let body = format!(
            "uint i = thread_position_in_grid.x;\nT x = a[i];\nT y = b[i];\nT r = T(0);\n{}out[i] = r;",
            switch("i / 10", &cases)
        );
        let (mut xs, mut ys, mut labels) = (Vec::new(), Vec::new(), Vec::new());
        for (call, _) in INTEGER {
            for k in 0..PER {
                xs.push(xs0[k]);
                ys.push(ys0[k]);
                labels.push(format!("{call} x={} y={} [{dtype:?}]", xs0[k], ys0[k]));
            }
        }
        let n = xs.len();
        let out = Run::new("integer_fns", body)
            .input("a", array_int(&device, &xs, dtype))
            .input("b", array_int(&device, &ys, dtype))
            .output("out", n, dtype)
            .template("T", dtype)
            .grid([n as u64, 1, 1], [64, 1, 1])
            .run(&device);
        let want: Vec<i128> = (0..n)
            .map(|i| wrap(INTEGER[i / PER].1(xs[i], ys[i], bits, signed), bits, signed))
            .collect();
        check_ints(
            &format!("integer {dtype:?}"),
            &labels,
            &ints(&out[0]),
            &want,
        );
    }
}

/// Relational functions (MSL 6.4) on scalars and vectors, NaN and
/// infinities included.
pub fn relational_functions(device: Device) {
    let body = "uint i = thread_position_in_grid.x;\n\
        float x = a[i];\n\
        float4 v = float4(x, -x, x * 2.0f, 1.0f);\n\
        uint o = i * 12;\n\
        out[o + 0] = isnan(x); out[o + 1] = isinf(x); out[o + 2] = isfinite(x);\n\
        out[o + 3] = isnormal(x); out[o + 4] = signbit(x);\n\
        out[o + 5] = isordered(x, 1.0f); out[o + 6] = isunordered(x, 1.0f);\n\
        out[o + 7] = all(v > 0.0f); out[o + 8] = any(v > 0.0f);\n\
        out[o + 9] = all(isfinite(v)); out[o + 10] = any(isnan(v));\n\
        out[o + 11] = select(7, 9, x > 0.0f) == 9;";
    let xs = [
        1.5f32,
        -2.0,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1e-40,
        -1e-40,
        3e38,
    ];
    let n = xs.len();
    let out = Run::new("relational", body)
        .input("a", device.array_from_slice(&xs, [n]).unwrap())
        .output("out", n * 12, DType::Bool)
        .grid([n as u64, 1, 1], [n as u64, 1, 1])
        .run(&device);
    let mut want = Vec::new();
    let mut labels = Vec::new();
    for &x in &xs {
        let v = [x, -x, x * 2.0, 1.0];
        let r = [
            x.is_nan(),
            x.is_infinite(),
            x.is_finite(),
            x.is_normal(),
            x.is_sign_negative(),
            !x.is_nan(),
            x.is_nan(),
            v.iter().all(|&c| c > 0.0),
            v.iter().any(|&c| c > 0.0),
            v.iter().all(|c| c.is_finite()),
            v.iter().any(|c| c.is_nan()),
            x > 0.0,
        ];
        for (k, b) in r.into_iter().enumerate() {
            want.push(b as i128);
            labels.push(format!("row {k} of x = {x:e}"));
        }
    }
    check_ints("relational", &labels, &ints(&out[0]), &want);
}

/// Geometric functions (MSL 6.8) and matrices (2.3, 6.6), float32 and half.
pub fn geometric_and_matrix_functions(device: Device) {
    for dtype in [DType::F32, DType::F16] {
        let ty = metal_type(dtype);
        let body = format!(
            "uint i = thread_position_in_grid.x;\n\
             {ty}3 p = {ty}3(a[3 * i], a[3 * i + 1], a[3 * i + 2]);\n\
             {ty}3 q = {ty}3(a[3 * i + 2], {ty}(1), a[3 * i]);\n\
             {ty}4 p4 = {ty}4(p, {ty}(2));\n\
             {ty}3 c = cross(p, q);\n\
             {ty}3 nrm = normalize(p);\n\
             {ty}3 rf = reflect(p, {ty}3(0, 1, 0));\n\
             {ty}3x3 m = {ty}3x3(p, q, c);\n\
             {ty}3 mv = m * {ty}3(1, 2, 3);\n\
             {ty}3 vm = {ty}3(1, 2, 3) * m;\n\
             {ty}3x3 mt = transpose(m);\n\
             uint o = i * 16;\n\
             out[o + 0] = dot(p, q); out[o + 1] = length(p); out[o + 2] = length_squared(p4);\n\
             out[o + 3] = distance(p, q); out[o + 4] = c.x; out[o + 5] = c.y; out[o + 6] = c.z;\n\
             out[o + 7] = nrm.x; out[o + 8] = rf.y; out[o + 9] = mv.x; out[o + 10] = mv.z;\n\
             out[o + 11] = vm.y; out[o + 12] = mt[0][1]; out[o + 13] = determinant(m);\n\
             out[o + 14] = faceforward(p, q, p).x; out[o + 15] = distance_squared(p4, {ty}4(q, {ty}(0)));"
        );
        let pts: Vec<[f64; 3]> = vec![
            [1.0, 2.0, 0.5],
            [-1.5, 0.25, 2.0],
            [0.75, -1.0, -0.5],
            [2.0, 0.5, 1.25],
        ];
        let a: Vec<f64> = pts.iter().flatten().copied().collect();
        let n = pts.len();
        let out = Run::new("geometric", body)
            .input("a", array_f64(&device, &a, dtype))
            .output("out", n * 16, dtype)
            .grid([n as u64, 1, 1], [n as u64, 1, 1])
            .run(&device);
        let (mut want, mut labels) = (Vec::new(), Vec::new());
        for p in &pts {
            let p = p.map(|c| round_to(c, dtype));
            let q = [p[2], 1.0, p[0]];
            let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
            let c = [
                p[1] * q[2] - p[2] * q[1],
                p[2] * q[0] - p[0] * q[2],
                p[0] * q[1] - p[1] * q[0],
            ];
            let len = dot(&p, &p).sqrt();
            let d: Vec<f64> = (0..3).map(|k| p[k] - q[k]).collect();
            // m has columns p, q, c: m * v = p v0 + q v1 + c v2; v * m = (v.p, v.q, v.c).
            let mv: Vec<f64> = (0..3).map(|r| p[r] + 2.0 * q[r] + 3.0 * c[r]).collect();
            let v = [1.0, 2.0, 3.0];
            let det = p[0] * (q[1] * c[2] - q[2] * c[1]) - q[0] * (p[1] * c[2] - p[2] * c[1])
                + c[0] * (p[1] * q[2] - p[2] * q[1]);
            let p4 = [p[0], p[1], p[2], 2.0];
            let q4 = [q[0], q[1], q[2], 0.0];
            let r = [
                dot(&p, &q),
                len,
                dot(&p4, &p4),
                dot(&d, &d).sqrt(),
                c[0],
                c[1],
                c[2],
                p[0] / len,
                -p[1],
                mv[0],
                mv[2],
                dot(&v, &q),
                q[0],
                det,
                if dot(&p, &q) < 0.0 { p[0] } else { -p[0] },
                (0..4).map(|k| (p4[k] - q4[k]).powi(2)).sum(),
            ];
            for (k, x) in r.into_iter().enumerate() {
                want.push(round_to(x, dtype));
                labels.push(format!("row {k} of p = {p:?} [{dtype:?}]"));
            }
        }
        let tol = match dtype {
            DType::F32 => Tol::Close {
                rel: 2e-6,
                abs: 1e-6,
            },
            // Products and sums rounded to half at every step.
            _ => Tol::Close {
                rel: 1e-2,
                abs: 1e-2,
            },
        };
        check(
            &format!("geometric {dtype:?}"),
            &labels,
            &floats(&out[0]),
            &want,
            |_| tol,
        );
    }
}
