//! MSL 2 and 3: scalar and vector types, constructors, swizzles, operators,
//! packed vectors and pointer casts, as_type, numeric_limits and the math
//! constants, half and bfloat arithmetic as Metal types it.

use kernelkit::{bf16, f16, DType, Device};

use super::*;

/// Vector constructors (broadcast, components, vectors inside), swizzles
/// read and written, arithmetic with vectors and scalars, compound
/// assignment, comparisons, per element type.
pub fn vectors_constructors_swizzles_and_operators(device: Device) {
    let types = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::U32,
        DType::I16,
        DType::U8,
    ];
    for dtype in types {
        let t = metal_type(dtype);
        let float = matches!(dtype, DType::F32 | DType::F16 | DType::BF16);
        // Rows of (Metal expression of T, reference); inputs a = 6, b = 3, c = 2.
        let mut rows: Vec<(String, i128)> = vec![
            (format!("{t}4(a, b, c, T(1)).z"), 2),
            (format!("{t}4(a).w"), 6),
            (format!("{t}4({t}2(a, b), {t}2(c, a)).w"), 6),
            (format!("{t}3({t}2(a, b), c).y"), 3),
            (format!("{t}4(b, {t}3(a, c, b)).y"), 6),
            (format!("{t}4(a, b, c, T(1)).zyx.x"), 2),
            (format!("{t}4(a, b, c, T(1)).wzyx.y"), 2),
            (format!("{t}4(a, b, c, T(1)).xxyy.z"), 3),
            (format!("{t}4(a, b, c, T(1)).rgba.g"), 3),
            (format!("{t}4(a, b, c, T(1)).bgr.x"), 2),
            (format!("({t}2(a, b) + {t}2(c, c)).y"), 5),
            (format!("({t}3(a, b, c) * T(2)).z"), 4),
            (format!("(T(2) * {t}3(a, b, c)).x"), 12),
            (format!("({t}2(a, b) - c).x"), 4),
            (format!("({t}2(a, b) * {t}2(b, c)).y"), 6),
            (format!("({t}2(a, b) / {t}2(b, b)).x"), 2),
            (format!("({t}4(a) + 1).x"), 7),
            (format!("[&] {{ {t}4 v = {t}4(a, b, c, T(1)); v.xy = v.yx; return v.x; }}()"), 3),
            (format!("[&] {{ {t}4 v = {t}4(a, b, c, T(1)); v.zw += {t}2(T(1), T(2)); return v.w; }}()"), 3),
            (format!("[&] {{ {t}4 v = {t}4(a, b, c, T(1)); v.bgr = {t}3(T(7), T(8), T(9)); return v.r; }}()"), 9),
            (format!("[&] {{ {t}3 v = {t}3(a); v *= T(2); v += {t}3(T(1), T(2), T(3)); return v.y; }}()"), 14),
            (format!("[&] {{ {t}2 v = {t}2(a, b); v.y = c; v[0] = T(5); return T(v.x + v.y); }}()"), 7),
            (format!("[&] {{ {t}2 v = {t}2(a, b); ++v; v++; return v.y; }}()"), 5),
            (format!("T(all({t}3(a, b, c) > {t}3(c, c, T(1))))"), 1),
            (format!("T(any({t}2(a, b) == {t}2(c, c)))"), 0),
            (format!("T(({t}2(a, b) != b).y)"), 0),
            (format!("T(all(!({t}2(a, b) < c)))"), 1),
            (format!("[&] {{ {t}4 v = b; return v.y; }}()"), 3),
        ];
        if !float {
            rows.push((format!("({t}2(a, b) % {t}2(T(4), c)).x"), 2));
            rows.push((format!("({t}2(a, b) & T(2)).y"), 2));
            rows.push((format!("({t}2(a, b) | T(1)).x"), 7));
            rows.push((format!("({t}2(a, b) ^ {t}2(c, c)).y"), 1));
            rows.push((format!("({t}2(a, b) << 1).y"), 6));
            rows.push((format!("({t}2(a, b) >> 1).x"), 3));
        }
        let cases: Vec<String> = rows.iter().map(|(e, _)| format!("r = T({e});")).collect();
        let body = format!(
            "uint i = thread_position_in_grid.x;\nT a = inp[0], b = inp[1], c = inp[2];\nT r = T(0);\n{}out[i] = r;",
            switch("i", &cases)
        );
        let n = rows.len();
        let inp = if float {
            array_f64(&device, &[6.0, 3.0, 2.0], dtype)
        } else {
            array_int(&device, &[6, 3, 2], dtype)
        };
        let out = Run::new("vectors", body)
            .input("inp", inp)
            .output("out", n, dtype)
            .template("T", dtype)
            .grid([n as u64, 1, 1], [n as u64, 1, 1])
            .run(&device);
        let labels: Vec<String> = rows
            .iter()
            .map(|(e, _)| format!("{e} [{dtype:?}]"))
            .collect();
        let want: Vec<i128> = rows.iter().map(|(_, w)| *w).collect();
        let got: Vec<i128> = if float {
            floats(&out[0]).into_iter().map(|v| v as i128).collect()
        } else {
            ints(&out[0])
        };
        check_ints(&format!("vectors {dtype:?}"), &labels, &got, &want);
    }
    // A member named like a swizzle in the user's own struct stays a member
    // (in that text; its vectors then spell the swizzle out).
    let out = Run::new(
        "own_members",
        "struct Pair { float xy; float zw; } p;\n\
             p.xy = inp[0]; p.zw = inp[1];\n\
             float2 v = float2(inp[0], inp[1]);\n\
             out[0] = p.xy + p.zw + v.yx.x;",
    )
    .input("inp", device.array_from_slice(&[6.0f32, 3.0], [2]).unwrap())
    .output("out", 1, DType::F32)
    .run(&device);
    assert_eq!(out[0].to_vec::<f32>().unwrap(), [12.0]);
}

/// Sizes and alignments as in Metal (a 3-vector takes a 4-vector's room,
/// packed ones do not), and vectors read through pointer casts.
pub fn vector_layout_and_pointer_casts(device: Device) {
    let sizes = [
        ("sizeof(float2)", 8),
        ("sizeof(float3)", 16),
        ("alignof(float3)", 16),
        ("sizeof(float4)", 16),
        ("alignof(float4)", 16),
        ("sizeof(packed_float3)", 12),
        ("alignof(packed_float3)", 4),
        ("sizeof(half3)", 8),
        ("sizeof(half4)", 8),
        ("sizeof(packed_half3)", 6),
        ("sizeof(bfloat4)", 8),
        ("sizeof(uchar3)", 4),
        ("sizeof(bool4)", 4),
        ("sizeof(int2)", 8),
        ("sizeof(ulong2)", 16),
        ("sizeof(float3x3)", 48),
        ("sizeof(metal::atomic_float)", 4),
        ("sizeof(metal::array<float, 5>)", 20),
        ("metal::array<int, 3>::size()", 3),
    ];
    let cases: Vec<String> = sizes
        .iter()
        .map(|(e, _)| format!("r = (uint)({e});"))
        .collect();
    // Reads: float4 through a float pointer; packed_float3 (stride 12) and
    // float3 (stride 16) through casts; a write through a float4 pointer.
    let body = format!(
        "uint i = thread_position_in_grid.x;\nuint r = 0;\n{}sz[i] = r;\n\
         if (i == 0) {{\n\
           const device float4* v4 = (const device float4*)inp;\n\
           const device packed_float3* p3 = (const device packed_float3*)inp;\n\
           const device float3* f3 = (const device float3*)inp;\n\
           float3 q = p3[1];\n\
           vals[0] = v4[1].y; vals[1] = q.x; vals[2] = p3[2].z; vals[3] = f3[1].z;\n\
           vals[4] = dot(float3(p3[0]), f3[0]);\n\
           *(device float4*)(vals + 8) = v4[0] * 2.0f;\n\
         }}",
        switch("i", &cases)
    );
    let inp: Vec<f32> = (0..16).map(|k| k as f32).collect();
    let n = sizes.len();
    let out = Run::new("layout", body)
        .input("inp", device.array_from_slice(&inp, [16]).unwrap())
        .output("sz", n, DType::U32)
        .output("vals", 12, DType::F32)
        .init(0.0)
        .grid([n as u64, 1, 1], [n as u64, 1, 1])
        .run(&device);
    let labels: Vec<String> = sizes.iter().map(|(e, _)| e.to_string()).collect();
    check_ints(
        "sizes",
        &labels,
        &ints(&out[0]),
        &sizes.iter().map(|(_, s)| *s).collect::<Vec<_>>(),
    );
    let vals = floats(&out[1]);
    // float4[1].y = 5; packed_float3[1].x = 3; packed_float3[2].z = 8;
    // float3[1].z = 6; dot(0,1,2 . 0,1,2) = 5; float4[0] * 2 = 0, 2, 4, 6.
    let want = [5.0, 3.0, 8.0, 6.0, 5.0, 0.0, 0.0, 0.0, 0.0, 2.0, 4.0, 6.0];
    let labels: Vec<String> = (0..12).map(|k| format!("vals[{k}]")).collect();
    check("pointer casts", &labels, &vals, &want, |_| Tol::Exact);
}

/// as_type (bits), numeric_limits for every type, and the constants.
pub fn as_type_numeric_limits_and_constants(device: Device) {
    // (expression as double, reference)
    let rows: Vec<(&str, f64)> = vec![
        ("as_type<uint>(1.0f)", 1.0f32.to_bits() as f64),
        ("as_type<float>(0x40490fdbu)", f32::from_bits(0x4049_0fdb) as f64),
        ("as_type<ushort>(half(1.5))", f16::from_f32(1.5).to_bits() as f64),
        ("as_type<ushort>(bfloat(-2.0f))", bf16::from_f32(-2.0).to_bits() as f64),
        ("as_type<uint>(half2(half(1), half(2)))", ((f16::from_f32(2.0).to_bits() as u32) << 16 | f16::from_f32(1.0).to_bits() as u32) as f64),
        ("as_type<float2>(0x3f80000040000000ul).x", 2.0),
        ("metal::numeric_limits<float>::max()", f32::MAX as f64),
        ("metal::numeric_limits<float>::min()", f32::MIN_POSITIVE as f64),
        ("metal::numeric_limits<float>::lowest()", f32::MIN as f64),
        ("metal::numeric_limits<float>::epsilon()", f32::EPSILON as f64),
        ("metal::numeric_limits<float>::infinity()", f64::INFINITY),
        ("-metal::numeric_limits<float>::infinity()", f64::NEG_INFINITY),
        ("metal::numeric_limits<float>::quiet_NaN()", f64::NAN),
        ("metal::numeric_limits<float>::denorm_min()", f32::from_bits(1) as f64),
        ("metal::numeric_limits<half>::max()", f16::MAX.to_f64()),
        ("metal::numeric_limits<half>::min()", f16::MIN_POSITIVE.to_f64()),
        ("metal::numeric_limits<half>::lowest()", f16::MIN.to_f64()),
        ("metal::numeric_limits<half>::epsilon()", f16::EPSILON.to_f64()),
        ("metal::numeric_limits<half>::infinity()", f64::INFINITY),
        ("metal::numeric_limits<bfloat>::max()", bf16::MAX.to_f64()),
        ("metal::numeric_limits<bfloat>::lowest()", bf16::MIN.to_f64()),
        ("metal::numeric_limits<bfloat>::epsilon()", bf16::EPSILON.to_f64()),
        ("metal::numeric_limits<int>::max()", i32::MAX as f64),
        ("metal::numeric_limits<int>::min()", i32::MIN as f64),
        ("metal::numeric_limits<uint>::max()", u32::MAX as f64),
        ("metal::numeric_limits<short>::min()", i16::MIN as f64),
        ("metal::numeric_limits<ushort>::max()", u16::MAX as f64),
        ("metal::numeric_limits<char>::min()", i8::MIN as f64),
        ("metal::numeric_limits<uchar>::max()", u8::MAX as f64),
        ("(double)metal::numeric_limits<long>::max()", i64::MAX as f64),
        ("(double)metal::numeric_limits<ulong>::max()", u64::MAX as f64),
        ("metal::numeric_limits<bool>::max()", 1.0),
        ("metal::numeric_limits<int>::digits", 31.0),
        ("metal::numeric_limits<float>::digits", 24.0),
        ("metal::numeric_limits<half>::digits", 11.0),
        ("(double)metal::is_signed_v<int> + 2 * metal::is_floating_point_v<half> + 4 * metal::is_integral_v<uint>", 7.0),
        ("INFINITY", f64::INFINITY),
        ("NAN", f64::NAN),
        ("MAXFLOAT", f32::MAX as f64),
        ("FLT_MAX", f32::MAX as f64),
        ("FLT_EPSILON", f32::EPSILON as f64),
        ("HALF_MAX", f16::MAX.to_f64()),
        ("M_PI_F", std::f32::consts::PI as f64),
        ("M_E_F", std::f32::consts::E as f64),
        ("M_SQRT2_F", std::f32::consts::SQRT_2 as f64),
        ("M_LN2_F", std::f32::consts::LN_2 as f64),
        ("M_1_PI_F", std::f32::consts::FRAC_1_PI as f64),
        ("INT_MAX", i32::MAX as f64),
        ("UINT_MAX", u32::MAX as f64),
    ];
    let cases: Vec<String> = rows
        .iter()
        .map(|(e, _)| format!("r = (double)({e});"))
        .collect();
    let body = format!(
        "uint i = thread_position_in_grid.x;\ndouble r = 0;\n{}out[i] = r;",
        switch("i", &cases)
    );
    let n = rows.len();
    let out = Run::new("limits", body)
        .output("out", n, DType::F64)
        .grid([n as u64, 1, 1], [n as u64, 1, 1])
        .run(&device);
    let labels: Vec<String> = rows.iter().map(|(e, _)| e.to_string()).collect();
    let want: Vec<f64> = rows.iter().map(|(_, w)| *w).collect();
    check("limits", &labels, &floats(&out[0]), &want, |_| Tol::Exact);
}

/// half and bfloat as Metal types them: with themselves or an integer they
/// give themselves (rounded), with float they give float; a conditional
/// mixing them and their negation is well-formed; `h` literals are half.
pub fn half_and_bfloat_arithmetic(device: Device) {
    for dtype in [DType::F16, DType::BF16] {
        let t = metal_type(dtype);
        // (expression, its reference on a = 1.1, b = 3 (in the dtype))
        let a = round_to(1.1, dtype);
        let rows: Vec<(String, f64)> = vec![
            ("(float)(x * y)".to_string(), round_to(a * 3.0, dtype)),
            ("(float)(x + 2)".to_string(), round_to(a + 2.0, dtype)),
            ("x * 2.5f".to_string(), a * 2.5),
            ("(float)(-x)".to_string(), -a),
            ("(float)(c ? x : -x)".to_string(), -a),
            (
                "(float)(c ? -y : x * y)".to_string(),
                round_to(a * 3.0, dtype),
            ),
            (format!("(float)({t}(0.5h) + x)"), round_to(a + 0.5, dtype)),
            ("(float)metal::max(x, y)".to_string(), 3.0),
            ("(float)metal::exp(x)".to_string(), round_to(a.exp(), dtype)),
            ("x < y ? 1.0f : 0.0f".to_string(), 1.0),
            // Conditionals mixing the class type with another: Metal's type.
            ("c ? x : 0.0f".to_string(), 0.0),
            ("(float)(!c ? x : 2)".to_string(), a),
            ("c ? 1.5f : y".to_string(), 3.0),
            ("(float)(!c ? x : 1e30)".to_string(), a),
            (
                "(float)(sizeof(c ? x : 0.0f) * 10 + sizeof(c ? x : 2))".to_string(),
                42.0,
            ),
            (
                "(float)(sizeof(x * y) + sizeof(x * 2) * 10 + sizeof(x * 2.0f) * 100)".to_string(),
                422.0,
            ),
            (
                format!("[&] {{ {t} z = x; z += y; z *= 2; return (float)z; }}()"),
                round_to(round_to(a + 3.0, dtype) * 2.0, dtype),
            ),
        ];
        let cases: Vec<String> = rows.iter().map(|(e, _)| format!("r = {e};")).collect();
        let body = format!(
            "uint i = thread_position_in_grid.x;\n{t} x = inp[0], y = inp[1];\nbool c = inp[2] > {t}(0);\nfloat r = 0;\n{}out[i] = r;",
            switch("i", &cases)
        );
        let n = rows.len();
        let out = Run::new("small_floats", body)
            .input("inp", array_f64(&device, &[1.1, 3.0, -1.0], dtype))
            .output("out", n, DType::F32)
            .grid([n as u64, 1, 1], [n as u64, 1, 1])
            .run(&device);
        let labels: Vec<String> = rows
            .iter()
            .map(|(e, _)| format!("{e} [{dtype:?}]"))
            .collect();
        let want: Vec<f64> = rows.iter().map(|(_, w)| *w as f32 as f64).collect();
        check(
            &format!("small floats {dtype:?}"),
            &labels,
            &floats(&out[0]),
            &want,
            |_| Tol::Close {
                rel: 1e-6,
                abs: 0.0,
            },
        );
    }
}
