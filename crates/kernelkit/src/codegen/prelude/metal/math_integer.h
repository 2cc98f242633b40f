// ---- 6.3 Integer functions.
namespace kk {
template <class E> KK_FN int width() { return int(sizeof(E) * 8); }
template <class E> KK_FN unsigned long long ubits(E x) {
  return (unsigned long long)(typename metal::make_unsigned<E>::type)(x);
}
template <class E> KK_FN int popc64(unsigned long long u) {
  return KK_P(__builtin_popcountll(u), __popcll(u));
}
struct op_popcount { template <class E> static KK_FN E g(E x) { return E(popc64<E>(ubits(x))); } };
struct op_clz {
  template <class E> static KK_FN E g(E x) {
    unsigned long long u = ubits(x);
    if (u == 0) return E(width<E>());
    int lz = KK_P(__builtin_clzll(u), __clzll((long long)u));
    return E(lz - (64 - width<E>()));
  }
};
struct op_ctz {
  template <class E> static KK_FN E g(E x) {
    unsigned long long u = ubits(x);
    if (u == 0) return E(width<E>());
    return E(KK_P(__builtin_ctzll(u), __ffsll((long long)u) - 1));
  }
};
struct op_reverse_bits {
  template <class E> static KK_FN E g(E x) {
    unsigned long long u = ubits(x), r = 0;
    for (int i = 0; i < width<E>(); ++i) r |= ((u >> i) & 1ull) << (width<E>() - 1 - i);
    return E(r);
  }
};
// Wider arithmetic for saturation and high halves.
template <class E> KK_FN long long sx(E x) { return (long long)x; }
struct op_absdiff {
  template <class E> static KK_FN E g(E a, E b) { return a > b ? E(a - b) : E(b - a); }
};
struct op_hadd {
  template <class E> static KK_FN E g(E a, E b) { return E((a >> 1) + (b >> 1) + (a & b & E(1))); }
};
struct op_rhadd {
  template <class E> static KK_FN E g(E a, E b) { return E((a >> 1) + (b >> 1) + ((a | b) & E(1))); }
};
template <class E> KK_FN E sat(long long v) {
  const long long lo = (long long)metal::numeric_limits<E>::min(), hi = (long long)metal::numeric_limits<E>::max();
  return E(v < lo ? lo : v > hi ? hi : v);
}
struct op_addsat {
  template <class E> static KK_FN E g(E a, E b) {
    if constexpr (sizeof(E) < 8) {
      return sat<E>(sx(a) + sx(b));
    } else if constexpr (E(-1) > E(0)) {
      E r = E(a + b);
      return r < a ? metal::numeric_limits<E>::max() : r;
    } else {
      E r = E((unsigned long long)a + (unsigned long long)b);
      if (b > 0 && r < a) return metal::numeric_limits<E>::max();
      if (b < 0 && r > a) return metal::numeric_limits<E>::min();
      return r;
    }
  }
};
struct op_subsat {
  template <class E> static KK_FN E g(E a, E b) {
    if constexpr (sizeof(E) < 8) {
      return sat<E>(sx(a) - sx(b));
    } else if constexpr (E(-1) > E(0)) {
      return b > a ? E(0) : E(a - b);
    } else {
      E r = E((unsigned long long)a - (unsigned long long)b);
      if (b < 0 && r < a) return metal::numeric_limits<E>::max();
      if (b > 0 && r > a) return metal::numeric_limits<E>::min();
      return r;
    }
  }
};
struct op_mulhi {
  template <class E> static KK_FN E g(E a, E b) {
    if constexpr (sizeof(E) < 8 && E(-1) > E(0)) {
      return E(((unsigned long long)a * b) >> width<E>());
    } else if constexpr (sizeof(E) < 8) {
      return E((sx(a) * sx(b)) >> width<E>());
    } else if constexpr (E(-1) > E(0)) {
      return E(KK_P((unsigned long long)(((unsigned __int128)a * b) >> 64), __umul64hi(a, b)));
    } else {
      return E(KK_P((long long)(((__int128)a * b) >> 64), __mul64hi(a, b)));
    }
  }
};
struct op_mul24 { template <class E> static KK_FN E g(E a, E b) { return E(a * b); } };
struct op_mad24 { template <class E> static KK_FN E g(E a, E b, E c) { return E(a * b + c); } };
struct op_madhi { template <class E> static KK_FN E g(E a, E b, E c) { return E(op_mulhi::g<E>(a, b) + c); } };
struct op_madsat {
  // a * b + c, saturated once (the product may overflow before c brings
  // it back): exact in wider arithmetic; 64-bit types as a 128-bit pair
  // (high half from mulhi).
  template <class E> static KK_FN E g(E a, E b, E c) {
    if constexpr (sizeof(E) < 8 && E(-1) > E(0)) {
      const unsigned long long v = (unsigned long long)a * b + c;
      return v > (unsigned long long)metal::numeric_limits<E>::max() ? metal::numeric_limits<E>::max() : E(v);
    } else if constexpr (sizeof(E) < 8) {
      return sat<E>(sx(a) * sx(b) + sx(c));
    } else {
      typedef unsigned long long u64;
      const u64 lo = (u64)a * (u64)b;
      const u64 lo2 = lo + (u64)c;
      const u64 carry = lo2 < lo ? 1u : 0u;
      if constexpr (E(-1) > E(0)) {
        const u64 hi = (u64)op_mulhi::g<E>(a, b) + carry;
        return hi != 0 ? metal::numeric_limits<E>::max() : E(lo2);
      } else {
        const long long hi = (long long)op_mulhi::g<E>(a, b) + (c < 0 ? -1 : 0) + (long long)carry;
        const long long sgn = (long long)lo2 < 0 ? -1 : 0;
        if (hi == sgn) return E(lo2);
        return hi < 0 ? metal::numeric_limits<E>::min() : metal::numeric_limits<E>::max();
      }
    }
  }
};
struct op_rotate {
  template <class E> static KK_FN E g(E v, E i) {
    const int w = width<E>();
    unsigned long long u = ubits(v), m = w == 64 ? ~0ull : ((1ull << w) - 1);
    int s = int(ubits(i) % (unsigned long long)w);
    return E(s == 0 ? u : ((u << s) | (u >> (w - s))) & m);
  }
};
}  // namespace kk
KK_DECL_G1(popcount)
KK_DECL_G1(clz)
KK_DECL_G1(ctz)
KK_DECL_G1(reverse_bits)
KK_DECL_G2(absdiff)
KK_DECL_G2(hadd)
KK_DECL_G2(rhadd)
KK_DECL_G2(addsat)
KK_DECL_G2(subsat)
KK_DECL_G2(mulhi)
KK_DECL_G2(mul24)
KK_DECL_G3(mad24)
KK_DECL_G3(madhi)
KK_DECL_G3(madsat)
KK_DECL_G2(rotate)
namespace metal {
// extract_bits / insert_bits: `bits` bits from `offset` (signed types
// sign-extend the extracted field).
template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0>
KK_FN X extract_bits(const X& x, uint offset, uint bits) {
  typedef kk::elem_t<X> E;
  return X(kk::per<E, kk::vec_n<X>::value>([&](int i) {
    E v = kk::at<E>(x, i);
    if (bits == 0) return E(0);
    const int w = kk::width<E>();
    unsigned long long u = kk::ubits(v) >> offset;
    unsigned long long m = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
    u &= m;
    if (E(-1) < E(0) && bits < (uint)w && ((u >> (bits - 1)) & 1ull)) u |= ~m;
    return E(u);
  }));
}
template <class X, kk::enable_if_t<kk::mathy<X>::value, int> = 0>
KK_FN X insert_bits(const X& base, const X& insert, uint offset, uint bits) {
  typedef kk::elem_t<X> E;
  return X(kk::per<E, kk::vec_n<X>::value>([&](int i) {
    unsigned long long m = (bits >= 64 ? ~0ull : ((1ull << bits) - 1)) << offset;
    unsigned long long b = kk::ubits(kk::at<E>(base, i)), n = kk::ubits(kk::at<E>(insert, i)) << offset;
    return E((b & ~m) | (n & m));
  }));
}
namespace fast { using ::metal::extract_bits; using ::metal::insert_bits; }
namespace precise { using ::metal::extract_bits; using ::metal::insert_bits; }
}  // namespace metal
